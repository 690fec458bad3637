"""Count XLA compilations per jitted function, from `jax.log_compiles` records."""

from __future__ import annotations

import logging
import re
from collections import Counter
from contextlib import contextmanager

import jax

_PATTERN = re.compile(r"Compiling jit\(([^)]+)\)")


@contextmanager
def count_compiles():
    """Yields a Counter {jitted function name: compilations} filled while active."""
    counts: Counter = Counter()

    class Handler(logging.Handler):
        def emit(self, record):
            m = _PATTERN.match(record.getMessage())
            if m:
                counts[m.group(1)] += 1

    handler = Handler(level=logging.DEBUG)
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            yield counts
    finally:
        logger.removeHandler(handler)
