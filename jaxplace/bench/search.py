"""`jaxplace bench search`: search quality on seeded REGAL-like graphs (ICML 2024 table).

For every graph of `jaxplace.generators.regal_set(count, seed)` and every k, runs each
method and prints the geometric-mean ratio of its best cost to the simple lower bound
(lower is better; mtpp.md section 4 has the paper's numbers), then the median wall
time per run (compile time included in the first run of each padded shape).

Method names: "random-T" (best of T uniform vectors), "brkga-PxG" (population P,
G generations: "brkga-10x10" is the paper's brkga-100, "brkga-100x100" its
brkga-10000), "mla", "mla-weighted", "dfs", "default", or any `jaxplace.search` method
name (budget 10,000).

`--suite regal-time`: time to solution as a user meets it (issue 14): fresh REGAL
graphs (`--count`, default 30; graph i with k = ks[i % len(ks)], default 4,8,16), each
jaxplace method in a fresh process (cold wall with compiles, XLA programs compiled,
warm wall), the C++ BRKGA peer (`cpp-brkga-10000`) in the same run, cost ratios and
the cost-vs-wall-time curve; see `jaxplace.bench.search_time`. Exit status 1 when a
target of issue 14 is missed.

`--suite dnn`: DNN-like graphs of the generators (transformer, resnet, inception, unet;
100-400 nodes, jitter seed `--seed` + 1) for k in `--ks` (default 2,4,8): the default
search, then `jaxplace.certify` (simple, bottleneck, exact MIP with the search's
partition as MIP start, `--time-limit` s) to prove the partition optimal. Prints per
instance: our cost, the certified lower bound, the gap, whether proven optimal, and
whether the MIP incumbent improved on the search.

`--phases`: the cold path of `jp.search_many` on the regal-time suite (`--count`,
default 30; ks 4,8,16 unless `--ks` is given), phase by phase for every bucket
program (one problem per call): Python tracing, lowering, XLA compile, the first
run of one chunk and the steady state (best of 3), in this process; compiled
fresh (the in-memory caches cleared; set JAXPLACE_CACHE_DIR= to keep the
persistent cache out). `--xla-options default,O0,cheap` adds XLA CPU option
candidates (backend optimization level 0; the expensive LLVM passes off).
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.bench.runs import markdown_table, run_method

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
                   help="the cold path of search_many, phase by phase per program")
    p.add_argument("--xla-options", default="default",
                   help="--phases: comma-separated of default, O0, cheap")
    p.add_argument("--min-nodes", type=int, default=0,
                   help="dnn suite: skip graphs with fewer nodes")


#: The DNN suite: (family, keyword arguments), 100-400 nodes.
DNN_SUITE = (("transformer", {"layers": 16}), ("resnet", {"stages": (3, 8, 12, 3)}),
             ("inception", {"modules": 18}), ("unet", {"depth": 8, "convs": 6}),
             ("transformer", {"layers": 24}),
             ("resnet", {"stages": (3, 4, 23, 3), "block": "bottleneck"}))


def run_dnn(args) -> int:
    import jaxplace as jp
    from jaxplace.generators import GENERATORS

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


#: XLA CPU compiler options measured by `--phases` (issue 51).
XLA_OPTIONS = {"default": {}, "O0": {"xla_backend_optimization_level": 0},
               "cheap": {"xla_llvm_disable_expensive_passes": True}}
PHASES = ("trace s", "lower s", "XLA compile s", "first chunk s", "steady chunk s")


def program_phases(run, options: dict, steps: int = 8) -> list[float]:
    """Seconds of (trace, lower, compile, first call, steady call) of a `BucketRun`'s
    program for `steps` steps, compiled with XLA `options`."""
    import jax
    import jax.numpy as jnp

    from jaxplace.search.many.program import many_chunk

    data = run._data()
    state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
    count = jnp.int32(steps)
    jax.clear_caches()
    t = [time.perf_counter()]
    traced = many_chunk.trace(run.program, data, state, count)
    t.append(time.perf_counter())
    lowered = traced.lower()
    t.append(time.perf_counter())
    compiled = lowered.compile(compiler_options=options or None)
    t.append(time.perf_counter())
    jax.block_until_ready(compiled(data, state, count))
    t.append(time.perf_counter())
    steady = []
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(data, state, count))
        steady.append(time.perf_counter() - t0)
    return [b - a for a, b in zip(t, t[1:], strict=False)] + [min(steady)]


def run_phases(args) -> int:
    """`--phases` (module doc)."""
    import os

    import jaxplace as jp
    from jaxplace.bench.search_time import instances
    from jaxplace.search.many import ManySettings, prepare
    from jaxplace.search.many.buckets import plan_buckets
    from jaxplace.search.many.run import BucketRun

    names = [o.strip() for o in args.xla_options.split(",") if o.strip()]
    bad = [o for o in names if o not in XLA_OPTIONS]
    if bad:
        from jaxplace.errors import JaxplaceError

        raise JaxplaceError(f"unknown {', '.join(bad)}; known: {', '.join(XLA_OPTIONS)}",
                            field="--xla-options")
    ks = [4, 8, 16] if args.ks == "2,4,8,16,32,64" else [int(k) for k in args.ks.split(",")]
    count = 30 if args.count is None else args.count
    t0 = time.perf_counter()
    probs = [jp.Problem(g, k) for _, g, k in instances(count, ks, args.seed)]
    prepared = [prepare(p, i) for i, p in enumerate(probs)]
    t_prep = time.perf_counter() - t0
    buckets = plan_buckets([p.cls for p in prepared])
    rows, tot = [], {o: [0.0] * len(PHASES) for o in names}
    for b in buckets:
        run = BucketRun([prepared[b.members[0]]], b, ManySettings(), None)
        for o in names:
            ph = program_phases(run, XLA_OPTIONS[o])
            tot[o] = [x + y for x, y in zip(tot[o], ph, strict=True)]
            rows.append([f"N={b.spec.N} K={b.spec.K} window={b.window}", o,
                         *[f"{x:.3f}" for x in ph]])
            print(" | ".join(rows[-1]), flush=True)
    rows += [[f"total ({len(buckets)} programs)", o, *[f"{x:.3f}" for x in tot[o]]]
             for o in names]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = (f"search_many cold path, regal-time suite ({count} graphs, k in {ks}, seed "
            f"{args.seed}); prepare (heuristic orders, classes, policy) {t_prep:.1f} s; "
            f"load average {load:.1f}\n\n"
            + markdown_table(["program", "XLA options", *PHASES], rows))
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
        from jaxplace.bench import search_time

        args.count = 30 if args.count is None else args.count
        args.methods_given = args.methods != DEFAULT_METHODS
        return search_time.run(args)
    args.count = 100 if args.count is None else args.count
    import jaxplace as jp
    from jaxplace.generators import regal_set

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
                r = run_method(p, m, args.seed + i)
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
