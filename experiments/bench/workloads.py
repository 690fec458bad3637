"""`python -m experiments.bench.workloads DIR`: every NeurIPS 2020 workload in a folder, our cost
next to the published optimum (Tarnawski et al. 2020, Table 1; docs/problem.md section 5).

Each partition is then proven (unless --no-proof): `certify` with the ladder that
`bounds.registry.choose_methods` picks for the input (the DP over ideals when it has at
most 60,000 ideals, else the MIP ladder), reported as the method that gave the lower
bound, the bound, proven (yes: ratio 1 within the certificate's tolerance) and the
proof's wall time, beside the time of their single-core DP (Table 1). With
--noncontiguous SECONDS, the non-contiguous IP (`jp.search(method="noncontiguous")`)
too, beside their IP (non-contiguous) value.

The workloads are the JSON files of github.com/msr-fiddle/dnn-partitioning; DIR defaults
to $JAXPLACE_DATA/dnn-partitioning (JAXPLACE_DATA defaults to shared/data in the parent
folder of the working directory). Exit status 1 when the worst ratio misses the target
(`TARGET`).
"""

from __future__ import annotations

import glob
import math
import os
import time

from jaxplace.cmdline import seconds

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


#: Their DP's single-core runtime, Table 1 (same keys as PUBLISHED).
THEIR_DP_TIME = {
    ("OperatorGraphs", "bert_l-3_inference"): "1 s",
    ("OperatorGraphs", "bert_l-6_inference"): "5 s",
    ("OperatorGraphs", "bert_l-12_inference"): "19 s",
    ("OperatorGraphs", "resnet50_inference"): "0 s",
    ("OperatorGraphs", "bert_l-3_training"): "8 s",
    ("OperatorGraphs", "bert_l-6_training"): "25 s",
    ("OperatorGraphs", "bert_l-12_training"): "1 min",
    ("OperatorGraphs", "resnet50_training"): "2 s",
    ("LayerGraphs", "bert24_inference"): "0 s",
    ("LayerGraphs", "resnet50_inference"): "0 s",
    ("LayerGraphs", "inceptionv3_inference"): "32 min",
    ("LayerGraphs", "gnmt_inference"): "29 s",
    ("LayerGraphs", "bert24_training"): "0 s",
    ("LayerGraphs", "resnet50_training"): "1 s",
    ("LayerGraphs", "inceptionv3_training"): "58 min",
    ("LayerGraphs", "gnmt_training"): "42 s",
}

#: Their IP (non-contiguous) max-load, Table 1 (same keys as PUBLISHED).
THEIR_NONCONTIGUOUS = {
    ("OperatorGraphs", "bert_l-3_inference"): 21.91,
    ("OperatorGraphs", "bert_l-6_inference"): 28.33,
    ("OperatorGraphs", "bert_l-12_inference"): 130.03,
    ("OperatorGraphs", "resnet50_inference"): 124.35,
    ("OperatorGraphs", "bert_l-3_training"): 54.21,
    ("OperatorGraphs", "bert_l-6_training"): 71.64,
    ("OperatorGraphs", "bert_l-12_training"): 373.42,
    ("OperatorGraphs", "resnet50_training"): 255.19,
    ("LayerGraphs", "bert24_inference"): 17.71,
    ("LayerGraphs", "resnet50_inference"): 33.31,
    ("LayerGraphs", "inceptionv3_inference"): 51.52,
    ("LayerGraphs", "gnmt_inference"): 31.68,
    ("LayerGraphs", "bert24_training"): 39.79,
    ("LayerGraphs", "resnet50_training"): 76.65,
    ("LayerGraphs", "inceptionv3_training"): 117.72,
    ("LayerGraphs", "gnmt_training"): 88.47,
}


def _key(path: str) -> tuple[str, str]:
    folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return folder, os.path.splitext(os.path.basename(path))[0].lower()


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
                   "shared/data in the parent folder)")
    p.add_argument("--time-limit", type=seconds, default=60.0, help="seconds per workload")
    p.add_argument("--method", default="default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", default=None, help="substring filter on file names")
    p.add_argument("--no-proof", dest="proof", action="store_false",
                   help="skip the certificates (proof columns)")
    p.add_argument("--proof-time", type=seconds, default=60.0,
                   help="seconds per lower-bound method of a proof (default: %(default)s)")
    p.add_argument("--noncontiguous", type=seconds, default=None, metavar="SECONDS",
                   help="also run the non-contiguous IP for this long per workload")


def _prove(problem, result, time_limit: float):
    """(method, lower bound, proven, seconds) of the certificate of `result`."""
    import jaxplace as jp
    from jaxplace.bounds import choose_methods

    t0 = time.perf_counter()
    methods, _ = choose_methods(problem)
    cert = jp.certify(problem, getattr(result, "partition", None), methods=methods,
                      time_limit=time_limit, samples=4)
    return cert.method, cert.lower_bound, cert.optimal, time.perf_counter() - t0


def _noncontiguous(problem, path: str, time_limit: float) -> str:
    """`ours (theirs)` of the non-contiguous IP."""
    import jaxplace as jp

    theirs = THEIR_NONCONTIGUOUS.get(_key(path))
    res = jp.search(problem, method="noncontiguous", time_limit=time_limit, progress=False)
    return f"{res.cost:.2f} ({theirs if theirs else '-'})"


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
    proof = getattr(args, "proof", True)
    nonc = getattr(args, "noncontiguous", None)
    head = (f"{'workload':<{width}} {'nodes':>5} {'devices':>7} {'ours':>10} {'optimum':>9} "
            f"{'ratio':>7} {'time s':>7}")
    if proof:
        head += (f" {'proof':>8} {'lower bound':>11} {'proven':>6} {'proof s':>7} "
                 f"{'their DP':>8}")
    if nonc:
        head += f" {'non-contiguous (theirs)':>24}"
    print(head)
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
        line = (f"{name:<{width}} {problem.n:>5} {f'{problem.k}+{problem.cpus}':>7} "
                f"{result.cost:>10.4f} {opt if opt else float('nan'):>9.2f} {ratio:>7.4f} "
                f"{wall:>7.1f}")
        if proof:
            method, lb, proven, secs = _prove(problem, result,
                                              getattr(args, "proof_time", 60.0))
            line += (f" {method:>8} {lb:>11.4f} {'yes' if proven else 'no':>6} "
                     f"{secs:>7.1f} {THEIR_DP_TIME.get(_key(path), '-'):>8}")
        if nonc:
            line += f" {_noncontiguous(problem, path, nonc):>24}"
        print(line, flush=True)
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


if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
