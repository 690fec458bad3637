"""The k = 4 MIP polish's share of a warm `jp.search`, on the regal-time suite's graphs.

    python experiments/polish_share.py --count 30 --seed 7 --reps 2

The suite's k = 4 graphs (graph i of `regal_suite(count, (4, 8, 16), seed)` with
k = 4, search seed `seed + i`), searched once to compile, then `reps` times each with
the default search and with `polish=False`, in one process: wall, process CPU time
and the sum of the costs per pass.
"""

from __future__ import annotations

import argparse
import time

import jaxplace as jp
from jaxplace.generators import regal_suite


def run(problems, seed: int, options: dict) -> tuple[float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    total = sum(jp.search(p, seed=seed + i, progress=False, **options).cost
                for i, p in problems)
    return time.perf_counter() - wall, time.process_time() - cpu, total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    problems = [(i, jp.Problem(g, k)) for i, g, k in regal_suite(args.count, (4, 8, 16),
                                                                  seed=args.seed) if k == 4]
    passes = [("default", {}), ("no polish", {"polish": False})]
    for _, options in passes:  # compiles outside the clock
        run(problems, args.seed, options)
    for _ in range(args.reps):
        for name, options in passes:
            wall, cpu, total = run(problems, args.seed, options)
            print(f"{name}: wall {wall:.1f} s, cpu {cpu:.1f} s, sum of costs {total:.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
