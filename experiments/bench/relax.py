"""`python -m experiments.bench.relax`: the differentiable relaxation against the search baselines.

On held-out REGAL-like graphs (`jaxplace.generators.regal_set(count, seed)`; the
relaxation's settings were tuned on `regal(seed=3|4, n=120)`, outside these sets) and
every k, runs each method and prints the geometric-mean ratio of its best cost to the
simple lower bound (lower is better), the median wall time per run, and the median
gradient steps of the relaxation methods. Wall times include compiling on the first
graph of each padded shape (as `bench search` does), except for the methods in
`--warm`, run once untimed first (for the equal-time comparison with random-1000).

Method names: those of `jaxplace bench search` ("random-T", "brkga-PxG", "default",
...) and "relax" (defaults: 32 restarts x 400 steps, 256 evaluations),
"relax-RxS" (R restarts, S steps, 2 R evaluations), "relax+brkga-T" (T evaluations,
BRKGA population 100).
"""

from __future__ import annotations

import re
import time

import numpy as np

HELP = "differentiable relaxation vs random, BRKGA and the default search on REGAL graphs"

DEFAULT_METHODS = ("random-1000,relax-8x100,relax,brkga-100x100,relax+brkga-10000,"
                   "default")


def add_arguments(p) -> None:
    p.add_argument("--count", type=int, default=20, help="number of REGAL graphs")
    p.add_argument("--ks", default="4,8,16,32", help="comma-separated k values")
    p.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated methods")
    p.add_argument("--seed", type=int, default=1, help="seed of the graph set and searches")
    p.add_argument("--markdown", default=None, help="also write the tables to this file")
    p.add_argument("--warm", default="random-1000,relax-8x100,relax",
                   help="methods run once untimed before each timed run, so that their "
                        "wall times exclude compiling (comma-separated; '' for none)")


def run_method(problem, name: str, seed: int):
    """One search by bench name; returns the Result."""
    from jaxplace.search import search
    from jaxplace.search import search_named as search_method

    if name == "relax":
        return search(problem, "relax", seed=seed, progress=False)
    if m := re.fullmatch(r"relax-(\d+)x(\d+)", name):
        R, S = int(m[1]), int(m[2])
        return search(problem, "relax", budget=2 * R, seed=seed, progress=False,
                      restarts=R, steps=S, snapshots=2)
    if m := re.fullmatch(r"relax\+brkga-(\d+)", name):
        return search(problem, "relax+brkga", budget=int(m[1]), seed=seed,
                      progress=False)
    return search_method(problem, name, seed)


def run(args) -> int:
    import jaxplace as jp
    from jaxplace.generators import regal_set

    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    graphs = list(regal_set(args.count, seed=args.seed))
    warm = {m.strip() for m in args.warm.split(",") if m.strip()}
    ratios = {(m, k): [] for m in methods for k in ks}
    times = {(m, k): [] for m in methods for k in ks}
    grads = {(m, k): [] for m in methods for k in ks}
    t_all = time.perf_counter()
    for i, g in enumerate(graphs):
        for k in ks:
            p = jp.Problem(g, k)
            lb = jp.simple_lower_bound(p)
            for m in methods:
                if m in warm:
                    run_method(p, m, args.seed + i + 10_000)
                r = run_method(p, m, args.seed + i)
                ratios[m, k].append(r.cost / lb)
                times[m, k].append(r.wall_time)
                grads[m, k].append(r.info.get("gradient_steps", 0))
        print(f"graph {i + 1}/{len(graphs)} (n={g.num_nodes}) done, "
              f"{time.perf_counter() - t_all:.0f}s", flush=True)
        text = _report(args, ks, methods, warm, ratios, times, grads, i + 1)
        if args.markdown:  # after every graph: a crash keeps what was measured
            with open(args.markdown, "w") as f:
                f.write(text + "\n")
    print(text)
    return 0


def _report(args, ks, methods, warm, ratios, times, grads, done: int) -> str:
    from experiments.bench.tables import markdown_table as _table

    head = ["method", *[f"k={k}" for k in ks]]
    q = [[m, *[f"{np.exp(np.mean(np.log(ratios[m, k]))):.4f}" for k in ks]] for m in methods]
    w = [[m, *[f"{np.median(times[m, k]):.2f}" for k in ks]] for m in methods]
    gs = [[m, *[f"{int(np.median(grads[m, k]))}" for k in ks]] for m in methods
          if any(np.any(grads[m, k]) for k in ks)]
    wins = [[f"{a} < {b}", *[f"{_wins(ratios[a, k], ratios[b, k])}" for k in ks]]
            for a, b in _pairs(methods)]
    return (f"REGAL-like graphs: regal_set({args.count}, seed={args.seed}) ({done} done), "
            f"k in {ks}; wall times exclude compiling for: "
            f"{', '.join(sorted(warm)) or 'none'}\n\n"
            "Geometric-mean ratio of the best cost to the simple lower bound:\n\n"
            + _table(head, q) + "\n\nMedian wall time per run (s):\n\n" + _table(head, w)
            + "\n\nMedian gradient steps (restarts x steps) per run:\n\n" + _table(head, gs)
            + ("\n\nGraphs where the first is strictly better / ties / worse:\n\n"
               + _table(head, wins) if wins else ""))


def _pairs(methods):
    """The comparisons the relaxation is meant to win."""
    out = []
    for a, b in (("relax", "random-1000"), ("relax-8x100", "random-1000"),
                 ("relax+brkga-10000", "brkga-100x100")):
        if a in methods and b in methods:
            out.append((a, b))
    return out


def _wins(a, b, rtol: float = 1e-9) -> str:
    a, b = np.asarray(a), np.asarray(b)
    better = int(np.sum(a < b * (1 - rtol)))
    worse = int(np.sum(b < a * (1 - rtol)))
    return f"{better}/{len(a) - better - worse}/{worse}"


if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
