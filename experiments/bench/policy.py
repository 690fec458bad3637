"""`python -m experiments.bench.policy`: the learned policy against random search, BRKGA
and the default.

On held-out generated problems (REGAL-like and DNN-like graphs, n 50-300 unless
`--n-range` says otherwise, k in {4, 8, 16}; seed stream `BENCH_STREAM`, disjoint
from the training pool and the validation set of `jaxplace.policy.data`), prints per
k the geometric-mean ratio of the best cost to the simple lower bound (lower is
better), the decoder evaluations, and the median wall time per run of:

- policy-greedy: the policy's mode (1 evaluation);
- policy-best100: the mode plus 99 samples, best kept (100 evaluations);
- random-100, random-1000: `jp.search(p, "random", budget=...)`;
- brkga-1000, brkga-10000: `jp.search(p, "brkga", budget=...)`;
- default: `jp.search(p)`;
- on request (`--methods`): policy+brkga-B and policy-B, the `jp.search` methods
  "policy+brkga" and "policy" with budget B and this bench's policy
  (`--heuristic-seeds` and `--dfs-anchor` set their options of those names), and
  default+policy, the default search whose BRKGA phase is coupled with the policy;
  default-plain, the default search with the coupling off at every k.

Policy wall times include featurizing the graph and the GNN forward pass; every
wall time includes compiles for the first problem of each padded shape.
"""

from __future__ import annotations

import re
import sys
import time

import numpy as np

from jaxplace.errors import JaxplaceError

HELP = "learned policy vs random / BRKGA / default on held-out generated graphs"

DEFAULT_METHODS = ("policy-greedy", "policy-best100", "random-100", "random-1000",
                   "brkga-1000", "policy+brkga-1000", "brkga-10000", "policy+brkga-10000",
                   "default")
#: Seed stream of the bench problems (training uses 0, validation 1).
BENCH_STREAM = 2
BENCH_KS = (4, 8, 16)


def held_out_problems(count: int = 12, seed: int = 0, ks=BENCH_KS,
                      n_range=(50, 300), regal_fraction: float = 0.5,
                      cpu_fraction: float = 0.0, colocation_fraction: float = 0.0,
                      orphan_range=(0.0, 0.0)) -> list:
    """`count` plain problems (no memory, capacity or bandwidth change), k cycling
    through `ks`, from seed stream BENCH_STREAM of `jaxplace.policy.data`;
    `regal_fraction` 1.0 gives REGAL-like graphs only; `cpu_fraction` > 0 gives that
    share a CPU block (the graphs and k stay those of the plain set);
    `colocation_fraction` > 0 makes that share training graphs (forward plus backward
    nodes in colocation classes; a different set of graphs from the plain one), with
    `orphan_range` the share of their backward ops in classes of their own."""
    from jaxplace.policy import DataConfig, problem_set

    cfg = DataConfig(n_range=tuple(n_range), memory_fraction=0.0, capacity_fraction=0.0,
                     bandwidth_fraction=0.0, regal_fraction=regal_fraction,
                     cpu_fraction=cpu_fraction, colocation_fraction=colocation_fraction,
                     orphan_range=tuple(orphan_range))
    probs = problem_set(seed, count, cfg, BENCH_STREAM)
    return [p.replace(k=int(ks[i % len(ks)])) for i, p in enumerate(probs)]


