"""`jaxplace certify FILE -k K`: prove a lower bound with HiGHS and print the ladder.

It takes the problem options of `partition` (`args.add_problem_args`: -k, the cost
options, --cluster, --objective); the bounds are those of the objective the problem
resolves to."""

from __future__ import annotations

from jaxplace.cli.args import (
    add_output_arg,
    add_problem_args,
    add_quiet_arg,
    check_output,
    positive_int,
    problem_from_args,
    seconds,
)
from jaxplace.cli.runner import Runner, Stopped
from jaxplace.errors import JaxplaceError

HELP = "bound the optimum from below (HiGHS) and certify a partition"


def add_arguments(p) -> None:
    # Only when `certify` is the chosen command (the bounds load HiGHS).
    from jaxplace.bounds import DEFAULT_METHODS, METHODS

    p.description = ("Run the lower-bound ladder (simple, bottleneck, bottleneck-guess, "
                     "exact MIP, LP relaxations) and print each bound, its ratio to the "
                     "best partition known, the solver status and the time. Methods: "
                     + ", ".join(METHODS))
    add_problem_args(p)
    p.add_argument("--partition", metavar="RESULT.json", default=None,
                   help="a result JSON whose partition to certify (default: the best of "
                   "random priority vectors)")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: picked per input: "
                   "simple,ideals when the graph has at most 60,000 ideals, else "
                   f"{','.join(DEFAULT_METHODS)}, with CPU blocks only the MIPs that "
                   "model them; other objectives: their own bounds)")
    p.add_argument("--time-limit", type=seconds, default=60.0,
                   help="seconds per method (default: %(default)s)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="HiGHS threads; parallel workers for bottleneck-guess")
    p.add_argument("--mip-rel-gap", type=float, default=1e-6,
                   help="relative gap at which a MIP stops (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    add_output_arg(p, "write the result JSON (best partition + certificate) here")
    add_quiet_arg(p)


def certify_and_print(problem, partition, *, methods, time_limit, threads, mip_rel_gap,
                      seed=0, quiet=False, total_time=None, picked=False):
    """Run `certify` with a progress bar and print the ladder; returns the Certificate.
    `total_time`: seconds for the whole ladder (None: `time_limit` per method only);
    `picked`: the methods were picked for the user (not named), so the ladder stops at
    a proof where the objective's ladder can.

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
                       progress=progress,
                       **({} if total_time is None else {"total_time": total_time}),
                       **({"every_rung": False} if picked and
                          problem.objective_impl.supports("bound_registry") else {}))
    print(cert.summary())
    return cert


def default_bounds(problem, mips=None, deadline: float | None = None
                   ) -> tuple[tuple[str, ...], str]:
    """(bounds, why) when none are named: on identical accelerators the ladder that
    proves the input fastest (`bounds.registry.choose_methods`; `deadline`, a
    perf_counter time under a user's time limit, bounds its count of ideals), else the
    objective's default bounds."""
    obj = problem.objective_impl
    if not obj.supports("identical_devices"):
        return tuple(obj.default_bounds), f"the default bounds of {obj.label}"
    from jaxplace.bounds.registry import choose_methods

    return (choose_methods(problem, deadline=deadline) if mips is None
            else choose_methods(problem, mips, deadline=deadline))


def run(args) -> int:
    from jaxplace.bounds import DEFAULT_METHODS
    from jaxplace.formats import save_result
    from jaxplace.formats.results import load_assignment

    check_output(args.output, inputs=[args.file, args.partition])
    problem, source = problem_from_args(args)
    if args.methods is None:
        methods, why = default_bounds(problem, DEFAULT_METHODS[1:])
    else:
        methods, why = problem.objective_impl.check_bound_methods(args.methods), "--methods"
    partition = load_assignment(args.partition, problem) if args.partition else None
    print(f"{source}: n={problem.n} k={problem.k} time limit {args.time_limit:g}s per "
          f"method, {args.threads} thread(s); methods {','.join(methods)} ({why})",
          flush=True)
    with Runner(quiet=args.quiet) as runner:
        try:
            cert = runner.call(lambda: certify_and_print(
                problem, partition, methods=methods, time_limit=args.time_limit,
                picked=args.methods is None,
                threads=args.threads, mip_rel_gap=args.mip_rel_gap, seed=args.seed,
                quiet=args.quiet))
        except Stopped:
            cert = None
        if runner.interrupted:
            return runner.nothing_written("the certificate was complete")
    if args.output:
        if cert.partition is None:
            raise JaxplaceError("no feasible partition to write", field="--output")
        save_result(args.output, problem, cert.partition, method=f"certify:"
                    f"{cert.partition_source}", seed=args.seed,
                    lower_bound=cert.lower_bound, certificate=cert, source=source)
        print(f"wrote {args.output}")
    return 0
