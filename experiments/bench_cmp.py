"""Per-problem comparison of two methods across policy bench logs (stdout of
`python -m experiments.bench.policy`), pooled over pairs of logs of the same problems.

    python experiments/bench_cmp.py A.log:METHOD B.log:METHOD [A2.log:METHOD B2.log:METHOD ...]

prints, per k and over all, the geometric mean of cost(A) / cost(B), its 95% bootstrap
interval (10,000 resamples of the problems, seeded) and the problems where A is better
(wins) or worse (losses). Example (greedy against random-100 on
the 84 mixed problems of experiments/policy.md):

    R=runs/bench; python experiments/bench_cmp.py $R/v2_full_mixed.log:policy-greedy \
        $R/v2_full_mixed.log:random-100 $R/v2_mixed36.log:policy-greedy \
        $R/v2_mixed36.log:random-100 $R/v2_mixed36_s2.log:policy-greedy \
        $R/v2_mixed36_s2.log:random-100
"""

import collections
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_pooled import parse  # noqa: E402  [(n, k, {method: cost / L})]


def main(args):
    if len(args) < 2 or len(args) % 2:
        sys.exit(__doc__)
    ratios = collections.defaultdict(list)
    for a, b in zip(args[::2], args[1::2], strict=True):
        (pa, ma), (pb, mb) = a.rsplit(":", 1), b.rsplit(":", 1)
        rows_a, rows_b = parse(pa), parse(pb)
        if len(rows_a) != len(rows_b):
            sys.exit(f"{pa} and {pb} hold different problem counts")
        for (n, k, ra), (n2, k2, rb) in zip(rows_a, rows_b, strict=True):
            if (n, k) != (n2, k2):
                sys.exit(f"{pa} and {pb} are not the same problems (n, k {n}, {k} vs {n2}, {k2})")
            ratios[k].append(ra[ma] / rb[mb])

    def line(label, v):
        v = np.asarray(v)
        logs = np.log(v)
        idx = np.random.default_rng(0).integers(len(v), size=(10_000, len(v)))
        lo, hi = np.exp(np.quantile(logs[idx].mean(axis=1), [0.025, 0.975]))
        print(f"{label}: {len(v)} problems, geomean {np.exp(logs.mean()):.4f} "
              f"[{lo:.4f}, {hi:.4f}], wins {(v < 1 - 1e-9).sum()}, "
              f"losses {(v > 1 + 1e-9).sum()}")

    for k in sorted(ratios):
        line(f"k={k}", ratios[k])
    line("all", np.concatenate([ratios[k] for k in ratios]))


if __name__ == "__main__":
    main(sys.argv[1:])
