"""Where the gap sits on the bench's REGAL pairs (issue 53, session 24): per best plan
known, the simple bound W/K, the plan's mean block cost (W + transfers paid)/K, its
bottleneck, and how much of the bottleneck is work vs transfers.

    python experiments/bounds_gap_s24.py

A sum-type bound (K T >= W + transfers every split must pay: `cross`) can reach at
most the least mean block cost over all splits of cost <= T; the plans' mean tells how
far that is from the plan's bottleneck (imbalance).
"""

import glob
import json

import numpy as np

import jaxplace as jp
from jaxplace.cost import partition_costs
from jaxplace.generators import regal_set

graphs = regal_set(3, seed=0)
cache = json.load(open("experiments/bounds_rungs_upper.json"))
best = {}
for path in glob.glob("experiments/bounds_floor_runs/*.jsonl"):
    for line in open(path):
        d = json.loads(line)
        if "best_assignment" in d:
            key = (d["graph"], d["k"])
            if key not in best or d["best_ub"] < best[key][0]:
                best[key] = (d["best_ub"], np.asarray(d["best_assignment"], np.int64))
print("| pair | UB | W/K / UB | mean cost / UB | min block / UB | work share of bottleneck block | transfers / W |")
print("|---|---|---|---|---|---|---|")
for gi, g in enumerate(graphs):
    for k in (4, 8, 16):
        p = jp.Problem(g, k)
        key = f"search-64-seed0-{gi}-n{p.n}-k{k}"
        a = np.asarray(cache[key], np.int64)
        if (gi, k) in best and best[(gi, k)][0] < partition_costs(p, a).bottleneck:
            a = best[(gi, k)][1]
        c = partition_costs(p, a)
        ub = c.bottleneck
        W = g.work.sum()
        tr = (c.io_in + c.io_out).sum()
        j = int(np.argmax(c.total))
        print(f"| g{gi} k={k} | {ub:.1f} | {W / k / ub:.4f} | {c.total.sum() / k / ub:.4f} | "
              f"{c.total[c.total > 0].min() / ub:.4f} | {c.work[j] / c.total[j]:.3f} | {tr / W:.3f} |")
