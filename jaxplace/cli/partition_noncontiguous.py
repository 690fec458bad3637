"""`jaxplace partition FILE --noncontiguous`: the non-contiguous IP's split (Tarnawski
et al., NeurIPS 2020), its stage table with the virtual pieces per device, the IP's
bound and gap, and the result JSON with the virtual-device pipeline."""

from __future__ import annotations

import sys

from jaxplace.errors import JaxplaceError


def check_args(args):
    """The arguments of --noncontiguous, settled: --method noncontiguous, with a
    default time limit; it does not combine with --certify (whose bounds hold for
    contiguous splits only)."""
    from jaxplace.cli.args import settled
    from jaxplace.exact.noncontiguous import DEFAULT_TIME_LIMIT

    if args.method not in (None, "noncontiguous"):
        raise JaxplaceError(f"--noncontiguous runs its own IP; drop --method {args.method}",
                            field="--method")
    if args.certify:
        raise JaxplaceError("--certify bounds contiguous splits; --noncontiguous prints the "
                            "IP's own lower bound", field="--certify")
    if getattr(args, "cluster", None) or args.objective != "throughput":
        raise JaxplaceError("applies to the throughput objective without a cluster",
                            field="--noncontiguous")
    return settled(args, method="noncontiguous",
                   time_limit=DEFAULT_TIME_LIMIT if args.time_limit is None
                   else args.time_limit)


def report(problem, source: str, found, args, runner) -> int:
    """Print the stage table (with pieces) and the bound line, write -o; exit status."""
    from jaxplace.cli.runner import ratio_line
    from jaxplace.exact.noncontiguous import noncontiguous_lower_bound
    from jaxplace.exact.pieces import pipeline_cost, virtual_pieces
    from jaxplace.formats import save_result
    from jaxplace.report import stage_table

    result = found.result
    assignment = found.partition.assignment
    pieces = result.schedule if result is not None else virtual_pieces(problem, assignment)
    cost = pipeline_cost(problem, assignment, pieces)
    info = result.info if result is not None else {}
    print(f"{source}: n={problem.n} k={problem.k} method=noncontiguous "
          f"nodes={found.evaluations} time={found.elapsed:.2f}s"
          + (f" ({found.stopped})" if found.stopped else ""), flush=True)
    print(stage_table(problem, cost, pieces), flush=True)
    minimal = "fewest" if pieces.minimal else "not proven fewest"
    print(f"virtual pieces {pieces.num_pieces} ({minimal}); pipeline: "
          + " ".join(str(cost.stage_ids()[int(d)]) for d in pieces.device), flush=True)
    lower, label = noncontiguous_lower_bound(problem), "simple"
    if info.get("bound", 0.0) >= lower:
        lower = info["bound"]
        label = f"noncontiguous IP: {info['status']}, gap {100 * info['gap']:.2f}%"
    print(ratio_line(cost.bottleneck, lower, label))
    if args.output:
        extra = {"evaluations": found.evaluations,
                 **({"stopped": found.stopped} if found.stopped else {}),
                 **({"ip": {k: info[k] for k in ("bound", "gap", "status", "nodes",
                                                 "start_cost", "start_source")}}
                    if info else {})}
        save_result(args.output, problem, found.partition, method="noncontiguous",
                    seed=args.seed, lower_bound=lower, source=source,
                    timings={"search_s": found.elapsed}, extra=extra, schedule=pieces)
        print(f"wrote {args.output}")
    if runner.interrupted:
        print("jaxplace: interrupted", file=sys.stderr)
        return 130
    return 0
