"""Probe: a one-evaluation greedy order from the policy's distribution other than the
mode: Borda scores b_v = sum_u P(z_v > z_u) = sum_u Phi((mu_v - mu_u) / sqrt(s_v^2 +
s_u^2)) (the expected number of nodes a node outranks in a sample), against the mode
and random-100 (common random numbers).

    python experiments/policy_borda.py SEED COUNT plain|coloc|orph
"""

import sys

import numpy as np
from policy_heuristic_seeds import policy_gaussians  # experiments/, the script's directory
from scipy.special import ndtr

import jaxplace as jp


def borda(mu, sd):
    s = np.sqrt(sd[:, None] ** 2 + sd[None] ** 2)
    return ndtr((mu[:, None] - mu[None]) / s).sum(1)


def main(seed: int, count: int, family: str) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for i, p, lb, mu, sd in policy_gaussians(seed, count, family):
        b = borda(mu, sd)
        X = np.concatenate([(1 / (1 + np.exp(-mu)))[None], (b / (p.n + 1))[None],
                            rng.random((100, p.n))])
        c = jp.evaluate(p, X, precision="float64") / lb
        rows.append((p.k, c[0], c[1], c[2:].min()))
        print(f"{i} n={p.n} k={p.k} mode={c[0]:.4f} borda={c[1]:.4f} "
              f"r100={c[2:].min():.4f}", flush=True)
    r = np.array(rows)
    for k in (4, 8, 16, None):
        s = r if k is None else r[r[:, 0] == k]
        q = s[:, 2] / s[:, 1]
        g = lambda v: float(np.exp(np.log(v).mean()))  # noqa: E731
        print(f"k={k or 'all'} borda/mode {g(q):.4f} wins {(q < 1 - 1e-9).sum()} "
              f"losses {(q > 1 + 1e-9).sum()} (of {len(q)}); mode/r100 "
              f"{g(s[:, 1] / s[:, 3]):.4f} borda/r100 {g(s[:, 2] / s[:, 3]):.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
