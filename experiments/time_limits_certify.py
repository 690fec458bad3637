"""Wall time of `jp.certify(problem, partition, time_limit=T)` on REGAL-like graphs:
the whole call against its limit, per rung (name, seconds, status).

    nice python experiments/time_limits_certify.py --n 200 --seeds 1,2,3 --ks 4,8,16 --time-limit 60
    nice python experiments/time_limits_certify.py --readme   # the README example, k = 4
"""

from __future__ import annotations

import argparse
import time

import jaxplace as jp
from jaxplace.generators import example, generate


def readme(time_limit: float) -> None:
    """jp.certify's default on the README example (`partition --example -k 4`)."""
    p = jp.Problem(example(), 4)
    r = jp.search(p, seed=0, progress=False)
    t0 = time.perf_counter()
    c = jp.certify(p, r.partition, time_limit=time_limit)
    print(f"methods {','.join(c.settings['methods'])} ({c.settings.get('picked')}): "
          f"{time.perf_counter() - t0:.2f} s, optimal {c.optimal} ({c.method})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--ks", default="4,8,16")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--search-time", type=float, default=20.0)
    ap.add_argument("--readme", action="store_true")
    args = ap.parse_args()
    if args.readme:
        return readme(args.time_limit)
    seeds = [int(s) for s in args.seeds.split(",")]
    ks = [int(k) for k in args.ks.split(",")]
    print("| graph | n | k | picked | wall (s) | limit | LB/UB | rungs (s, status) |")
    print("|---|---|---|---|---|---|---|---|")
    for seed, k in zip(seeds, ks):
        g = generate("regal", seed=seed, n=args.n)
        p = jp.Problem(g, k)
        r = jp.search(p, seed=0, time_limit=args.search_time, progress=False)
        t0 = time.perf_counter()
        c = jp.certify(p, r.partition, time_limit=args.time_limit)
        wall = time.perf_counter() - t0
        rungs = ", ".join(f"{x.name} {x.time:.1f} {x.status}" for x in c.results)
        print(f"| regal seed {seed} | {g.num_nodes} | {k} | {','.join(c.settings['methods'])}"
              f" | {wall:.1f} | {args.time_limit:g} | {c.lower_bound / c.upper_bound:.4f} "
              f"| {rungs} |", flush=True)


if __name__ == "__main__":
    main()
