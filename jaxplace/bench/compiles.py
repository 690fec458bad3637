"""Moved: compile counting is `jaxplace.compile_cache.count_compiles`. This name stays
until the tests that import it follow."""

from jaxplace.compile_cache import SEARCH_PROGRAMS, CompileCounts, count_compiles

__all__ = ["SEARCH_PROGRAMS", "CompileCounts", "count_compiles"]
