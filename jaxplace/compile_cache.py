"""The persistent XLA compilation cache, for library users and the CLI alike.

The decoder and the search loop compile once per padded shape (seconds each on a
CPU). With the cache on, compiled programs are kept on disk and a later process
reads them back instead of compiling: a second run on a graph of a similar size
starts at once. `enable_compile_cache()` is called when the decoder is first
imported (so `import jaxplace` stays light and does not touch JAX) and by the CLI.

Where: `JAXPLACE_CACHE_DIR`, default ~/.cache/jaxplace/xla; set it to the empty
string to turn the cache off. A cache directory the user already gave JAX
(`JAX_COMPILATION_CACHE_DIR` or `jax.config.update("jax_compilation_cache_dir", ...)`)
is left alone.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections import Counter
from contextlib import contextmanager

#: The environment variable naming the cache folder ("" turns the cache off).
ENV = "JAXPLACE_CACHE_DIR"
#: Programs compiling faster than this are not written to the cache.
MIN_COMPILE_SECS = 0.5


def cache_path() -> str | None:
    """The folder the cache goes to, or None when `JAXPLACE_CACHE_DIR` is empty."""
    path = os.environ.get(ENV)
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "jaxplace", "xla")
    return path or None


def enable_compile_cache() -> str | None:
    """Point JAX's persistent compilation cache at `cache_path()` (idempotent).

    Before JAX is imported this only sets JAX's environment variables (read at its
    import); afterwards it updates `jax.config`. Returns the folder in use, or None
    when the cache is off.
    """
    path = cache_path()
    if path is None:
        return None
    if "jax" not in sys.modules:
        os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", path)
        os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                              str(MIN_COMPILE_SECS))
        return os.environ["JAX_COMPILATION_CACHE_DIR"]
    import jax

    current = jax.config.jax_compilation_cache_dir
    if current:
        return current
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECS)
    _reset_if_initialized()
    return path


def plain_python_env(env: dict | None = None) -> dict:
    """`env` (default os.environ) without the host device count the CLI adds to
    XLA_FLAGS: the environment a plain `python` process using the library has. JAX's
    cache keys hash XLA_FLAGS, so programs compiled under the CLI's flags are not
    found by such a process, and the other way round."""
    env = dict(os.environ if env is None else env)
    flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "",
                   env.get("XLA_FLAGS", "")).strip()
    if flags:
        env["XLA_FLAGS"] = flags
    else:
        env.pop("XLA_FLAGS", None)
    return env


def _reset_if_initialized() -> None:
    """JAX decides once, at its first compile, whether the cache is used: when that
    happened before the folder was set, let it decide again."""
    try:
        from jax._src import compilation_cache as cc

        if getattr(cc, "_cache_initialized", False) and getattr(cc, "_cache", None) is None:
            cc.reset_cache()
    except Exception:  # private API: the cache then starts with the next process
        pass


#: JAX's log lines for a program built (compiled or read back) and for a cache hit.
_COMPILING = re.compile(r"Compiling jit\(([^)]+)\)")
_HIT = re.compile(r"Persistent compilation cache hit for 'jit_([^']+)'")

#: The large programs of a search (each embeds the decoder: seconds of XLA compile).
SEARCH_PROGRAMS = ("_loop_chunk", "score_chunk", "decode_chunk", "_many_chunk")


class CompileCounts(Counter):
    """{jitted function name: programs built}; `cache_hits` the same for programs read
    from the persistent compilation cache instead of compiled.

    JAX logs "Compiling jit(f)" for every program it builds, whether XLA then compiles
    it or reads it from the persistent cache, so `compiled()` (built minus cache hits)
    is what XLA really compiled."""

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
    """Yields a `CompileCounts` filled while active (turns on `jax_log_compiles`):

        with count_compiles() as counts:
            jp.search(problem)
        counts["_loop_chunk"], counts.cache_hits, counts.compiled(SEARCH_PROGRAMS)
    """
    import jax  # heavy: only when counting

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


__all__ = ["ENV", "SEARCH_PROGRAMS", "CompileCounts", "cache_path", "count_compiles",
           "enable_compile_cache", "plain_python_env"]
