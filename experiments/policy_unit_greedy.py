"""Greedy orders for graphs with placement units: the mode (max of member means) against
the median and the mean of the max of member latents, the unit priority samples see.

    python experiments/policy_unit_greedy.py orph|coloc POLICY SEED   # 24 bench training graphs
"""

import sys

import numpy as np
from scipy.stats import norm

import jaxplace as jp
from jaxplace.bench.policy import held_out_problems
from jaxplace.policy import load_policy, node_distribution
from jaxplace.reference import decode_reference


def unit_median_max(mu, sd, unit_of, num_units):
    """Per unit, t with prod_i Phi((t - mu_i) / sd_i) = 1/2 (bisection)."""
    lo, hi = np.full(num_units, np.inf), np.full(num_units, -np.inf)
    np.minimum.at(lo, unit_of, mu - 8 * sd)
    np.maximum.at(hi, unit_of, mu + 8 * sd)
    for _ in range(60):
        t = (lo + hi) / 2
        s = np.zeros(num_units)
        np.add.at(s, unit_of, norm.logcdf((t[unit_of] - mu) / sd))
        above = s > np.log(0.5)
        hi, lo = np.where(above, t, hi), np.where(above, lo, t)
    return (lo + hi) / 2


def unit_mean_max(mu, sd, unit_of, num_units, draws=512, seed=0):
    """Per unit, the mean of the max of its members' latents (Monte Carlo)."""
    z = mu + sd * np.random.default_rng(seed).standard_normal((draws, len(mu)))
    m = np.full((draws, num_units), -np.inf)
    np.maximum.at(m, (np.arange(draws)[:, None], unit_of[None, :]), z)
    return m.mean(0)


def geomean(v):
    return float(np.exp(np.log(v).mean()))


def main(family: str, path: str, seed: int) -> None:
    kw = {"colocation_fraction": 1.0}
    if family == "orph":
        kw["orphan_range"] = (0.05, 0.25)
    pol = load_policy(path)
    rows = []
    for i, p in enumerate(held_out_problems(24, seed, **kw)):
        lb, u = jp.simple_lower_bound(p), p.graph.units
        d = node_distribution(pol, p)
        mu = np.asarray(d["mean"], np.float64)[:p.n]
        sd = np.exp(np.asarray(d["log_std"], np.float64)[:p.n])
        costs = [decode_reference(p, x).cost / lb for x in (
            mu, unit_median_max(mu, sd, u.unit_of, u.num_units)[u.unit_of],
            unit_mean_max(mu, sd, u.unit_of, u.num_units)[u.unit_of])]
        rows.append(costs)
        print(i, p.n, p.k, "mode {:.4f} median-max {:.4f} mean-max {:.4f}".format(*costs),
              flush=True)
    r = np.array(rows)
    for j, name in ((1, "median-max"), (2, "mean-max")):
        q = r[:, j] / r[:, 0]
        print(f"{name} / mode {geomean(q):.4f} wins {(q < 1 - 1e-9).sum()} "
              f"losses {(q > 1 + 1e-9).sum()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
