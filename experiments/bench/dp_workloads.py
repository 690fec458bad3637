"""Benchmark of the DP over ideals on the NeurIPS 2020 workloads.

    python -m experiments.bench.dp_workloads $JAXPLACE_DATA/dnn-partitioning [--no-search] [NAME...]

Per workload: the default search's cost and time (the pruning bound), then the DP's
atoms, ideals, pieces evaluated, time and optimum, beside Table 1 of Tarnawski et al.
(optimum, ideals, their single-core C++ DP time). `--no-search` prunes with the
published optimum + 0.005 instead (its rounding), to time the DP alone.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

#: workload -> (published optimum, their ideal count, their DP time), Table 1
PUBLISHED = {
    "LayerGraphs/bert24_inference": (17.79, 30, "0 s"),
    "LayerGraphs/gnmt_inference": (32.91, 17914, "29 s"),
    "LayerGraphs/inceptionv3_inference": (51.55, 36596, "32 min"),
    "LayerGraphs/resnet50_inference": (33.77, 242, "0 s"),
    "LayerGraphs/resnet50_training": (78.63, 242, "1 s"),
    "OperatorGraphs/bert_l-12_inference": (147.48, 2906, "19 s"),
    "OperatorGraphs/bert_l-3_inference": (27.92, 1428, "1 s"),
    "OperatorGraphs/bert_l-3_training": (65.30, 2774, "8 s"),
    "OperatorGraphs/bert_l-6_inference": (29.58, 1923, "5 s"),
    "OperatorGraphs/resnet50_inference": (124.35, 241, "0 s"),
}

HEADER = ("| workload | units | atoms | ideals (theirs) | search cost | search s | pieces "
          "| DP s | optimum | published | their DP |\n|---|---|---|---|---|---|---|---|---|"
          "---|---|")


def bench_one(path: Path, name: str, use_search: bool) -> str:
    import jaxplace as jp
    from jaxplace.exact import solve_ideals

    problem = jp.load_problem(path)
    pub, their_ideals, their_time = PUBLISHED.get(name, (math.nan, "?", "?"))
    t0 = time.perf_counter()
    if use_search:
        found = jp.search(problem, progress=False)
        ub, s_cost, s_time = None, f"{found.cost:.4f}", time.perf_counter() - t0
        part = found.partition
    else:
        ub, s_cost, s_time, part = pub + 0.005, "-", 0.0, None
    try:
        res = solve_ideals(problem, ub, partition=part, search=False)
    except jp.JaxplaceError as exc:
        return f"| {name} | {problem.graph.units.num_units} | | {exc.message} |"
    opt = f"{res.cost:.4f}" if res.status == "optimal" else res.status
    return (f"| {name} | {res.num_units} | {res.num_atoms} | {res.num_ideals} "
            f"({their_ideals}) | {s_cost} | {s_time:.1f} | {res.pieces:,} | "
            f"{res.times['total']:.1f} | {opt} | {pub:.2f} | {their_time} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="folder holding throughput/{Layer,Operator}Graphs")
    ap.add_argument("only", nargs="*", help="substrings of workload names to run")
    ap.add_argument("--no-search", action="store_true",
                    help="prune with the published optimum instead of the search's cost")
    args = ap.parse_args(argv)
    root = Path(args.data) / "throughput"
    print(HEADER, flush=True)
    for path in sorted(root.glob("*/*.json")):
        name = f"{path.parent.name}/{path.stem}"
        if args.only and not any(s in name for s in args.only):
            continue
        print(bench_one(path, name, not args.no_search), flush=True)


if __name__ == "__main__":
    main()
