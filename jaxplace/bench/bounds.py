"""Lower-bound ladder on seeded REGAL-like graphs: the ICML 2024 table (Archer et al.).

For every graph and k: the best partition found (best of random priority vectors
through the reference decoder, improved by the exact MIP's incumbent), then simple,
bottleneck, bottleneck-guess and exact (HiGHS, time-limited; a stopped MIP gives its
dual bound) as fractions of that partition's cost; geometric means per k next to the
paper's REGAL row, with per rung its mean time and, for MIPs, branch-and-bound nodes
(`--methods` picks the rungs, e.g. station,station-check; `--upper-cache` keeps the
upper-bound partitions in a file so that runs comparing rungs share them). Per k the
share of graphs proven optimal, by the ladder and by each rung alone. `--suite onnx`
runs the ladder (default: the MIP rungs and BB&R) on the ONNX models of the test set
(`bench.bounds_onnx`) and checks every bound against the DP's optimum where the ideals
fit the DP; `--suite dnn` reports the exact MIP on the DNN-like generator examples (gap
and time to proven optimality).

The rungs run as a ladder, each from the bound and partition before it (the exact MIP
with z at least that bound, BB&R climbing from it), so a later rung's column and share
proven include the earlier rungs' work: to compare rungs apart, run them in separate
`--methods` lists sharing one `--upper-cache`.
"""

from __future__ import annotations

import math
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench.bounds_onnx import onnx_graphs
from jaxplace.exact import solve_ideals
from jaxplace.exact.dp import count_problem_ideals
from jaxplace.generators import EXAMPLES, generate, regal_set
from jaxplace.objectives.throughput.cost import evaluate_partition

HELP = ("lower-bound ladder (simple, bottleneck, guess, exact, bbr) on REGAL-like graphs "
        "or the ONNX models of the test set")

# Archer et al. (ICML 2024), 1000 REGAL graphs, 1 h Gurobi/SCIP per MIP (docs/problem.md section 4).
PAPER_REGAL = {
    "simple": {2: 0.9579, 4: 0.8795, 8: 0.7911, 16: 0.5821, 32: 0.4087, 64: 0.3336},
    "bottleneck": {2: 0.9794, 4: 0.8818, 8: 0.7918, 16: 0.5824, 32: 0.4090, 64: 0.3338},
    "bottleneck-guess": {2: 0.9804, 4: 0.8826, 8: 0.7918, 16: 0.5824, 32: 0.4090,
                         64: 0.3338},
    "exact": {2: 0.9804, 4: 0.9579, 8: 0.9407, 16: 0.8929, 32: 0.5910, 64: 0.3810},
}
LADDER = ("simple", "bottleneck", "bottleneck-guess", "exact")
#: The ONNX suite's default: the MIP rungs and BB&R side by side.
ONNX_LADDER = ("simple", "bottleneck", "exact", "bbr")

# Targets for the default certificate (60 s, 2-core CPU): LB/UB per k.
TARGET_53 = {4: 0.97, 8: 0.97, 16: 0.93}


def add_arguments(p) -> None:
    p.add_argument("--suite", choices=("regal", "dnn", "onnx"), default="regal",
                   help="regal: REGAL-like graphs; dnn: the exact MIP on the DNN-like "
                   "examples; onnx: the ladder on the ONNX models of the test set "
                   "(jaxplace.bench.bounds_onnx, no download)")
    p.add_argument("--models", default=None,
                   help="comma-separated ONNX models for --suite onnx (default: all; "
                   "cnn<blocks> or light_<arch>)")
    p.add_argument("--count", type=int, default=10, help="REGAL graphs (default 10)")
    p.add_argument("--ks", default="2,4,8,16", help="comma-separated k values")
    p.add_argument("--time-limit", type=float, default=10.0,
                   help="seconds per MIP method per instance (default 10)")
    p.add_argument("--samples", type=int, default=64,
                   help="random priority vectors for the upper bound with --upper random")
    p.add_argument("--upper", choices=("search", "random"), default="search",
                   help="upper bound from the default jaxplace.search (the paper used "
                   "BRKGA partitions) or from --samples random vectors")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--methods", default=None,
                   help="comma-separated ladder methods for --suite regal and onnx "
                   "(default " + ",".join(LADDER) + ", with onnx " + ",".join(ONNX_LADDER)
                   + "; e.g. add cover; 'default' stands for the ladder jp.certify picks "
                   "per instance, e.g. default,bbr)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--upper-cache", default=None,
                   help="JSON file of upper-bound partitions: read when it holds the "
                   "instance (graph, k, seed, --upper), else computed and written back, "
                   "so that runs comparing rungs share one upper bound")
    p.add_argument("--markdown", default=None, help="also write the table to this file")


