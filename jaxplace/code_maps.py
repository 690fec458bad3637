"""Keep a long process under the kernel's limit on memory mappings.

XLA's CPU backend maps the machine code of every compiled program into memory regions
of its own: 500-1,000 entries of /proc/self/maps per search program (measured: 18
search programs took a process from 142 to 13,480 entries). Linux allows a process
`vm.max_map_count` mappings (65,530 by default); past it LLVM fails with "Cannot
allocate memory" and the process segfaults. A process that searches many graphs of
different padded shapes (a notebook, a bench of many methods over many graphs) used to
reach it after about 80 programs.

`jax.clear_caches()` drops the compiled programs and their mappings (measured: 4,741
entries back to 560). `release_compiled_code` does that when the process has used
more than a share of its limit, between searches: a later search of a released shape
compiles again, or reads it back from the persistent compilation cache.
"""

from __future__ import annotations

import gc
import sys

#: Release compiled programs once the process holds more than this share of its
#: mapping limit. A search compiles at most a few programs of ~1,000 mappings, so 40%
#: of 65,530 is ample room; the test suite's busiest worker peaks near 35,000 (53%),
#: which this share leaves alone (a release there would only cost recompiles).
RELEASE_SHARE = 0.6
MAPS = "/proc/self/maps"
LIMIT = "/proc/sys/vm/max_map_count"


def map_count() -> tuple[int, int] | None:
    """(mappings in use, the process limit), or None where the kernel does not say
    (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(LIMIT) as f:
            limit = int(f.read().split()[0])
        with open(MAPS, "rb") as f:
            used = sum(1 for _ in f)
    except (OSError, ValueError, IndexError):
        return None
    return used, limit


def release_compiled_code(share: float | None = None) -> bool:
    """Drop JAX's compiled programs when the process uses more than `share` (default
    RELEASE_SHARE) of its mapping limit; True when it did. Cheap otherwise (reads
    /proc/self/maps: about a millisecond per thousand mappings)."""
    share = RELEASE_SHARE if share is None else share
    counts = map_count()
    if counts is None or counts[0] <= share * counts[1]:
        return False
    if "jax" not in sys.modules:  # nothing of ours compiled
        return False
    import jax

    jax.clear_caches()
    gc.collect()
    return True


__all__ = ["RELEASE_SHARE", "map_count", "release_compiled_code"]
