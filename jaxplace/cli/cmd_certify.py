"""`jaxplace certify FILE -k K`: prove a lower bound with HiGHS and print the ladder.

It takes the problem options of `partition` (`args.add_problem_args`: -k, the cost
options, --cluster, --objective); the bounds are those of the objective the problem
resolves to."""

from __future__ import annotations

import argparse
import time

from jaxplace.cli.args import (
    add_output_arg,
    add_problem_args,
    add_quiet_arg,
    check_output,
    positive_int,
    problem_from_args,
    seconds,
)
from jaxplace.cli.runner import Clock, Runner, Stopped
from jaxplace.errors import JaxplaceError

HELP = "bound the optimum from below (HiGHS) and certify a partition"

#: Seconds the methods share without --time-limit (jaxplace.certify's default).
DEFAULT_SECONDS = 60.0


def add_arguments(p) -> None:
    # Only when `certify` is the chosen command (the bounds load HiGHS).
    from jaxplace.bounds import METHODS

    p.description = ("Run the lower-bound ladder (simple, bottleneck, bottleneck-guess, "
                     "exact MIP, LP relaxations) and print each bound, its ratio to the "
                     "best partition known, the solver status and the time. Methods: "
                     + ", ".join(METHODS))
    add_problem_args(p)
    p.add_argument("--partition", metavar="RESULT.json", default=None,
                   help="a result JSON whose partition to certify (default: the best of "
                   "random priority vectors)")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: picked per input, as "
                   "jaxplace.certify does: simple,ideals when the graph has at most "
                   "60,000 ideals, else the closed forms, bottleneck and exact MIPs, "
                   "with CPU blocks only the methods that model them; other "
                   "objectives: their own bounds)")
    p.add_argument("--time-limit", type=seconds, default=None,
                   help="seconds the whole command may take, counted from its start "
                   "(imports and reading the graph included); the methods share it "
                   f"(default: {DEFAULT_SECONDS:g} s for the methods, as "
                   "jaxplace.certify)")
    p.add_argument("--rung-time-limit", type=seconds, default=None,
                   help="seconds per method at most (default: its share of the time "
                   "left)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="HiGHS threads; parallel workers for bottleneck-guess")
    p.add_argument("--mip-rel-gap", type=float, default=1e-6,
                   help="relative gap at which a MIP stops (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    add_output_arg(p, "write the result JSON (best partition + certificate) here")
    add_quiet_arg(p)


def certify_and_print(problem, partition, *, methods, time_limit, threads, mip_rel_gap,
                      seed=0, quiet=False, rung_time_limit=None, picked=False):
    """Run `certify` with a progress bar and print the ladder; returns the Certificate.
    `time_limit`: seconds for the whole ladder; `rung_time_limit`: per method at most;
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
                       rung_time_limit=rung_time_limit,
                       threads=threads, mip_rel_gap=mip_rel_gap, seed=seed,
                       progress=progress,
                       **({"every_rung": False} if picked and
                          problem.objective_impl.supports("bound_registry") else {}))
    print(cert.summary())
    return cert


def default_bounds(problem, time_left: float | None = None
                   ) -> tuple[tuple[str, ...], str]:
    """(bounds, why) when none are named: the library's pick, the one `jp.certify` runs
    (`bounds.certificate.pick_methods`; `time_left`, the seconds left of a user's time
    limit: its count of ideals may take `bounds.certificate.PICK_SHARE` of them, as in
    `jp.certify`)."""
    from jaxplace.bounds.certificate import PICK_SHARE, pick_methods

    deadline = None if time_left is None else time.perf_counter() + PICK_SHARE * time_left
    return pick_methods(problem, deadline=deadline)


def run(args) -> int:
    from jaxplace.formats import save_result
    from jaxplace.formats.results import load_assignment, saved_fields, saved_problem

    check_output(args.output, inputs=[args.file, args.partition])
    clock = Clock(args.time_limit)  # the whole command, from the process's start
    t0 = time.perf_counter()

    def left() -> float:
        return clock.left() if clock.end is not None else \
            max(DEFAULT_SECONDS - (time.perf_counter() - t0), 0.1)

    given = tuple(f for f in ("k", "bandwidth", "memory", "capacity")
                  if getattr(args, f) is not None)
    k = saved_fields(args.partition).get("k") if args.partition else None
    if args.k is None and isinstance(k, int) and not isinstance(k, bool):
        args = argparse.Namespace(**{**vars(args), "k": k})  # the file may not give one
    problem, source = problem_from_args(args)
    if args.partition:  # certified under the problem it was saved with
        problem = saved_problem(args.partition, problem, given=given)
    if args.methods is None:
        methods, why = default_bounds(problem, time_left=left())
    else:
        methods, why = problem.objective_impl.check_bound_methods(args.methods), "--methods"
    partition = load_assignment(args.partition, problem) if args.partition else None
    per = "" if args.rung_time_limit is None else \
        f", at most {args.rung_time_limit:g}s per method"
    print(f"{source}: n={problem.n} k={problem.k} time limit "
          f"{args.time_limit or DEFAULT_SECONDS:g}s{per}, "
          f"{args.threads} thread(s); methods {','.join(methods)} ({why})", flush=True)
    with Runner(quiet=args.quiet) as runner:
        try:
            cert = runner.call(lambda: certify_and_print(
                problem, partition, methods=methods,
                time_limit=left(),
                rung_time_limit=args.rung_time_limit, picked=args.methods is None,
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