def _gmean(xs) -> float:
    xs = np.asarray([x for x in xs if x > 0], dtype=float)
    return float(np.exp(np.log(xs).mean())) if len(xs) else math.nan


def _upper(problem, args, seed, name=None):
    """The starting partition (assignment) for the ladder, as chosen by --upper (read
    from and saved to --upper-cache when given, under a key naming the instance by
    `name` when given, else by its seed and size)."""
    path = getattr(args, "upper_cache", None)
    if path is None:
        return _compute_upper(problem, args, seed)
    import json
    import os

    cache = {}
    if os.path.exists(path):
        with open(path) as f:
            cache = json.load(f)
    key = f"{args.upper}-{args.samples}-seed{args.seed}-{seed}-n{problem.n}-k{problem.k}"
    if name is not None:
        key = f"{name}-{key}"
    if key in cache:
        a = np.asarray(cache[key], dtype=np.int64)
        evaluate_partition(problem, a)  # still a valid partition of this problem
        return a
    a = np.asarray(_compute_upper(problem, args, seed), dtype=np.int64)
    cache[key] = [int(b) for b in a]
    with open(path, "w") as f:
        json.dump(cache, f)
    return a


def _compute_upper(problem, args, seed):
    if args.upper == "search":
        from jaxplace.search import search

        return search(problem, seed=seed, progress=False).partition.assignment
    from jaxplace.bounds import sample_partition

    return sample_partition(problem, args.samples, seed=seed)[0]


def _upper_text(args) -> str:
    return ("the default jaxplace.search" if args.upper == "search"
            else f"best of {args.samples} random priority vectors (reference decoder)")


def run_regal(args) -> str:
    graphs = regal_set(args.count, seed=args.seed)
    caption = (
        f"Lower bound / best partition found, geometric mean over {args.count} REGAL-like "
        f"graphs (`jaxplace.generators.regal_set({args.count}, seed={args.seed})`, 50-200 "
        f"nodes); HiGHS {args.time_limit:g} s per MIP method per instance "
        f"(bottleneck-guess: {args.time_limit:g} s for all k solves), {args.threads} "
        f"thread(s); upper bound = {_upper_text(args)} or a rung's partition (the "
        f"exact MIP's incumbent, a feasible check) when better. Paper: 1000 graphs, 1 h "
        f"Gurobi per MIP, BRKGA partitions.")
    return run_ladder([(f"graph {i}", g) for i, g in enumerate(graphs)], args, caption,
                      paper=True)


def run_onnx(args) -> str:
    """The ladder on the ONNX models of the test set (`bounds_onnx`), with a check
    that no rung's bound passes the DP's optimum where the ideals fit the DP."""
    names = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    graphs = onnx_graphs(names)
    caption = (
        f"Lower bound / best partition found, geometric mean over {len(graphs)} ONNX "
        f"models (`jaxplace.bench.bounds_onnx`: {', '.join(n for n, _ in graphs)}; "
        f"roofline costs on h100, batch 1); {args.time_limit:g} s per rung per instance, "
        f"{args.threads} thread(s); upper bound = {_upper_text(args)} or a rung's "
        f"partition when better.")
    return run_ladder(graphs, args, caption, paper=False, check_dp=True)


def _methods_arg(args) -> list[str]:
    text = getattr(args, "methods", None) or ",".join(
        ONNX_LADDER if getattr(args, "suite", "regal") == "onnx" else LADDER)
    return [m.strip() for m in text.split(",") if m.strip()]


def _dp_optimum(problem):
    """The DP over ideals' optimum where the ideals fit `PICK_IDEALS`, else None."""
    from jaxplace.bounds.registry import PICK_IDEALS

    if count_problem_ideals(problem, PICK_IDEALS) is None:
        return None
    return float(solve_ideals(problem, search=False).cost)