def run_method(problem, name: str, policy, seed: int, heuristic_seeds: bool | None = None,
               dfs_anchor: float | None = None) -> tuple[float, int, float]:
    """(cost, evaluations, wall s) of one bench method on one problem;
    `heuristic_seeds` goes to "policy+brkga", `dfs_anchor` to it and "policy" (None:
    their defaults)."""
    import jaxplace as jp

    # policy-greedy = the "policy" method with 1 evaluation (the mode), policy-bestN =
    # the mode plus N - 1 samples
    name = {"policy-greedy": "policy-1"}.get(name, name.replace("policy-best", "policy-"))
    if m := re.fullmatch(r"(random|brkga)-(\d+)", name):
        r = jp.search(problem, m[1], budget=int(m[2]), seed=seed, progress=False)
    elif m := re.fullmatch(r"(policy\+brkga|policy)-(\d+)", name):
        kw = {"dfs_anchor": dfs_anchor}
        if m[1] != "policy":
            kw["heuristic_seeds"] = heuristic_seeds
        r = jp.search(problem, m[1], budget=int(m[2]), seed=seed, progress=False,
                      policy=getattr(policy, "path", None), **kw)
    elif name == "default+policy":
        kw = {"policy": policy.path} if getattr(policy, "path", None) else {}
        r = jp.search(problem, seed=seed, progress=False, use_policy=True, **kw)
    elif name == "default-plain":
        r = jp.search(problem, seed=seed, progress=False, use_policy=False)
    else:
        r = jp.search(problem, name, seed=seed, progress=False)
    return float(r.cost), int(r.evaluations), float(r.wall_time)


def _table(head, rows) -> str:
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]

    def fmt(r):
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(fmt, rows)])


def summarize(rows: list[dict], methods) -> str:
    """Markdown table: per method and k, geomean ratio, mean evaluations, median wall."""
    ks = sorted({r["k"] for r in rows})
    head = ["method", *[f"k={k}" for k in ks], "evaluations", "median wall s"]
    out = []
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        if not mine:
            continue
        cells = []
        for k in ks:
            x = [r["ratio"] for r in mine if r["k"] == k]
            cells.append(f"{np.exp(np.mean(np.log(x))):.4f}" if x else "-")
        out.append([m, *cells, f"{np.mean([r['evaluations'] for r in mine]):.0f}",
                    f"{np.median([r['wall'] for r in mine]):.2f}"])
    return _table(head, out)


def run_policy_bench(problems, policy=None, methods=DEFAULT_METHODS, *, seed: int = 0,
                     file=sys.stdout, verbose: bool = True, indices=None,
                     heuristic_seeds: bool | None = None,
                     dfs_anchor: float | None = None) -> list[dict]:
    """Run every method on every problem; print the summary table to `file`.

    `indices` (default 0, 1, ...): each problem's index in its held-out set, which
    seeds its searches (`seed + index`), so a subset gets the full set's seeds.
    `heuristic_seeds`, `dfs_anchor`: the options of "policy+brkga" and "policy" (None:
    their defaults, on graphs with free units only).
    Returns one row per (problem, method): {"index", "n", "k", "method", "cost",
    "ratio" (cost / simple lower bound), "evaluations", "wall"}.
    """
    import jaxplace as jp
    from jaxplace.policy import load_policy

    if isinstance(policy, str):
        policy = load_policy(policy)  # a bad path fails here, before any search
    # policy None: every method takes the shipped policy for its problem
    rows = []
    t_all = time.perf_counter()
    indices = range(len(problems)) if indices is None else list(indices)
    for i, (index, p) in enumerate(zip(indices, problems, strict=True)):
        lb = jp.simple_lower_bound(p)
        for m in methods:
            cost, evals, wall = run_method(p, m, policy, seed + index, heuristic_seeds,
                                           dfs_anchor)
            rows.append({"index": index, "n": p.n, "k": p.k, "method": m, "cost": cost,
                         "ratio": cost / lb, "evaluations": evals, "wall": wall})
        if verbose:
            got = "  ".join(f"{r['method']} {r['ratio']:.4f}" for r in rows[-len(methods):])
            print(f"[{i + 1}/{len(problems)}] n={p.n} k={p.k} "
                  f"{time.perf_counter() - t_all:.0f}s: {got}", file=file, flush=True)
    print(summarize(rows, methods), file=file, flush=True)
    return rows


