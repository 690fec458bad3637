"""Probe: the policy's means anchored to a heuristic order (mean + alpha * a, a the DFS
order's rank mapped to [-1, 1]); greedy and best of 100 (common random numbers across
alpha), against random-100 and the DFS order alone.

    python experiments/policy_anchor.py SEED COUNT [coloc|orph|plain] [ALPHAS]
"""

import sys

import numpy as np
from policy_heuristic_seeds import policy_gaussians  # experiments/, the script's directory

import jaxplace as jp
from jaxplace.policy import dfs_ranks
from jaxplace.search.baselines import seed_priorities


def geomean(v):
    return float(np.exp(np.log(np.asarray(v)).mean()))


def main(seed: int, count: int, family: str, alphas) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for i, p, lb, mu, sd in policy_gaussians(seed, count, family):
        dfs = seed_priorities(p.graph)[0].astype(np.float64)
        a = dfs_ranks(p)
        eps = rng.standard_normal((99, p.n))
        X = []
        for al in alphas:
            m = mu + al * a
            X.append(m[None])
            X.append(m + sd * eps)
        u = p.graph.units
        if not u.trivial and len(u.free_units()):
            from jaxplace.search.baselines import place_free_units
            Z = np.concatenate([X[0], X[1]])
            up = np.full((100, u.num_units), -np.inf)
            np.maximum.at(up, (np.arange(100)[:, None], u.unit_of[None, :]), Z)
            pf = np.stack([place_free_units(p.graph, r) for r in up])
            X.append(8 * (pf[:, u.unit_of] - 0.5))
        else:
            X.append(np.concatenate([X[0], X[1]]))
        X.append(rng.random((100, p.n)))
        X.append(dfs[None])
        c = jp.evaluate(p, 1 / (1 + np.exp(-np.concatenate(X))), precision="float64") / lb
        row = {}
        for j, al in enumerate(alphas):
            b = c[j * 100:(j + 1) * 100]
            row[f"g{al}"], row[f"b{al}"] = b[0], b.min()
        b = c[len(alphas) * 100:len(alphas) * 100 + 100]
        row["gpf"], row["bpf"] = b[0], b.min()
        row["r100"], row["dfs"] = c[-101:-1].min(), c[-1]
        rows.append(row)
        print(i, p.n, p.k, " ".join(f"{k}={v:.4f}" for k, v in row.items()), flush=True)
    keys = list(rows[0])
    for k in (4, 8, 16, None):
        sel = [r for i, r in enumerate(rows) if k is None or (4, 8, 16)[i % 3] == k]
        print(f"k={k or 'all'}", " ".join(
            f"{key}={geomean([r[key] / r['r100'] for r in sel]):.4f}" for key in keys))


if __name__ == "__main__":
    al = [float(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "0,0.25,0.5,1,2").split(",")]
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "plain", al)