def run_ladder(instances, args, caption: str, *, paper: bool, check_dp: bool = False
               ) -> str:
    """The ladder on every (name, graph) of `instances` at every k of `args.ks`: per
    instance one line, then the table (geometric mean LB/UB per rung, the share proven
    optimal per rung and by the best bound) and the MIP rungs and BB&R side by side."""
    from jaxplace.bounds import certify

    ks = [int(x) for x in args.ks.split(",") if x.strip()]
    from collections import defaultdict

    from jaxplace.bounds.registry import BOUNDS, default_methods, ladder

    names = _methods_arg(args)
    per_instance = "default" in names
    fixed = [m for m in names if m != "default"]
    registry = _registry(BOUNDS, fixed)
    methods = ladder(fixed, registry) if fixed else []
    frac = defaultdict(lambda: {k: [] for k in ks})
    times = defaultdict(lambda: {k: [] for k in ks})
    nodes = defaultdict(lambda: {k: [] for k in ks})
    rung_proven = defaultdict(lambda: {k: 0 for k in ks})
    best = {k: [] for k in ks}
    proven = {k: 0 for k in ks}
    dp_known = {k: 0 for k in ks}
    above = []  # (instance, k, what, value, DP optimum): bounds past the optimum
    count = len(instances)
    t_all = time.perf_counter()
    for i, (label, g) in enumerate(instances):
        for k in ks:
            problem = jp.Problem(g, k)
            a = _upper(problem, args, args.seed + i, name=None if paper else label)
            todo = (ladder([*default_methods(problem), *fixed], registry) if per_instance
                    else methods)
            cert = certify(problem, a, methods=todo, time_limit=None,
                           rung_time_limit=args.time_limit,
                           threads=args.threads, every_rung=True,
                           registry=None if registry is BOUNDS else registry)
            ub = cert.upper_bound
            for r in cert.results:
                frac[r.name][k].append(r.bound / ub)
                times[r.name][k].append(r.time)
                nodes[r.name][k].append(r.nodes)
                rung_proven[r.name][k] += ub <= r.bound * (1 + cert.tolerance)
            best[k].append(cert.lower_bound / ub)
            proven[k] += cert.optimal
            opt = _dp_optimum(problem) if check_dp else None
            if opt is not None:
                dp_known[k] += 1
                tol = opt * 1e-6 + 1e-9
                above += [(label, k, r.name, r.bound, opt) for r in cert.results
                          if r.bound > opt + tol]
                if ub < opt - tol:
                    above.append((label, k, "upper bound below", ub, opt))
            print(f"{label} n={g.num_nodes} k={k}: UB {ub:.6g} ({cert.partition_source})"
                  + (f" DP optimum {opt:.6g}" if opt is not None else "") + "  "
                  + "  ".join(f"{r.name} {r.bound / ub:.4f} ({r.status}, {r.time:.1f}s"
                              + (f", {r.nodes} nodes)" if r.kind in ("mip", "dp")
                                 else ")")
                              for r in cert.results), flush=True)
    elapsed = time.perf_counter() - t_all
    methods = [m for m in registry if m in frac]  # the rungs that ran, in ladder order
    lines = [caption, "",
             "| bound | " + " | ".join(f"k={k}" for k in ks) + " |",
             "|---|" + "---|" * len(ks)]
    for m in methods:
        lines.append(f"| {m} (ours) | " + " | ".join(f"{_gmean(frac[m][k]):.4f}" for k in ks)
                     + " |")
        if not paper or m not in PAPER_REGAL:
            continue
        lines.append(f"| {m} (paper) | " + " | ".join(
            f"{PAPER_REGAL[m].get(k, math.nan):.4f}" for k in ks) + " |")
    lines.append("| proven optimal | " + " | ".join(f"{proven[k]}/{count}" for k in ks)
                 + " |")
    for m in methods:
        lines.append(f"| proven by {m} | " + " | ".join(
            f"{rung_proven[m][k]}/{count}" for k in ks) + " |")
    lines.append("| best bound (ours) | " + " | ".join(
        f"{_gmean(best[k]):.4f}" for k in ks) + " |")
    for m in [m for m in methods if m not in ("simple",)]:
        lines.append(f"| mean time {m} (s) | " + " | ".join(
            f"{np.mean(times[m][k]):.1f}" for k in ks) + " |")
    for m in [m for m in methods if registry[m].kind in ("mip", "dp")]:
        lines.append(f"| mean nodes {m} | " + " | ".join(
            f"{np.mean(nodes[m][k]):,.0f}" for k in ks) + " |")
    lines += ["", *_issue_table(ks, methods, frac, best, proven, count, registry,
                                rung_proven, paper=paper)]
    if check_dp:
        lines += ["", "DP over ideals' optimum known for " + ", ".join(
            f"{dp_known[k]}/{count} at k={k}" for k in ks) + "; bounds above it or upper "
            f"bounds below it: {len(above)}"
            + "".join(f"\n- {lb} k={k} {w}: {v:.9g} vs {o:.9g}" for lb, k, w, v, o in above)]
    lines.append("")
    lines.append(f"Total wall time {elapsed:.0f} s.")
    return "\n".join(lines)


