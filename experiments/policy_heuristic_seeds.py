"""policy+brkga with and without the heuristic orders (DFS, ASAP, ALAP over units, free
units placed) in its first population, per problem, same search seed.

    python experiments/policy_heuristic_seeds.py SEED COUNT plain|coloc|orph BUDGET [OPTION]

OPTION (default heuristic_seeds): the option compared, off (False, or 0 for
dfs_anchor) against on (True, or the method's default for dfs_anchor).
"""

import sys

import numpy as np

import jaxplace as jp
from jaxplace.bench.policy import held_out_problems


def family_problems(seed: int, count: int, family: str) -> list:
    """The bench's held-out problems of a family: plain (mixed), coloc (training
    graphs without orphans) or orph (orphan share in [0.05, 0.25])."""
    kw = {}
    if family in ("coloc", "orph"):
        kw["colocation_fraction"] = 1.0
    if family == "orph":
        kw["orphan_range"] = (0.05, 0.25)
    return held_out_problems(count, seed, **kw)


def policy_gaussians(seed: int, count: int, family: str):
    """(index, problem, simple lower bound, means, stds) of the shipped policy's per-node
    Gaussians on each problem of `family_problems`, float64."""
    from jaxplace.policy import load_policy, node_distribution

    for i, p in enumerate(family_problems(seed, count, family)):
        d = node_distribution(load_policy(problem=p), p)
        yield (i, p, jp.simple_lower_bound(p), d["mean"].astype(np.float64),
               np.exp(d["log_std"].astype(np.float64)))


def main(seed: int, count: int, family: str, budget: int,
         option: str = "heuristic_seeds") -> None:
    values = (False, True) if option == "heuristic_seeds" else (0.0, None)
    rows = []
    for i, p in enumerate(family_problems(seed, count, family)):
        lb, c, t = jp.simple_lower_bound(p), [], []
        for h in values:
            r = jp.search(p, "policy+brkga", budget=budget, seed=seed, progress=False,
                          **{option: h})
            c.append(r.cost / lb)
            t.append(r.wall_time)
        rows.append((p.k, c[0], c[1]))
        print(f"{i} n={p.n} k={p.k} free={len(p.graph.units.free_units())} "
              f"without={c[0]:.4f} with={c[1]:.4f} ratio={c[1] / c[0]:.4f} "
              f"wall {t[0]:.1f}/{t[1]:.1f}s", flush=True)
    r = np.array(rows)
    for k in (4, 8, 16, None):
        s = r if k is None else r[r[:, 0] == k]
        q = s[:, 2] / s[:, 1]
        print(f"k={k or 'all'} with/without {np.exp(np.log(q).mean()):.4f} "
              f"wins {(q < 1 - 1e-9).sum()} losses {(q > 1 + 1e-9).sum()} "
              f"(of {len(q)})")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]),
         *sys.argv[5:6])
