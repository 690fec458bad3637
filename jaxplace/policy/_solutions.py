"""The expert-solution file of a training pool: reading it and checking it covers the pool.

`experts` writes it (one `jp.search` run per pool problem); `train` starts its
self-imitation memory from it. It holds `x` (pool, max n) float32 priorities (0 past each
problem's n), `cost` (pool,) float64, `n` (pool,) int64 and `done` (pool,) bool.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError


def read_solutions(path) -> dict:
    """The arrays of the solution file (or part) at `path`."""
    try:
        with np.load(path) as f:
            return {k: f[k] for k in ("x", "cost", "n", "done")}
    except (OSError, KeyError, ValueError) as e:
        raise JaxplaceError(f"cannot read expert solutions ({e})", source=str(path),
                            field="expert") from None


def load_solutions(path, count: int) -> dict:
    """The solution file at `path`, checked to cover a pool of `count` problems."""
    d = read_solutions(path)
    if len(d["cost"]) != count or not d["done"].all():
        raise JaxplaceError(f"has {int(d['done'].sum())} solutions of {len(d['cost'])} "
                            f"problems, the recipe's pool has {count}", source=str(path),
                            field="expert")
    return d
