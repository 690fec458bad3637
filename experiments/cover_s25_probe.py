"""Probe of the cover bound's pricing (session 25): one REGAL pair, cover_bound with the
branch-and-bound pricing ("bnb") or the HiGHS pricing MIP ("mip"), from the cached UB.

    nice python experiments/cover_s25_probe.py GRAPH K SECONDS [bnb|mip] [lo_frac]

Prints each z test (z / UB, refuted, master solves, pricings, seconds) and the bound.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds.cover import CoverConfig, cover_bound
from jaxplace.cost import evaluate_partition, throughput_lower_bound
from jaxplace.generators import regal_set


def main():
    gi, k, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    pricing = sys.argv[4] if len(sys.argv) > 4 else "bnb"
    g = regal_set(3, seed=0)[gi]
    problem = jp.Problem(g, k)
    cache = json.load(open("experiments/bounds_rungs_upper.json"))
    a = np.asarray(cache[f"search-64-seed0-{gi}-n{problem.n}-k{k}"], dtype=np.int64)
    ub = float(evaluate_partition(problem, a).cost)
    lo = throughput_lower_bound(problem)
    if len(sys.argv) > 5:
        lo = max(lo, float(sys.argv[5]) * ub)
    t0 = time.perf_counter()
    marks = []

    def progress(t, hi, lo_):
        marks.append((t, lo_ / ub))

    bound, tests = cover_bound(problem, lo, ub, assignment=a, time_limit=limit,
                               config=CoverConfig(pricing=pricing), progress=progress)
    for t, (m) in zip(tests, marks, strict=False):
        print(f"z {t.z / ub:.4f} refuted {t.refuted} it {t.iterations} pricing {t.pricing} "
              f"farley {t.farley:.3f} polished {t.polished / ub:.4f} at {m[0]:.1f}s "
              f"lo {m[1]:.4f}")
    print(f"graph {gi} n={problem.n} k={k} {pricing}: cover {bound / ub:.4f} of UB "
          f"(simple {throughput_lower_bound(problem) / ub:.4f}) in "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
