"""default+policy first, then default (compile order reversed), k in {8, 16}."""
import json
import sys

from jaxplace.bench.policy import held_out_problems, run_method

probs = held_out_problems(int(sys.argv[1]), seed=2, ks=(8, 16), regal_fraction=float(sys.argv[2]))
rows = []
for i, p in enumerate(probs):
    for m in ("default+policy", "default"):
        c, e, w = run_method(p, m, None, 2)
        rows.append(dict(index=i, n=p.n, k=p.k, method=m, cost=c, evaluations=e, wall=w))
    print(i, p.n, p.k, rows[-2]["cost"] / rows[-1]["cost"], rows[-2]["wall"], rows[-1]["wall"], flush=True)
json.dump(rows, open(sys.argv[3], "w"))
