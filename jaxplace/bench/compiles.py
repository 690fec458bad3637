"""Count XLA compilations per jitted function, from JAX's compile log records.

`count_compiles()` yields a `CompileCounts` (a Counter {jitted function name:
programs lowered and compiled}) filled while active. JAX logs "Compiling jit(f)" for
every program it builds, whether XLA then compiles it or reads it from the persistent
compilation cache; the cache hits are counted apart in `counts.cache_hits`, so
`counts.compiled()` is what XLA really compiled.

    from jaxplace.bench.compiles import count_compiles, SEARCH_PROGRAMS
    with count_compiles() as counts:
        jp.search(problem)
    counts["_loop_chunk"], counts.cache_hits, counts.compiled(SEARCH_PROGRAMS)
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from contextlib import contextmanager

_COMPILING = re.compile(r"Compiling jit\(([^)]+)\)")
_HIT = re.compile(r"Persistent compilation cache hit for 'jit_([^']+)'")

#: The large programs of a search (each embeds the decoder: seconds of XLA compile).
SEARCH_PROGRAMS = ("_loop_chunk", "score_chunk", "decode_chunk", "_many_chunk")


class CompileCounts(Counter):
    """{jitted function name: programs built}; `cache_hits` the same for programs read
    from the persistent compilation cache instead of compiled."""

    def __init__(self):
        super().__init__()
        self.cache_hits: Counter = Counter()

    def compiled(self, names=None) -> int:
        """Programs XLA compiled (built minus cache hits), over `names` (None: all)."""
        keys = self.keys() if names is None else names
        return sum(max(self[k] - self.cache_hits[k], 0) for k in keys)

    def built(self, names=None) -> int:
        """Programs built, compiled or read from the cache, over `names` (None: all)."""
        keys = self.keys() if names is None else names
        return sum(self[k] for k in keys)


@contextmanager
def count_compiles():
    """Yields a `CompileCounts` filled while active (turns on `jax.log_compiles`)."""
    import jax

    counts = CompileCounts()

    class Handler(logging.Handler):
        def emit(self, record):
            msg = record.getMessage()
            if m := _COMPILING.match(msg):
                counts[m.group(1)] += 1
            elif m := _HIT.match(msg):
                counts.cache_hits[m.group(1)] += 1

    handler = Handler(level=logging.DEBUG)
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    # the global setting, not the `jax.log_compiles()` context: that one is
    # thread-local, and search_many compiles on worker threads
    before = jax.config.jax_log_compiles
    jax.config.update("jax_log_compiles", True)
    try:
        yield counts
    finally:
        jax.config.update("jax_log_compiles", before)
        logger.removeHandler(handler)


__all__ = ["SEARCH_PROGRAMS", "CompileCounts", "count_compiles"]
