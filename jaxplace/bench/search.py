"""`jaxplace bench search`: search quality on seeded REGAL-like graphs (ICML 2024 table).

For every graph of `jaxplace.generators.regal_set(count, seed)` and every k, runs each
method and prints the geometric-mean ratio of its best cost to the simple lower bound
(lower is better; docs/problem.md section 4 has the paper's numbers), then the median wall
time per run (compile time included in the first run of each padded shape).

Method names: "random-T" (best of T uniform vectors), "brkga-PxG" (population P,
G generations: "brkga-10x10" is the paper's brkga-100, "brkga-100x100" its
brkga-10000), "mla", "mla-weighted", "dfs", "default", or any `jaxplace.search` method
name (budget 10,000).

`--suite regal-time`: time to solution as a user meets it: fresh REGAL
graphs (`--count`, default 30; graph i with k = ks[i % len(ks)], default 4,8,16), each
jaxplace method in a fresh process (cold wall with compiles, XLA programs compiled,
warm wall), the C++ BRKGA peer (`cpp-brkga-10000`) in the same run, cost ratios and
the cost-vs-wall-time curve; see `jaxplace.bench.search_time`. Exit status 1 when a
target is missed.

`--suite dnn`: DNN-like graphs of the generators (transformer, resnet, inception, unet;
100-400 nodes, jitter seed `--seed` + 1) for k in `--ks` (default 2,4,8): the default
search, then `jaxplace.certify` (simple, bottleneck, exact MIP with the search's
partition as MIP start, `--time-limit` s) to prove the partition optimal. Prints per
instance: our cost, the certified lower bound, the gap, whether proven optimal, and
whether the MIP incumbent improved on the search.

`--phases`: the cold path of `jp.search` (per graph: time to the first answer, and
per compiled program trace, lower, XLA compile, first and steady chunk) and of
`jp.search_many` (per bucket program, with XLA option candidates `--xla-options
default,O0,cheap`), on the regal-time suite (`--count`, default 30; ks 4,8,16 unless
`--ks` is given; `--phases-of search,many`); see `jaxplace.bench.phases`.
"""

from __future__ import annotations

import time

import numpy as np

import jaxplace as jp
from jaxplace.bench import search_time
from jaxplace.bench.phases import run_phases
from jaxplace.bench.runs import markdown_table
from jaxplace.generators import GENERATORS, regal_set

HELP = "search quality table (geometric-mean ratio to the simple bound) on REGAL graphs"

DEFAULT_METHODS = ("random-1,random-100,random-10000,brkga-10x10,brkga-100x100,mla,"
                   "mla-weighted,brkga-1000x100,default")


def add_arguments(p) -> None:
    p.add_argument("--count", type=int, default=None,
                   help="number of REGAL graphs (default 100; regal-time: 30)")
    p.add_argument("--ks", default="2,4,8,16,32,64", help="comma-separated k values")
    p.add_argument("--methods", default=DEFAULT_METHODS, help="comma-separated methods")
    p.add_argument("--seed", type=int, default=0, help="seed of the graph set and searches")
    p.add_argument("--markdown", default=None, help="also write the tables to this file")
    p.add_argument("--suite", choices=("regal", "regal-time", "dnn"), default="regal",
                   help="regal: the ICML table; regal-time: time to solution against the "
                   "C++ BRKGA peer (methods default,brkga-10000,cpp-brkga-10000); dnn: "
                   "optimality check on DNN-like graphs")
    p.add_argument("--cache", choices=("fresh", "user", "off"), default="fresh",
                   help="regal-time: each worker's compilation cache (fresh: empty, a "
                   "first run; user: JAXPLACE_CACHE_DIR as set, e.g. after warmup)")
    p.add_argument("--json", default=None, help="regal-time: also write the records here")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="dnn suite: seconds for the certificate (exact MIP) per instance")
    p.add_argument("--phases", action="store_true",
                   help="the cold path of jp.search and search_many, phase by phase per "
                   "compiled program (jaxplace.bench.phases)")
    p.add_argument("--xla-options", default="default",
                   help="--phases: comma-separated of default, O0, cheap (search_many)")
    p.add_argument("--phases-of", default="search,many",
                   help="--phases: comma-separated of search (jp.search per graph), "
                   "many (search_many's bucket programs)")
    p.add_argument("--min-nodes", type=int, default=0,
                   help="dnn suite: skip graphs with fewer nodes")


