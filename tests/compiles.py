"""Count XLA compilations per jitted function (the library's helper, re-exported for
the tests: `from compiles import count_compiles`)."""

from jaxplace.compile_cache import CompileCounts, count_compiles

__all__ = ["CompileCounts", "count_compiles"]
