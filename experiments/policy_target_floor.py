"""How low can any method go below brkga-10000 on the policy bench's held-out set?
(issue 12's last target: policy+brkga-10000 <= 0.964 x brkga-10000, geometric mean.)

Per problem of `held_out_problems(COUNT, SEED)` (the bench's default mixed family),
next to the bench's own brkga-10000 and policy+brkga-10000 costs (BENCH_JSON, written
by `jaxplace bench policy --json`):
- best known: the lowest cost of every bench method and of the default search with
  BUDGET evaluations (no stagnation stop in its local search, BRKGA stopped after
  20,000 evaluations without gain), improved by the exact MIP's incumbent;
- certified lower bound: `jp.certify` with simple, bottleneck and exact (TIME s each,
  HiGHS 1 thread), started from the best known partition.
LB / brkga-10000 is a floor no method can go below on that problem; its geometric mean
per k is a floor on the target's ratio.

    python experiments/policy_target_floor.py BENCH_JSON SEED COUNT BUDGET TIME OUT_JSON
"""
import json
import math
import sys
import time
from collections import defaultdict

import jaxplace as jp
from jaxplace.bench.policy import held_out_problems

bench_json, seed, count, budget, tlim, out_json = sys.argv[1:7]
seed, count, budget, tlim = int(seed), int(count), int(budget), float(tlim)
rows = json.load(open(bench_json))
by = defaultdict(dict)
for r in rows:
    by[r["index"]][r["method"]] = r

out = []
for i, p in enumerate(held_out_problems(count, seed)):
    b = by[i]
    L = b["brkga-10000"]["cost"] / b["brkga-10000"]["ratio"]
    t = time.perf_counter()
    res = jp.search(p, budget=budget, seed=100 + i, progress=False, patience=10**9,
                    brkga_patience=20000)
    t_search = time.perf_counter() - t
    best_bench = min(b.values(), key=lambda r: r["cost"])
    partition = res.partition
    best = res.cost
    cert = jp.certify(p, partition, methods=("simple", "bottleneck", "exact"),
                      time_limit=tlim)
    best = min(best, cert.upper_bound, best_bench["cost"])
    row = dict(i=i, n=p.n, k=p.k, L=L, brkga10k=b["brkga-10000"]["cost"],
               pb10k=b["policy+brkga-10000"]["cost"], default=res.cost,
               best=best, lb=cert.lower_bound, lb_method=cert.method,
               optimal=bool(cert.lower_bound >= best * (1 - 1e-6)),
               t_search=t_search, t_cert=time.perf_counter() - t - t_search)
    out.append(row)
    print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()},
          flush=True)
    json.dump(out, open(out_json, "w"))


def gm(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


print("\n| per k, geometric mean of x / brkga-10000 | "
      + " | ".join(f"k={k}" for k in sorted({r['k'] for r in out})) + " |")
print("|---" * (1 + len({r['k'] for r in out})) + "|")
for name, key in [("policy+brkga-10000", "pb10k"), (f"default search, {budget}", "default"),
                  ("best known", "best"), ("certified lower bound (floor)", "lb")]:
    cells = [gm([r[key] / r["brkga10k"] for r in out if r["k"] == k])
             for k in sorted({r["k"] for r in out})]
    print(f"| {name} | " + " | ".join(f"{c:.4f}" for c in cells) + " |")
cells = [f"{sum(r['optimal'] for r in out if r['k'] == k)}/"
         f"{sum(1 for r in out if r['k'] == k)}" for k in sorted({r['k'] for r in out})]
print("| proven optimal | " + " | ".join(cells) + " |")
