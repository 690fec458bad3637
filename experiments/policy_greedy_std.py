"""Where the greedy order wins or loses against random-100, split by how sure the
policy is (its mean per-node std) on the mixed held-out sets (experiments/policy_greedy.md).

    python experiments/policy_greedy_std.py [POLICY] [COUNT:SEED:LOG ...]

Default sets: the bench's mixed 12 (seed 0), 36 (seed 1) and 36 (seed 2) with the
gnn-v2 logs of runs/bench. A problem "ties" when greedy, random-100, random-1000,
brkga-10000 and policy+brkga-10000 all give the same cost.
"""

import os
import sys

import numpy as np

from jaxplace.bench.policy import held_out_problems
from jaxplace.policy import load_policy
from jaxplace.policy.inference import node_distribution

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_pooled import parse  # noqa: E402

SETS = ("12:0:runs/bench/v2_full_mixed.log", "36:1:runs/bench/v2_mixed36.log",
        "36:2:runs/bench/v2_mixed36_s2.log")
TIED = ("policy-greedy", "random-100", "random-1000", "brkga-10000", "policy+brkga-10000")


def main(args):
    policy = load_policy(args[0] if args and ":" not in args[0] else None)
    sets = [a for a in args if ":" in a] or SETS
    rows = []
    for spec in sets:
        count, seed, log = spec.split(":", 2)
        for p, (_, k, r) in zip(held_out_problems(int(count), int(seed)), parse(log), strict=True):
            std = float(np.exp(node_distribution(policy, p)["log_std"]).mean())
            rows.append((k, std, r["policy-greedy"] / r["random-100"],
                         len({r[m] for m in TIED}) == 1))
    rows = np.array(rows)
    for label, lo, hi in (("sure (mean std < 0.9)", 0.0, 0.9),
                          ("unsure (mean std >= 0.9)", 0.9, np.inf)):
        for k in (4, 8, 16):
            sel = (rows[:, 0] == k) & (rows[:, 1] >= lo) & (rows[:, 1] < hi)
            v = rows[sel, 2]
            if len(v):
                print(f"{label} k={k}: {len(v)} problems, {int(rows[sel, 3].sum())} tie at "
                      f"every method, greedy / random-100 {np.exp(np.log(v).mean()):.4f}, "
                      f"wins {(v < 1 - 1e-9).sum()}, losses {(v > 1 + 1e-9).sum()}")


if __name__ == "__main__":
    main(sys.argv[1:])
