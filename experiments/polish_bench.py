"""Default search with and without the MIP polish on held-out REGAL-like graphs.

    python experiments/polish_bench.py --count 12 --seed 7 --k 4
"""
import argparse
import time

import numpy as np

import jaxplace as jp
from jaxplace.generators import regal_set

ap = argparse.ArgumentParser()
ap.add_argument("--count", type=int, default=12)
ap.add_argument("--seed", type=int, default=7)
ap.add_argument("--k", type=int, default=4)
args = ap.parse_args()
rows = []
for i, g in enumerate(regal_set(args.count, seed=args.seed)):
    p = jp.Problem(g, k=args.k)
    jp.search(p, seed=i, progress=False, polish=False, budget=300)  # compile outside the clock
    t = time.perf_counter()
    off = jp.search(p, seed=i, progress=False, polish=False)
    t_off = time.perf_counter() - t
    t = time.perf_counter()
    on = jp.search(p, seed=i, progress=False)
    t_on = time.perf_counter() - t
    lb = jp.simple_lower_bound(p)
    rows.append((on.cost / off.cost, t_on / t_off, off.cost / lb, on.cost / lb))
    print(f"| g{i} | {g.num_nodes} | {off.cost / lb:.4f} | {t_off:.1f} s | {on.cost / lb:.4f} "
          f"| {t_on:.1f} s | {on.cost / off.cost:.4f} |", flush=True)
r = np.array(rows)
gm = np.exp(np.log(r).mean(axis=0))
print(f"geometric means: polished/plain cost {gm[0]:.4f}, wall ratio {gm[1]:.2f}, "
      f"plain/LB {gm[2]:.4f}, polished/LB {gm[3]:.4f}; improved on "
      f"{int((r[:, 0] < 1 - 1e-9).sum())} of {len(r)}")
