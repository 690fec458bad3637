"""The forced-crossings bound (with chain cuts) against the DP optimum on small
REGAL-like graphs: never above it (a validity check where chains of overlapping tensor
hulls are common), and how close.

    nice python experiments/bbr_cross_regal_dp.py FIRST_SEED END_SEED N   # e.g. 0 8 22
"""
import sys
import time

import jaxplace as jp
from jaxplace.cost import simple_lower_bound
from jaxplace.exact import solve_ideals
from jaxplace.exact.bbr_cross import crossing_bound
from jaxplace.exact.bbr_model import build_model
from jaxplace.generators import generate

worst = 0
for seed in range(int(sys.argv[1]), int(sys.argv[2])):
    g = generate("regal", seed=seed, n=int(sys.argv[3]))
    for k in (2, 3, 4, 6, 8):
        p = jp.Problem(g, k)
        t = time.perf_counter()
        r = solve_ideals(p, search=False)
        cd = build_model(p).cross
        lb = crossing_bound(cd, simple_lower_bound(p), r.cost * 1.5)
        worst = max(worst, lb / r.cost)
        flag = "VIOLATION" if lb > r.cost * (1 + 1e-9) else ""
        print(seed, g.num_nodes, k, f"simple {simple_lower_bound(p) / r.cost:.4f} "
              f"cross {lb / r.cost:.4f} ({time.perf_counter() - t:.1f}s)", flag, flush=True)
print("worst", worst)
