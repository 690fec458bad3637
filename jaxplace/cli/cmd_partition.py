"""`jaxplace partition FILE -k K`: find a partition, print its stages, write JSON."""

from __future__ import annotations

import argparse
import time

from jaxplace.cli._common import add_input_args, load_input, positive_int
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.report import stage_table


def add_parser(sub) -> None:
    p = sub.add_parser("partition", help="partition a graph into pipeline stages")
    add_input_args(p)
    p.add_argument("--method", default=None, help="search method (default: the strongest)")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="decoder evaluations to spend")
    p.add_argument("--time-limit", type=float, default=None, help="seconds to spend at most")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None, help="write the result JSON here")
    p.add_argument("--certify", action="store_true",
                   help="also prove a lower bound with HiGHS and print the ladder")
    p.add_argument("--bounds", default="simple,bottleneck,exact", type=_methods,
                   help="lower-bound methods for --certify (comma-separated)")
    p.add_argument("--certify-time", type=float, default=60.0,
                   help="seconds per lower-bound method for --certify")
    p.add_argument("--threads", type=positive_int, default=1, help="HiGHS threads")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def _methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise argparse.ArgumentTypeError("no methods given")
    return methods


def run(args) -> int:
    from jaxplace.formats import save_result
    from jaxplace.search import search

    problem, source = load_input(args)
    t0 = time.perf_counter()
    result = search(problem, args.method, budget=args.budget, seed=args.seed,
                    time_limit=args.time_limit, progress=False if args.quiet else None)
    elapsed = time.perf_counter() - t0
    best = result.partition
    cost = evaluate_partition(problem, best.assignment)
    lb = simple_lower_bound(problem)
    print(f"{source}: n={problem.n} k={problem.k} method={result.method} "
          f"evaluations={result.evaluations} time={elapsed:.2f}s"
          + (" (stopped early)" if result.interrupted else ""))
    print(stage_table(problem, cost))
    ratio = cost.bottleneck / lb if lb > 0 else float("nan")
    print(f"bottleneck {cost.bottleneck:.6g}   lower bound {lb:.6g} (simple)   "
          f"ratio {ratio:.4f}")
    extra = {"evaluations": result.evaluations}
    timings = {"search_s": elapsed}
    lower, cert = lb, None
    if args.certify:
        from jaxplace.cli.cmd_certify import certify_and_print

        tc = time.perf_counter()
        cert = certify_and_print(problem, best.assignment, methods=args.bounds,
                                 time_limit=args.certify_time, threads=args.threads,
                                 mip_rel_gap=1e-6, seed=args.seed, quiet=args.quiet)
        timings["certify_s"] = time.perf_counter() - tc
        lower = max(lb, cert.lower_bound)
        if cert.upper_bound < cost.bottleneck:  # the exact MIP found a better partition
            best = cert.partition
            print("the exact MIP improved the partition:")
            print(stage_table(problem, evaluate_partition(problem, best)))
    if args.output:
        save_result(args.output, problem, best, method=result.method, seed=args.seed,
                    lower_bound=lower, source=source, timings=timings, extra=extra,
                    certificate=cert)
        print(f"wrote {args.output}")
    return 0
