"""`jaxplace partition FILE -k K`: find a partition, print its stages, write JSON."""

from __future__ import annotations

import time

import numpy as np

from jaxplace.cli._common import add_input_args, load_input, positive_int
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.progress import bar
from jaxplace.reference import decode_reference
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
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def random_reference(problem, budget: int, seed: int, time_limit: float | None,
                     progress: bool | None = None):
    """Best of `budget` uniform priority vectors through the NumPy reference decoder.

    Ctrl-C stops early and keeps the best partition found so far.
    """
    rng = np.random.default_rng(seed)
    best, start, done = None, time.perf_counter(), 0
    with bar(budget, "random", enabled=progress) as pb:
        try:
            for _ in range(budget):
                part = decode_reference(problem, rng.random(problem.n))
                done += 1
                if best is None or part.cost < best.cost:
                    best = part
                    pb.set_postfix(best=f"{best.cost:.6g}")
                pb.update(1)
                if time_limit is not None and time.perf_counter() - start > time_limit:
                    break
        except KeyboardInterrupt:
            if best is None:
                raise
    return best, done


def run(args) -> int:
    from jaxplace.formats import save_result

    problem, source = load_input(args)
    t0 = time.perf_counter()
    method = args.method or "random"
    budget = args.budget or 200
    best, evaluations = random_reference(problem, budget, args.seed, args.time_limit,
                                         progress=False if args.quiet else None)
    elapsed = time.perf_counter() - t0
    cost = evaluate_partition(problem, best.assignment)
    lb = simple_lower_bound(problem)
    print(f"{source}: n={problem.n} k={problem.k} method={method} "
          f"evaluations={evaluations} time={elapsed:.2f}s")
    print(stage_table(problem, cost))
    ratio = cost.bottleneck / lb if lb > 0 else float("nan")
    print(f"bottleneck {cost.bottleneck:.6g}   lower bound {lb:.6g} (simple)   "
          f"ratio {ratio:.4f}")
    if args.output:
        save_result(args.output, problem, best, method=method, seed=args.seed,
                    lower_bound=lb, source=source,
                    timings={"search_s": elapsed}, extra={"evaluations": evaluations})
        print(f"wrote {args.output}")
    return 0
