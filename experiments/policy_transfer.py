"""Policy transfer: a policy on the NeurIPS workloads and on 1000-node generated graphs.

python experiments/policy_transfer.py [METHODS] [OUT.json] [POLICY]   # METHODS comma-separated
(POLICY: a policy directory; default: the shipped one for each problem,
`jaxplace.policy.default_policy_name`; ONLY=regal in the environment
keeps the problems whose name starts with it)
"""

import glob
import json
import os
import sys

import numpy as np

import jaxplace as jp
from jaxplace.bench.workloads import default_folder  # $JAXPLACE_DATA/dnn-partitioning
from jaxplace.bench.policy import run_method
from jaxplace.generators import generate
from jaxplace.policy.inference import load_policy

pol = load_policy(sys.argv[3]) if len(sys.argv) > 3 else None
methods = (
    sys.argv[1].split(",")
    if len(sys.argv) > 1
    else ["policy-greedy", "policy-best100", "random-100", "random-1000", "brkga-1000"]
)
probs = []
# the generated 1000-node graphs first: the NeurIPS workloads tie at every method
for seed, fam in enumerate(["regal", "transformer"]):
    g = generate(fam, seed=seed, n=1000) if fam == "regal" else generate(fam, seed=seed, layers=70)
    for k in (4, 8, 16) if fam == "regal" else (8, 16):
        probs.append((f"{fam}-{g.num_nodes}-k{k}", jp.Problem(g, k)))
for f in sorted(glob.glob(f"{default_folder()}/throughput/*/*.json")):
    p = jp.load_problem(f)
    probs.append((f.split("/")[-1].replace(".json", ""), p))
probs = [(name, p) for name, p in probs if name.startswith(os.environ.get("ONLY", ""))]
print("problem n k cpus " + " ".join(methods), flush=True)
rows, log = [], []
for name, p in probs:
    lb = jp.simple_lower_bound(p)
    out = []
    for m in methods:
        try:
            cost, ev, wall = run_method(p, m, pol, 0)
            out.append(cost / lb)
            log.append(
                {
                    "problem": name,
                    "n": p.n,
                    "k": p.k,
                    "method": m,
                    "cost": cost,
                    "ratio": cost / lb,
                    "evaluations": ev,
                    "wall": wall,
                }
            )
        except Exception as e:
            out.append(float("nan"))
            print("  ", m, type(e).__name__, str(e)[:100])
    rows.append(out)
    print(name, p.n, p.k, p.cpus, " ".join(f"{r:.4f}" for r in out), flush=True)
R = np.array(rows)
print(
    "geomean", " ".join(f"{np.exp(np.nanmean(np.log(R[:, j]))):.4f}" for j in range(len(methods)))
)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        json.dump(log, f, indent=1)
