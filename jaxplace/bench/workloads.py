"""`jaxplace bench workloads DIR`: every NeurIPS 2020 workload in a folder, our cost
next to the published optimum (Tarnawski et al. 2020, Table 1; mtpp.md section 5).

The workloads are the JSON files of github.com/msr-fiddle/dnn-partitioning; DIR defaults
to $JAXPLACE_DATA/dnn-partitioning (JAXPLACE_DATA defaults to ../shared/data). Exit
status 1 when the worst ratio misses the target (`TARGET`).
"""

from __future__ import annotations

import glob
import math
import os
import time

from jaxplace.cli.args import seconds

HELP = "partition every dnn-partitioning workload in a folder; compare with the optima"

#: The worst ratio of our cost to a published optimum that counts as reaching it (the
#: published values are rounded to 2 decimals).
TARGET = 1.0005

# (granularity folder, file stem) -> optimal max-load with contiguous splits, their DP.
PUBLISHED = {
    ("OperatorGraphs", "bert_l-3_inference"): 27.92,
    ("OperatorGraphs", "bert_l-6_inference"): 29.58,
    ("OperatorGraphs", "bert_l-12_inference"): 147.48,
    ("OperatorGraphs", "resnet50_inference"): 124.35,
    ("OperatorGraphs", "bert_l-3_training"): 65.30,
    ("OperatorGraphs", "bert_l-6_training"): 72.86,
    ("OperatorGraphs", "bert_l-12_training"): 438.00,
    ("OperatorGraphs", "resnet50_training"): 255.19,
    ("LayerGraphs", "bert24_inference"): 17.79,
    ("LayerGraphs", "resnet50_inference"): 33.77,
    ("LayerGraphs", "inceptionv3_inference"): 51.55,
    ("LayerGraphs", "gnmt_inference"): 32.91,
    ("LayerGraphs", "bert24_training"): 41.75,
    ("LayerGraphs", "resnet50_training"): 78.63,
    ("LayerGraphs", "inceptionv3_training"): 122.76,
    ("LayerGraphs", "gnmt_training"): 107.00,
}


def published_optimum(path: str) -> float | None:
    """The published optimum for a workload file, matched by folder and name."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    stem = os.path.splitext(os.path.basename(path))[0].lower()
    return PUBLISHED.get((folder, stem))


def default_folder() -> str:
    return os.path.join(os.environ.get("JAXPLACE_DATA") or os.path.join("..", "shared", "data"),
                        "dnn-partitioning")


def add_arguments(p) -> None:
    p.add_argument("folder", nargs="?", default=None,
                   help="folder searched recursively for *.json workloads (default: "
                   "$JAXPLACE_DATA/dnn-partitioning, JAXPLACE_DATA defaulting to "
                   "../shared/data)")
    p.add_argument("--time-limit", type=seconds, default=60.0, help="seconds per workload")
    p.add_argument("--method", default="default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", default=None, help="substring filter on file names")


def run(args) -> int:
    import jaxplace as jp
    from jaxplace.errors import JaxplaceError

    folder = args.folder or default_folder()
    files = sorted(glob.glob(os.path.join(folder, "**", "*.json"), recursive=True))
    files = [f for f in files if args.only is None or args.only in f]
    if not files:
        raise JaxplaceError("no *.json workloads found (git clone "
                            "https://github.com/msr-fiddle/dnn-partitioning and give its "
                            "folder, or set JAXPLACE_DATA)", source=folder)
    names = [os.path.splitext(os.path.relpath(f, folder))[0] for f in files]
    width = max(len("workload"), *map(len, names))
    print(f"{'workload':<{width}} {'nodes':>5} {'devices':>7} {'ours':>10} {'optimum':>9} "
          f"{'ratio':>7} {'time s':>7}")
    from jaxplace.progress import bar

    ratios = []
    pbar = bar(len(files), "workloads", unit="graph",
               enabled=False if getattr(args, "quiet", False) else None)
    for path, name in zip(files, names, strict=True):
        problem = jp.load_problem(path)
        t0 = time.perf_counter()
        result = jp.search(problem, method=args.method, seed=args.seed,
                           time_limit=args.time_limit, progress=False)
        wall = time.perf_counter() - t0
        opt = published_optimum(path)
        ratio = result.cost / opt if opt else math.nan
        if opt:
            ratios.append(ratio)
        print(f"{name:<{width}} {problem.n:>5} {f'{problem.k}+{problem.cpus}':>7} "
              f"{result.cost:>10.4f} {opt if opt else float('nan'):>9.2f} {ratio:>7.4f} "
              f"{wall:>7.1f}", flush=True)
        pbar.update(1)
    pbar.close()
    if not ratios:
        print("no workload with a published optimum: target not checked")
        return 0
    worst = max(ratios)
    met = worst <= TARGET
    print(f"worst ratio {worst:.4f} over {len(ratios)} workloads with a published "
          f"optimum (target <= {TARGET}): {'met' if met else 'MISSED'}")
    return 0 if met else 1