def add_arguments(p) -> None:
    p.add_argument("--policy", default=None,
                   help="policy directory (default: the shipped one for each problem)")
    p.add_argument("--count", type=int, default=12, help="number of held-out problems")
    p.add_argument("--seed", type=int, default=0, help="seed of the problems and searches")
    p.add_argument("--family", choices=("mixed", "regal"), default="mixed",
                   help="mixed: half REGAL-like, half DNN-like graphs; regal: REGAL only")
    p.add_argument("--cpu-fraction", type=float, default=0.0,
                   help="share of the problems with one CPU block (same graphs)")
    p.add_argument("--colocation-fraction", type=float, default=0.0,
                   help="share of training graphs (forward + backward, colocated)")
    p.add_argument("--orphans", default=None, metavar="LO,HI",
                   help="training graphs only: share of backward ops in classes of their "
                   "own, uniform in [LO, HI] (default: none)")
    p.add_argument("--n-range", default="50,300", metavar="LO,HI",
                   help="node counts of the generated graphs (training graphs count "
                   "forward and backward ops; default 50,300, the training range)")
    p.add_argument("--only-k", default=None, metavar="K[,K]",
                   help="run only the problems with these k (same problems and seeds "
                   "as in the full set)")
    p.add_argument("--heuristic-seeds", choices=("auto", "on", "off"), default="auto",
                   help="policy+brkga: heuristic orders in the first population (auto: "
                   "on graphs with free units only)")
    p.add_argument("--dfs-anchor", default="auto", metavar="auto|A",
                   help="policy and policy+brkga: add A x the DFS rank to the policy's "
                   "means (auto: their defaults, 1 for policy on graphs with free units, "
                   "else 0)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help="comma-separated methods")
    p.add_argument("--markdown", default=None, help="also write the table to this file")
    p.add_argument("--json", default=None, help="also write the rows to this JSON file")


def _pair(text: str, field: str, kind, lo, hi) -> tuple:
    """LO,HI from `text`, with lo <= LO <= HI <= hi; a one-line error otherwise."""
    try:
        pair = tuple(kind(x) for x in text.split(","))
    except ValueError:
        pair = ()
    if len(pair) != 2 or not lo <= pair[0] <= pair[1] <= hi:
        raise JaxplaceError(f"expected LO,HI with {lo} <= LO <= HI <= {hi}, got "
                            f"{text!r}", field=field)
    return pair


def run(args) -> int:
    import json

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    heuristic = {"auto": None, "on": True, "off": False}[args.heuristic_seeds]
    anchor = None
    if args.dfs_anchor != "auto":
        from jaxplace.policy import anchor_value

        anchor = anchor_value(args.dfs_anchor, field="--dfs-anchor")
    orphans = (0.0, 0.0)
    if args.orphans is not None:
        orphans = _pair(args.orphans, "--orphans", float, 0.0, 1.0)
    n_range = _pair(args.n_range, "--n-range", int, 2, 100_000)
    problems = held_out_problems(args.count, args.seed, n_range=n_range,
                                 regal_fraction=1.0 if args.family == "regal" else 0.5,
                                 cpu_fraction=args.cpu_fraction,
                                 colocation_fraction=args.colocation_fraction,
                                 orphan_range=orphans)
    indices = list(range(len(problems)))
    if args.only_k:
        try:
            keep = {int(k) for k in args.only_k.split(",")}
        except ValueError:
            raise JaxplaceError(f"expected integers, got {args.only_k!r}",
                                field="--only-k") from None
        indices = [i for i, p in enumerate(problems) if p.k in keep]
        if not indices:
            raise JaxplaceError(f"no problem of the set has k in {sorted(keep)} "
                                f"(k cycles through {list(BENCH_KS)})", field="--only-k")
        problems = [problems[i] for i in indices]
    rows = run_policy_bench(problems, args.policy, methods, seed=args.seed,
                            indices=indices, heuristic_seeds=heuristic, dfs_anchor=anchor)
    text = summarize(rows, methods)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"held_out_problems({args.count}, seed={args.seed}, n_range="
                    f"{n_range}), family {args.family}\n\n{text}\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0



if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
