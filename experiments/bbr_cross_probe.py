"""Forced-crossing bound (jaxplace.exact.bbr_cross) on the REGAL graphs of
experiments/bbr.md, against the cached upper bounds: simple / crossing bound / UB.

    python experiments/bbr_cross_probe.py [count] [ks]
"""

import json
import math
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.exact.bbr_cross import cross_data, crossing_bound, crossings
from jaxplace.exact.bbr_model import build_model
from jaxplace.generators import regal_set

count = int(sys.argv[1]) if len(sys.argv) > 1 else 3
ks = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "4,8,16").split(",")]
cache = json.load(open("experiments/bounds_rungs_upper.json"))
for i, g in enumerate(regal_set(count, seed=0)):
    for k in ks:
        p = jp.Problem(g, k)
        key = f"search-64-seed0-{i}-n{g.num_nodes}-k{k}"
        ub = evaluate_partition(p, np.asarray(cache[key])).bottleneck if key in cache else math.nan
        t0 = time.perf_counter()
        m = build_model(p)
        cd = cross_data(m)
        t1 = time.perf_counter()
        L = simple_lower_bound(p)
        lb = crossing_bound(cd, L, ub)
        t2 = time.perf_counter()
        forced, q = crossings(cd, lb)
        print(f"g{i} n={g.num_nodes} k={k} groups={len(m.gsize)} hulls={len(cd.work)} "
              f"simple {L / ub:.4f} cross {lb / ub:.4f} forced {forced.mean():.2f} "
              f"mean q {q.mean():.2f} build {t1 - t0:.2f}s bisect {t2 - t1:.2f}s", flush=True)