def _registry(bounds, names):
    """`bounds`, or where `names` asks for the forced-crossings rung (`cross`,
    `jaxplace.exact.bbr.CrossBound`) and `bounds` lacks it, a copy with it
    after `station`."""
    if "cross" not in names or "cross" in bounds:
        return bounds
    from jaxplace.bounds.registry import Ladder
    from jaxplace.exact.bbr import CrossBound

    rungs = []
    for name in bounds:
        rungs.append(bounds[name])
        if name == "station":
            rungs.append(CrossBound("cross"))
    return Ladder(rungs)


def _issue_table(ks, methods, frac, best, proven, count, bounds, rung_proven,
                 paper: bool = True) -> list[str]:
    """The side-by-side layout: per k the MIP rungs and BB&R side by side (geometric mean
    LB/UB, and in brackets the graphs that rung alone proves optimal), the best bound,
    the share proven, and for REGAL-like graphs the paper's hour of Gurobi and the
    target."""
    cols = [m for m in methods if bounds.kind(m) in ("mip", "dp") or m == "cross"]
    extra = " ICML paper, 60 min Gurobi | target |" if paper else ""
    out = ["| k | " + " | ".join(cols) + " | best bound | proven |" + extra,
           "|---|" + "---|" * (len(cols) + 2 + 2 * paper)]
    for k in ks:
        cells = [f"{_gmean(frac[m][k]):.4f} ({rung_proven[m][k]}/{count})" for m in cols]
        row = (f"| {k} | " + " | ".join(cells) + f" | {_gmean(best[k]):.4f} | "
               f"{proven[k]}/{count} ({100 * proven[k] / max(count, 1):.0f}%) |")
        if paper:
            row += (f" {PAPER_REGAL['exact'].get(k, math.nan):.4f} | "
                    f"{TARGET_53.get(k, math.nan):.2f} |")
        out.append(row)
    return out


def run_dnn(args) -> str:
    from jaxplace.bounds import certify

    ks = [int(x) for x in args.ks.split(",") if x.strip()]
    lines = [f"Exact MIP on the DNN-like examples (`jaxplace.generators.EXAMPLES`, seed "
             f"{args.seed}); HiGHS {args.time_limit:g} s, {args.threads} thread(s), "
             f"mip_rel_gap 1e-6, started from {_upper_text(args)}.",
             "", "| graph | n | k | UB | LB | gap | status | time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for fam in EXAMPLES:
        if fam == "regal":
            continue
        g = generate(fam, seed=args.seed, **EXAMPLES[fam])
        for k in ks:
            problem = jp.Problem(g, k)
            a = _upper(problem, args, args.seed)
            cert = certify(problem, a, methods=("simple", "exact"), every_rung=True,
                           time_limit=None, rung_time_limit=args.time_limit,
                           threads=args.threads)
            r = cert.result("exact")
            lines.append(f"| {fam} | {g.num_nodes} | {k} | {cert.upper_bound:.6g} | "
                         f"{cert.lower_bound:.6g} | {cert.gap:.2e} | {r.status} | "
                         f"{r.time:.1f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def run(args) -> int:
    table = {"regal": run_regal, "dnn": run_dnn, "onnx": run_onnx}[args.suite](args)
    print()
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")
    return 0
