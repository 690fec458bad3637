"""BB&R (jaxplace.exact.bbr) past the DP's size: seeded random DAGs of 40 and 60 nodes
(tests/strategies.small_graph: edges to the next three nodes of a permutation, work
1-10, tensors 0-4), k = 4, 8, 16, 30 s each, started from the best of 32 random
priority vectors. Prints the ideal count (the DP over ideals' size), the split BB&R
ends with, its bound and status. Run from the repository root:

    nice python experiments/bbr_mid.py
"""
import sys
import time

sys.path.insert(0, "tests")
from strategies import small_graph

import jaxplace as jp
from jaxplace.bounds import sample_partition
from jaxplace.exact.bbr import solve_bbr
from jaxplace.exact.dp import count_problem_ideals

for n in (40, 60):
    for seed in range(2):
        g = small_graph(seed, n)
        for k in (4, 8, 16):
            p = jp.Problem(g, k)
            cnt = count_problem_ideals(p, 2_000_000)
            a, ub = sample_partition(p, 32, seed=0)
            t = time.perf_counter()
            r = solve_bbr(p, partition=a, time_limit=30)
            print(f"n={n} seed={seed} k={k} ideals {cnt} sampledUB {ub:.2f} -> "
                  f"UB {r.cost:.2f} LB {r.lower_bound:.2f} "
                  f"ratio {r.cost / r.lower_bound:.4f} {r.status} "
                  f"{time.perf_counter() - t:.1f}s nodes {r.nodes}", flush=True)
