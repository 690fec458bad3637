"""Greedy / random-100 on the 84 mixed held-out problems split by family (REGAL-like,
DNN-like) and k, and the policy's mean per-node std on each family
(experiments/policy_ties.md).

    python experiments/policy_family.py PREFIX [POLICY]

PREFIX names the logs of a policy's greedy order: runs/bench/PREFIX_mixed12.log,
_mixed36.log and _mixed36_s2.log (the sets of experiments/policy_greedy.md); random-100 and
gnn-v2's greedy come from gnn-v2's logs of the same problems. POLICY (a directory)
adds its mean per-node std next to gnn-v2's.
"""

import collections
import os
import sys

import numpy as np

from jaxplace.bench.policy import held_out_problems
from jaxplace.policy import load_policy
from jaxplace.policy.inference import node_distribution

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_pooled import parse  # noqa: E402

R = "runs/bench/"
SETS = ((12, 0, "v2_full_mixed", "mixed12"), (36, 1, "v2_mixed36", "mixed36"),
        (36, 2, "v2_mixed36_s2", "mixed36_s2"))


def _family(p):
    return "REGAL-like" if p.graph.meta.get("generator") == "regal" else "DNN-like"


def main(args):
    if not args:
        sys.exit(__doc__)
    prefix = args[0]
    out = collections.defaultdict(list)
    problems = []
    for count, seed, base, name in SETS:
        probs = held_out_problems(count, seed)
        problems += probs
        for p, (_, k, rb), (_, _, rn) in zip(probs, parse(R + base + ".log"),
                                             parse(f"{R}{prefix}_{name}.log"), strict=True):
            out[(_family(p), k)].append((rb["policy-greedy"] / rb["random-100"],
                                         rn["policy-greedy"] / rb["random-100"]))
    print(f"greedy / random-100: gnn-v2 | {prefix}")
    for key in sorted(out):
        v = np.array(out[key])
        cells = [f"{np.exp(np.log(v[:, j]).mean()):.4f} ({(v[:, j] < 1 - 1e-9).sum()} / "
                 f"{(v[:, j] > 1 + 1e-9).sum()})" for j in (0, 1)]
        print(f"{key[0]} k={key[1]}: {len(v)} problems, {cells[0]} | {cells[1]}")
    for path in (None, *args[1:]):
        pol, std = load_policy(path), collections.defaultdict(list)
        for p in problems:
            std[_family(p)].append(float(np.exp(node_distribution(pol, p)["log_std"]).mean()))
        print(path or "gnn-v2", "mean per-node std, median (min-max):", ", ".join(
            f"{f} {np.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for f, v in sorted(std.items())))


if __name__ == "__main__":
    main(sys.argv[1:])
