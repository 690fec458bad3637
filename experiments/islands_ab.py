"""A/B on this machine: search_many's island mode against its default mode on REGAL-like
graphs at equal budgets (evaluations per problem), cost and wall, in one process.

    nice python experiments/islands_ab.py --count 6 --budget 30000

Each configuration runs twice: cold (its programs compiled in the pass) and warm
(compiled). The exact first step and the MIP polish are off in every configuration, so
the costs compare the search engines alone. Prints one markdown table (figures, never
asserted); the load average is printed with it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--budget", type=int, default=30_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="default,islands:2x64,islands:4x256")
    args = ap.parse_args()

    import jax

    import jaxplace as jp
    from jaxplace.generators import regal_set
    from jaxplace.search.many import search_many

    # the regal-time suite of `jaxplace bench search`/`bench batch`: graph i gets k = 4, 8, 16 in turn
    ks = (4, 8, 16)
    probs = [jp.Problem(g, ks[i % len(ks)])
             for i, g in enumerate(regal_set(args.count, seed=args.seed))]
    print(f"{args.count} graphs regal_set(seed={args.seed}), n = "
          f"{[p.n for p in probs]}, k = {[p.k for p in probs]}; budget {args.budget} "
          f"per problem; {jax.devices()[0].platform}, {os.cpu_count()} CPUs; load "
          f"{os.getloadavg()[0]:.2f} at the start", flush=True)
    rows, base = [], None
    for cfg in args.configs.split(","):
        kw = dict(budget=args.budget, seed=args.seed, exact=False, polish=False)
        if cfg == "default":
            kw["mode"] = "default"
        else:
            islands, population = (int(v) for v in cfg.split(":")[1].split("x"))
            kw.update(mode="islands", islands=islands, population=population)
        walls, runs = [], []
        for _ in range(2):
            t0 = time.perf_counter()
            runs.append(search_many(probs, **kw))
            walls.append(time.perf_counter() - t0)
        costs = np.array([r.cost for r in runs[0]])
        same = all(a.cost == b.cost for a, b in zip(*runs, strict=True))
        evals = np.mean([r.evaluations for r in runs[0]])
        if base is None:
            base = costs
        ratio = float(np.exp(np.mean(np.log(costs / base))))
        rows.append((cfg, walls[0], walls[1], evals, ratio, same, costs))
        print(f"{cfg}: cold {walls[0]:.1f} s, warm {walls[1]:.1f} s, mean evaluations "
              f"{evals:,.0f}, cost / first config {ratio:.4f}, warm = cold {same}; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
    print()
    print("| config | cold wall s | warm wall s | mean evaluations | cost / "
          f"{rows[0][0]} (geo. mean) | warm costs = cold |")
    print("|---|---|---|---|---|---|")
    for cfg, cold, warm, evals, ratio, same, _ in rows:
        print(f"| {cfg} | {cold:.1f} | {warm:.1f} | {evals:,.0f} | {ratio:.4f} | {same} |")
    print()
    print("per graph costs:", {r[0]: [round(float(c), 4) for c in r[6]] for r in rows})
    print(f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
