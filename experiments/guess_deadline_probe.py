"""bottleneck-guess under a time limit: wall, bound and per-solve status (k = 16).

Usage: python experiments/guess_deadline_probe.py   (figures in time_limit_ends.md)
"""
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds.guess import guess_bound


def random_problem(seed, n, k, p=0.3, window=6, **kw):
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + window)) if rng.random() < p]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n), rng.uniform(0, 5, n))
    return jp.Problem(g, k, **kw)


CASES = [(60, 16, 1.0, 1), (60, 16, 1.0, 2), (120, 16, 2.0, 1), (120, 16, 2.0, 2),
         (60, 16, float("inf"), 1)]  # the last takes ~4 minutes

for n, k, T, w in CASES:
    p = random_problem(1, n, k)
    t = time.perf_counter()
    b, per, build = guess_bound(p, time_limit=T, workers=w)
    el = time.perf_counter() - t
    print(n, k, T, w, f"{el:.2f}s bound={b:.3f} build={build:.2f}",
          [(r.status[:4], round(r.bound, 2)) for r in per], [round(r.time, 2) for r in per])
