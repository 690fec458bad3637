"""What confirming a warm-started exact MIP costs: `exact_bound` started from the
optimal partition (the DP over ideals'), with and without the confirming solve
(which runs only when the MIP claims its start optimal).

    python experiments/confirm_cost.py
"""

from __future__ import annotations

import time

import jaxplace as jp
from jaxplace.bounds import exact_bound
from jaxplace.exact import solve_ideals
from jaxplace.generators import generate


def main():
    print("| graph | n | k | OPT | bound, start only | s | bound, confirmed | s | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, n, k, seed in [("regal", 20, 3, 0), ("regal", 30, 3, 1), ("regal", 30, 4, 2)]:
        g = generate(name, n=n, seed=seed)
        problem = jp.Problem(g, k)
        dp = solve_ideals(problem, search=False)
        found, opt = dp.assignment, jp.evaluate_partition(problem, dp.assignment).cost
        t0 = time.perf_counter()
        plain, _, _ = exact_bound(problem, found, time_limit=60, confirm=False)
        t1 = time.perf_counter()
        checked, _, _ = exact_bound(problem, found, time_limit=60)
        t2 = time.perf_counter()
        print(f"| {name} seed {seed} | {g.num_nodes} | {k} | {opt:.6g} | {plain.bound:.6g} | "
              f"{t1 - t0:.2f} | {checked.bound:.6g} | {t2 - t1:.2f} | {checked.status} |",
              flush=True)


if __name__ == "__main__":
    main()
