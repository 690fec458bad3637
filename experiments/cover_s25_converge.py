"""Does the cover LP refute a z above the cross bound if given the time? (session 25)

One `refute_z` at z = FRAC x cached UB (MIP pricing, local search, smoothing 0.5),
SECONDS long, pool seeded as `cover_bound` does; with POLISH, then
`weighted_bottleneck` of the best duals (valid for any duals) for POLISH seconds.

    nice python experiments/cover_s25_converge.py GRAPH K FRAC SECONDS [POLISH]
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds import cover as C
from jaxplace.cost import evaluate_partition, throughput_lower_bound
from jaxplace.generators import regal_set


def main():
    gi, k, frac, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(
        sys.argv[4])
    problem = jp.Problem(regal_set(3, seed=0)[gi], k)
    cache = json.load(open("experiments/bounds_rungs_upper.json"))
    a = np.asarray(cache[f"search-64-seed0-{gi}-n{problem.n}-k{k}"], dtype=np.int64)
    z = frac * float(evaluate_partition(problem, a).cost)
    pool = C._Pool(problem)
    pool.add(np.stack([a == b for b in np.unique(a)]))
    for o in C._orders(problem, a, 4, 0):
        pool.add(C.segment_sets(problem, o, z))
    pricer = C._Pricer(problem, max(throughput_lower_bound(problem), 1e-12))
    t0 = time.perf_counter()
    r = C.refute_z(problem, z, pool, pricer, t0 + seconds, smoothing=0.5,
                   local=C._LocalSearch(problem))
    print(f"graph {gi} k={k} z={frac:.4f} UB: refuted {r.refuted}, farley {r.farley:.3f} "
          f"(k = {k}), {r.iterations} master solves, {r.pricing} pricing MIPs, "
          f"{len(pool.sets)} columns, {time.perf_counter() - t0:.1f} s", flush=True)
    if r.pi is not None and len(sys.argv) > 5:  # the weighted bottleneck of its duals
        t1 = time.perf_counter()
        wb = C.weighted_bottleneck(problem, r.pi, time_limit=float(sys.argv[5]))
        print(f"  weighted bottleneck of the best duals: {wb / (z / frac):.4f} UB "
              f"({time.perf_counter() - t1:.1f} s)")


if __name__ == "__main__":
    main()
