"""Warm wall of default vs default+policy: each graph searched once per method to
compile, then again (timed), alternating the order."""
import json
import sys

from jaxplace.bench.policy import held_out_problems, run_method

probs = held_out_problems(int(sys.argv[1]), seed=3, ks=(8, 16), regal_fraction=1.0)
rows = []
for i, p in enumerate(probs):
    ms = ("default", "default+policy") if i % 2 else ("default+policy", "default")
    for m in ms:
        run_method(p, m, None, 3)
    for m in ms:
        c, e, w = run_method(p, m, None, 3)
        rows.append(dict(index=i, n=p.n, k=p.k, method=m, cost=c, evaluations=e, wall=w))
    r = {x["method"]: x for x in rows[-2:]}
    print(i, p.n, p.k, "cost ratio", round(r["default+policy"]["cost"] / r["default"]["cost"], 4),
          "warm wall", round(r["default+policy"]["wall"], 2), round(r["default"]["wall"], 2), flush=True)
json.dump(rows, open(sys.argv[2], "w"))
