"""Benchmark of the non-contiguous IP on the NeurIPS 2020 workloads.

    python -m experiments.bench.noncontiguous_workloads $JAXPLACE_DATA/dnn-partitioning \\
        [--time-limit 120] [NAME...]

Per workload: the warm start (the DP over ideals' contiguous optimum, or the DFS split),
the IP's split, its proven bound and gap at the time limit (everything, warm start
included, within the limit), the seconds until the incumbent came within 1% of
Table 1's IP (non-contiguous) value and until the proven gap fell to 1% (their stopping
rule), the virtual pieces, beside Table 1 of Tarnawski et al. (Gurobi, 4 cores, 1% gap,
20 min at most).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

#: workload -> (their IP (non-contiguous) max-load, their IP time), Table 1
PUBLISHED_NONCONTIGUOUS = {
    "LayerGraphs/bert24_inference": (17.71, ">20 min (1 s*)"),
    "LayerGraphs/gnmt_inference": (31.68, "9 s"),
    "LayerGraphs/inceptionv3_inference": (51.52, "19 s"),
    "LayerGraphs/resnet50_inference": (33.31, "14 s"),
    "LayerGraphs/resnet50_training": (76.65, "15 s"),
    "OperatorGraphs/bert_l-12_inference": (130.03, ">20 min (18 s*)"),
    "OperatorGraphs/bert_l-3_inference": (21.91, "2 s"),
    "OperatorGraphs/bert_l-3_training": (54.21, "1 s"),
    "OperatorGraphs/bert_l-6_inference": (28.33, "54 s (3 s*)"),
    "OperatorGraphs/resnet50_inference": (124.35, "1 min (10 s*)"),
}

HEADER = ("| workload | units | IP size (cols/rows/nnz) | warm start | contiguous (theirs) "
          "| ours | bound | gap | status | time s | to 1% of theirs s | gap 1% s | pieces "
          "| theirs | their time | ours/theirs |\n" + "|---" * 16 + "|")


def _first(history, offset: float, test) -> str:
    for t, inc, bnd in history:
        if test(inc, bnd):
            return f"{t + offset:.1f}"
    return "-"


def bench_one(path: Path, name: str, time_limit: float, threads: int,
              effort: float | None = None) -> str:
    import jaxplace as jp
    from experiments.bench.dp_workloads import PUBLISHED
    from jaxplace.exact import solve_noncontiguous

    problem = jp.load_problem(path)
    theirs, their_time = PUBLISHED_NONCONTIGUOUS.get(name, (math.nan, "?"))
    contig = PUBLISHED.get(name, (math.nan,))[0]
    try:
        r = solve_noncontiguous(problem, time_limit=time_limit, threads=threads,
                                heuristic_effort=effort)
    except jp.JaxplaceError as exc:
        return f"| {name} | {_units(problem)} | {exc.message} |"
    off = r.times["start"] + r.times["build"]
    near = _first(r.history, off, lambda inc, bnd: inc <= theirs * 1.01)
    if near == "-" and r.start_cost <= theirs * 1.01:
        near = f"{r.times['start']:.1f}"
    gap1 = _first(r.history, off, lambda inc, bnd: inc - bnd <= 0.01 * inc)
    cols, rows, nnz = r.size
    pieces = f"{r.pieces.num_pieces}" + ("" if r.pieces.minimal else " (ub)")
    return (f"| {name} | {_units(problem)} | {cols}/{rows}/{nnz} | {r.start_source} "
            f"{r.start_cost:.4f} | {contig:.2f} | {r.cost:.4f} | {r.bound:.4f} | "
            f"{100 * r.gap:.2f}% | {r.status} | {r.time:.1f} | {near} | {gap1} | {pieces} | "
            f"{theirs:.2f} | {their_time} | {r.cost / theirs:.4f} |")


def _units(problem) -> int:
    from jaxplace.exact import placement_units

    return placement_units(problem).num_units


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", help="folder holding throughput/{Layer,Operator}Graphs")
    ap.add_argument("only", nargs="*", help="substrings of workload names to run")
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="seconds per workload, warm start included (default 120)")
    ap.add_argument("--threads", type=int, default=1, help="HiGHS threads")
    ap.add_argument("--heuristic-effort", type=float, default=0.3,
                    help="HiGHS mip_heuristic_effort (default 0.3, SolveOptions' default)")
    args = ap.parse_args(argv)
    root = Path(args.data) / "throughput"
    print(HEADER, flush=True)
    for path in sorted(root.glob("*/*.json")):
        name = f"{path.parent.name}/{path.stem}"
        if args.only and not any(s in name for s in args.only):
            continue
        print(bench_one(path, name, args.time_limit, args.threads,
                        args.heuristic_effort), flush=True)


if __name__ == "__main__":
    main()
