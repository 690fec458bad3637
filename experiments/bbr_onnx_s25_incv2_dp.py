"""Inception v2 (the onnx package's light model, 371 ops): its ideals counted without
the count's work limit (59,862, under PICK_IDEALS = 60,000, which the ladder's count
with COUNT_MAX_WORK reports as "more"), and the DP over ideals' optimum at k = 4, 8, 16
to check the bounds of experiments/bbr_onnx_s25*.md against.
Usage: nice python experiments/bbr_onnx_s25_incv2_dp.py [k ...]"""

import sys
import time

import jaxplace as jp
from jaxplace.bench.bounds_onnx import onnx_graphs
from jaxplace.exact import solve_ideals
from jaxplace.exact.dp import count_problem_ideals

(_, g), = onnx_graphs(["light_inception_v2"])
for k in [int(x) for x in (sys.argv[1:] or ["4", "8", "16"])]:
    p = jp.Problem(g, k)
    t = time.perf_counter()
    limited = count_problem_ideals(p, 60_000)
    full = count_problem_ideals(p, 10**7, max_work=None)
    tc = time.perf_counter() - t
    t = time.perf_counter()
    res = solve_ideals(p, search=False, max_ideals=10**7)
    print(f"k={k}: ideals {full:,} (count with the work limit: {limited}), counted in "
          f"{tc:.1f} s; DP optimum {res.cost:.9g} in {time.perf_counter() - t:.1f} s",
          flush=True)