#: The DNN suite: (family, keyword arguments), 100-400 nodes.
DNN_SUITE = (("transformer", {"layers": 16}), ("resnet", {"stages": (3, 8, 12, 3)}),
             ("inception", {"modules": 18}), ("unet", {"depth": 8, "convs": 6}),
             ("transformer", {"layers": 24}),
             ("resnet", {"stages": (3, 4, 23, 3), "block": "bottleneck"}))


def run_dnn(args) -> int:
    ks = [int(k) for k in (args.ks if args.ks != "2,4,8,16,32,64" else "2,4,8").split(",")
          if k.strip()]
    head = ["graph", "n", "k", "ours", "lower bound", "gap", "optimal", "MIP better",
            "search s", "certify s"]
    rows, proven, total = [], 0, 0
    for name, kw in DNN_SUITE:
        g = GENERATORS[name](seed=args.seed + 1, **kw)
        if args.min_nodes and g.num_nodes < args.min_nodes:
            continue
        for k in ks:
            p = jp.Problem(g, k)
            r = jp.search(p, seed=args.seed, progress=False)
            t0 = time.perf_counter()
            cert = jp.certify(p, partition=r.partition,
                              methods=("simple", "bottleneck", "exact"),
                              time_limit=args.time_limit)
            tc = time.perf_counter() - t0
            better = cert.upper_bound < r.cost * (1 - 1e-9)
            total += 1
            proven += bool(cert.optimal) and not better
            gap = r.cost / cert.lower_bound - 1 if cert.lower_bound > 0 else float("nan")
            rows.append([name, g.num_nodes, k, f"{r.cost:.6g}", f"{cert.lower_bound:.6g}",
                         f"{gap:.2e}", "yes" if cert.optimal and not better else "no",
                         f"{cert.upper_bound:.6g}" if better else "-",
                         f"{r.wall_time:.1f}", f"{tc:.1f}"])
            print(" ".join(map(str, rows[-1])), flush=True)
    text = (f"DNN-like graphs (generators, seed {args.seed + 1}), default search, "
            f"certify(simple, bottleneck, exact; {args.time_limit:g} s)\n\n"
            + markdown_table(head, rows)
            + f"\n\nsearch partition proven optimal: {proven}/{total}")
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0


def run(args) -> int:
    if getattr(args, "phases", False):
        return run_phases(args)
    if args.suite == "dnn":
        return run_dnn(args)
    if args.suite == "regal-time":
        args.count = 30 if args.count is None else args.count
        args.methods_given = args.methods != DEFAULT_METHODS
        return search_time.run(args)
    args.count = 100 if args.count is None else args.count
    from jaxplace.search import search_named

    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    graphs = list(regal_set(args.count, seed=args.seed))
    ratios = {(m, k): [] for m in methods for k in ks}
    times = {(m, k): [] for m in methods for k in ks}
    t_all = time.perf_counter()
    for i, g in enumerate(graphs):
        for k in ks:
            p = jp.Problem(g, k)
            lb = jp.simple_lower_bound(p)
            for m in methods:
                r = search_named(p, m, args.seed + i)
                ratios[m, k].append(r.cost / lb)
                times[m, k].append(r.wall_time)
        print(f"graph {i + 1}/{len(graphs)} (n={g.num_nodes}) done, "
              f"{time.perf_counter() - t_all:.0f}s", flush=True)
    head = ["method", *[f"k={k}" for k in ks]]
    q = [[m, *[f"{np.exp(np.mean(np.log(ratios[m, k]))):.4f}" for k in ks]] for m in methods]
    w = [[m, *[f"{np.median(times[m, k]):.2f}" for k in ks]] for m in methods]
    text = (f"REGAL-like graphs: regal_set({args.count}, seed={args.seed}), k in {ks}\n\n"
            "Geometric-mean ratio of the best cost to the simple lower bound:\n\n"
            + markdown_table(head, q) + "\n\nMedian wall time per run (s):\n\n"
            + markdown_table(head, w))
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0
