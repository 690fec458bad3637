"""Where search_many's wall goes on the regal-time suite (one process: cold, then warm).

    python experiments/many_profile.py [--budget B] [--polish auto|on|off] [--workers W]
"""
import argparse
import time

import numpy as np

t_start = time.perf_counter()
import jaxplace as jp  # noqa: E402
from jaxplace.bench.search_time import instances  # noqa: E402
from jaxplace.search.many import search_many  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--budget", type=int, default=None)
ap.add_argument("--polish", default="auto")
ap.add_argument("--workers", type=int, default=None)
ap.add_argument("--count", type=int, default=30)
ap.add_argument("--passes", type=int, default=2)
ap.add_argument("--cpp", default=None, help="bench JSON with cpp-brkga-10000 costs")
a = ap.parse_args()
probs = [jp.Problem(g, k) for _, g, k in instances(a.count, [4, 8, 16], 0)]
pol = {"auto": None, "on": True, "off": False}[a.polish]
cpp = None
if a.cpp:
    import json
    cpp = np.array(json.load(open(a.cpp))["cpp-brkga-10000"]["costs"][:a.count])
for p in range(a.passes):
    t0 = time.perf_counter()
    rs = search_many(probs, budget=a.budget, polish=pol, workers=a.workers)
    wall = time.perf_counter() - t0
    polish = sum(r.info.get("polish", {}).get("time", 0.0) for r in rs)
    ev = np.mean([r.evaluations for r in rs])
    by_bucket = {}
    for r in rs:
        b = r.info.get("bucket")
        if b:
            key = (b["N"], b["K"], b["window"], b["problems"])
            by_bucket[key] = max(by_bucket.get(key, 0), r.wall_time)
    costs = np.array([r.cost for r in rs])
    lb = np.array([r.lower_bound for r in rs])
    line = f"pass {p}: wall {wall:.1f} s, polish {polish:.1f} s (summed), mean evals {ev:.0f}, cost/LB {np.exp(np.mean(np.log(costs / lb))):.4f}"
    if cpp is not None:
        line += f", cost/C++ {np.exp(np.mean(np.log(costs / cpp))):.4f}"
    print(line, flush=True)
    print("  bucket walls (N, K, window, problems): " + ", ".join(
        f"{k}: {v:.1f}" for k, v in sorted(by_bucket.items(), key=lambda kv: -kv[1])), flush=True)
print(f"process total {time.perf_counter() - t_start:.1f} s")
