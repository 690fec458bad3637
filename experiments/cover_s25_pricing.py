"""The cover's pricing problem alone (session 25): branch and bound (`ConvexPricer`)
against the HiGHS pricing MIP on the same duals.

For each REGAL pair (graph, k) of `bench bounds` and z = FRAC x the cached UB, the duals
pi are those of the first restricted master (the cached plan's blocks and the maximal
segments of 4 random topological orders, artificial columns at cost 10). Then, with
target = sum(pi) / k (a column above it blocks the refutation of z):

- mip: `_Pricer.solve` (stops at a set above target or a dual bound below it);
- bnb-first: `ConvexPricer.search` at floor target, stopped at its first set;
- bnb-prove: the same search not stopped by sets (improving), for SECONDS: its theta
  (the heap's top bound) is the valid upper bound it proves.

    nice python experiments/cover_s25_pricing.py [FRAC] [SECONDS] [pairs g:k,...]
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds import cover as C
from jaxplace.bounds.cover_pricing import ConvexPricer
from jaxplace.cost import evaluate_partition, throughput_lower_bound
from jaxplace.generators import regal_set


def duals(problem, a, z):
    pool = C._Pool(problem)
    pool.add(np.stack([a == b for b in np.unique(a)]))
    for o in C._orders(problem, a, 4, 0):
        pool.add(C.segment_sets(problem, o, z))
    m = C._Master(problem.n)
    m.add(pool.sets[pool.costs <= z])
    _, pi = m.solve()
    return np.minimum(pi, C.ART_COST)


def main():
    frac = float(sys.argv[1]) if len(sys.argv) > 1 else 0.8
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
    pairs = ([tuple(map(int, p.split(":"))) for p in sys.argv[3].split(",")]
             if len(sys.argv) > 3 else [(g, k) for g in range(3) for k in (4, 8, 16)])
    graphs = regal_set(3, seed=0)
    cache = json.load(open("experiments/bounds_rungs_upper.json"))
    print("| pair | n | units | target | mip s | mip best | mip theta | bnb first s | "
          "bnb first | bnb theta (1st) | bnb best | bnb theta | bnb expansions | ended |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for gi, k in pairs:
        problem = jp.Problem(graphs[gi], k)
        a = np.asarray(cache[f"search-64-seed0-{gi}-n{problem.n}-k{k}"], dtype=np.int64)
        z = frac * float(evaluate_partition(problem, a).cost)
        pi = duals(problem, a, z)
        target = float(pi.sum()) / k
        mip = C._Pricer(problem, max(throughput_lower_bound(problem), 1e-12))
        t = time.perf_counter()
        m_theta, m_found = mip.solve(pi, z, target, seconds)
        m_t = time.perf_counter() - t
        m_best = max([float(pi[s].sum()) for s in m_found], default=0.0)
        bnb = ConvexPricer(problem)
        t = time.perf_counter()
        f_theta, f_found, _, _ = bnb.search(pi, z, target, seconds, max_sets=1)
        f_t = time.perf_counter() - t
        p_theta, p_found, nodes, ended = bnb.search(pi, z, target, seconds,
                                                    max_sets=1 << 30)
        f_best = f_found[-1][1] if f_found else 0.0
        p_best = p_found[-1][1] if p_found else 0.0
        print(f"| g{gi} k={k} | {problem.n} | {bnb.U} | {target:.3f} | {m_t:.2f} | "
              f"{m_best:.3f} | {m_theta:.3f} | {f_t:.2f} | {f_best:.3f} | {f_theta:.3f} | "
              f"{p_best:.3f} | {p_theta:.3f} | {nodes} | {ended} |", flush=True)


if __name__ == "__main__":
    main()
