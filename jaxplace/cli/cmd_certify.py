"""`jaxplace certify FILE -k K`: prove a lower bound with HiGHS and print the ladder."""

from __future__ import annotations

import math

from jaxplace.cli._common import add_input_args, load_input, positive_int
from jaxplace.errors import JaxplaceError


def add_parser(sub) -> None:
    from jaxplace.bounds import DEFAULT_METHODS, METHODS

    p = sub.add_parser(
        "certify", help="bound the optimum from below (HiGHS) and certify a partition",
        description="Run the lower-bound ladder (simple, bottleneck, bottleneck-guess, "
        "exact MIP, LP relaxations) and print each bound, its ratio to the best "
        "partition known, the solver status and the time. Methods: " + ", ".join(METHODS))
    add_input_args(p)
    p.add_argument("--partition", metavar="RESULT.json", default=None,
                   help="a result JSON whose partition to certify (default: the best of "
                   "random priority vectors)")
    p.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                   help="comma-separated methods (default: %(default)s)")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds per method (default: %(default)s)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="HiGHS threads; parallel workers for bottleneck-guess")
    p.add_argument("--mip-rel-gap", type=float, default=1e-6,
                   help="relative gap at which a MIP stops (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None,
                   help="write the result JSON (best partition + certificate) here")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=run)


def certify_and_print(problem, partition, *, methods, time_limit, threads, mip_rel_gap,
                      seed=0, quiet=False):
    """Run `certify` with a progress bar and print the ladder; returns the Certificate.

    Also used by `jaxplace partition --certify`.
    """
    from jaxplace.bounds import certify
    from jaxplace.progress import bar

    with bar(None, "certify", unit="s", enabled=False if quiet else None) as pb:
        def progress(method, t, inc, bnd):
            pb.set_description(method)
            pb.set_postfix(incumbent=f"{inc:.6g}", bound=f"{bnd:.6g}", t=f"{t:.1f}s")

        cert = certify(problem, partition, methods=methods, time_limit=time_limit,
                       threads=threads, mip_rel_gap=mip_rel_gap, seed=seed,
                       progress=progress)
    print(cert.summary())
    return cert


def run(args) -> int:
    from jaxplace.formats import save_result
    from jaxplace.formats.results import load_assignment

    problem, source = load_input(args)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise JaxplaceError("no methods given", field="--methods")
    if not (args.time_limit > 0) or math.isnan(args.time_limit):
        raise JaxplaceError(f"must be positive, got {args.time_limit}", field="--time-limit")
    from jaxplace.bounds.certificate import _check_method

    for m in methods:
        _check_method(m)
    partition = None
    if args.partition:
        partition = load_assignment(args.partition, problem)
    print(f"{source}: n={problem.n} k={problem.k} time limit {args.time_limit:g}s per "
          f"method, {args.threads} thread(s)")
    cert = certify_and_print(problem, partition, methods=methods,
                             time_limit=args.time_limit, threads=args.threads,
                             mip_rel_gap=args.mip_rel_gap, seed=args.seed,
                             quiet=args.quiet)
    if args.output:
        if cert.partition is None:
            raise JaxplaceError("no feasible partition to write", field="--output")
        save_result(args.output, problem, cert.partition, method=f"certify:"
                    f"{cert.partition_source}", seed=args.seed,
                    lower_bound=cert.lower_bound, certificate=cert, source=source)
        print(f"wrote {args.output}")
    return 0
