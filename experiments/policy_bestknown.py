"""Best known cost per held-out REGAL-like problem (issue 12): the default search with
a budget of BUDGET evaluations, no stagnation stop in the local search, BRKGA stopped
after 20,000 evaluations without gain, the policy on at k >= 8.

    python experiments/policy_bestknown.py BUDGET [COUNT]     # rows to /tmp/policy_best_BUDGET.json
"""
import json
import sys
import time

import jaxplace as jp
from jaxplace.bench.policy import held_out_problems

T = float(sys.argv[1]); count = int(sys.argv[2]) if len(sys.argv) > 2 else 12
out = []
for i, p in enumerate(held_out_problems(count, 0, regal_fraction=1.0)):
    t = time.perf_counter()
    r = jp.search(p, budget=int(T), seed=100 + i, progress=False,
                  use_policy=p.k >= 8, patience=10**9, brkga_patience=20000)
    out.append(dict(i=i, n=p.n, k=p.k, cost=r.cost, evals=r.evaluations,
                    wall=time.perf_counter() - t))
    print(out[-1], flush=True)
json.dump(out, open(f"/tmp/policy_best_{int(T)}.json", "w"))
