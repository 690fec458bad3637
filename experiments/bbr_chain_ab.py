"""A/B of the chain cuts in the whole-groups independent set (bbr_cross): the
forced-crossings bound with and without them, on `regal_set(3, seed=0)` x k, as a
fraction of the cached upper bound of `bench bounds` (experiments/bounds_rungs_upper.json).

    nice python experiments/bbr_chain_ab.py [ks, default 4,8,16]
"""

import dataclasses
import json
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.exact.bbr_cross import crossing_bound
from jaxplace.exact.bbr_model import build_model
from jaxplace.generators import regal_set

ks = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "4,8,16").split(",")]
cache = json.load(open("experiments/bounds_rungs_upper.json"))
gm = {}
for k in ks:
    for gi, g in enumerate(regal_set(3, seed=0)):
        p = jp.Problem(g, k)
        ub = evaluate_partition(
            p, np.asarray(cache[f"search-64-seed0-{gi}-n{g.num_nodes}-k{k}"])).bottleneck
        cd = build_model(p).cross
        L = simple_lower_bound(p)
        row = []
        for label, data in (("pairs+triples", dataclasses.replace(cd, gdn=None)),
                            ("+chains", cd)):
            t0 = time.perf_counter()
            b = crossing_bound(data, L, ub)
            row.append((label, b / ub, time.perf_counter() - t0))
            gm.setdefault((k, label), []).append(b / ub)
        print(f"g{gi} n={g.num_nodes} k={k}: " + "  ".join(
            f"{lab} {f:.4f} ({t:.1f}s)" for lab, f, t in row), flush=True)
for (k, label), xs in gm.items():
    print(f"k={k} {label}: gmean {float(np.exp(np.mean(np.log(xs)))):.4f}")
