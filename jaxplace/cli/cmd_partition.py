"""`jaxplace partition FILE -k K`: one flow for every kind of problem.

load -> Problem (`args.problem_from_args`: the graph, -k, the cost options, --cluster,
--objective) -> the planner (`jaxplace.search` under the `Runner`: Ctrl-C keeps the
incumbent, exit status 130) -> --certify -> the objective's report -> the result JSON
(`jaxplace.save_result`). Identical accelerators, unequal devices and latency are the
objectives a Problem resolves to; non-contiguous splits are the search method
"noncontiguous"; a model config with --cluster is split exactly (`partition_cluster`);
several inputs or k values are the batched run (`partition_many`)."""

from __future__ import annotations

import argparse
import math
import time

from jaxplace.cli.args import (
    add_output_arg,
    add_problem_args,
    add_quiet_arg,
    check_output,
    positive_int,
    problem_from_args,
    seconds,
    settled,
)
from jaxplace.cli.cmd_certify import certify_and_print, default_bounds
from jaxplace.cli.partition_cluster import is_config_file, run_config_on_cluster
from jaxplace.cli.runner import Clock, Runner, Stopped, search_limit
from jaxplace.errors import JaxplaceError

HELP = "partition a graph into pipeline stages"
DESCRIPTION = ("Search for a partition into at most k pipeline stages, print its stage "
               "table and its ratio to the best lower bound known, and write the result "
               "JSON with -o. Ctrl-C stops the search and keeps the best partition found "
               "(exit status 130).")
#: What the result JSON's "ip" block keeps of a method that solved its own IP.
_IP_FIELDS = ("bound", "gap", "status", "nodes", "start_cost", "start_source")


def add_arguments(p) -> None:
    add_problem_args(p)
    p.add_argument("--method", default=None,
                   help="search method (default: the strongest); policy and policy+brkga "
                   "use the shipped learned policy")
    p.add_argument("--policy", default=None, metavar="PATH",
                   help="a trained policy folder for --method policy|policy+brkga "
                   "(default: the shipped one for the graph: gnn-v3; gnn-v3-train "
                   "when it has colocation classes, gnn-v4-train when some are "
                   "orphan backward ops)")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="decoder evaluations to spend")
    p.add_argument("--time-limit", type=seconds, default=None,
                   help="seconds the whole command may take, counted from its start "
                   "(imports, reading the graph, compiling and --certify included; a "
                   "moment is kept for writing the result)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noncontiguous", action="store_true",
                   help="allow non-contiguous splits: the IP of Tarnawski et al. on HiGHS "
                   "(--method noncontiguous; --time-limit defaults to 60 s), scheduled as "
                   "a pipeline of virtual pieces")
    add_output_arg(p, "write the result JSON here")
    p.add_argument("--certify", action="store_true",
                   help="also prove a lower bound with HiGHS and print the ladder")
    p.add_argument("--bounds", default=None,
                   help="lower-bound methods for --certify (comma-separated; default: "
                   "picked per input: simple,ideals when the graph has at most 60,000 "
                   "ideals, else simple,bottleneck,exact, or simple,exact with CPU "
                   "blocks; other objectives: their own bounds)")
    p.add_argument("--certify-time", type=seconds, default=60.0,
                   help="seconds --certify may take, its methods sharing them (under "
                   "--time-limit at most what is left of it; default: %(default)s)")
    p.add_argument("--threads", type=positive_int, default=1, help="HiGHS threads")
    add_quiet_arg(p)


def _search_args(args, obj) -> tuple[argparse.Namespace, dict]:
    """The arguments with --noncontiguous settled (its IP, a default time limit) and the
    method options (--policy); --bounds checked against the objective before searching."""
    if args.bounds is not None:
        obj.check_bound_methods(args.bounds)
    options = {}
    if args.policy is not None:
        if not (args.method or "").lower().startswith("policy"):
            raise JaxplaceError("--policy applies to --method policy or policy+brkga",
                                field="--policy")
        options["policy"] = args.policy
    if not args.noncontiguous:
        return args, options
    from jaxplace.exact.noncontiguous import DEFAULT_TIME_LIMIT

    obj.require("noncontiguous", field="--noncontiguous")
    if args.method not in (None, "noncontiguous"):
        raise JaxplaceError(f"--noncontiguous runs its own IP; drop --method {args.method}",
                            field="--method")
    if args.certify:
        raise JaxplaceError("--certify bounds contiguous splits; --noncontiguous prints the "
                            "IP's own lower bound", field="--certify")
    return settled(args, method="noncontiguous",
                   time_limit=args.time_limit or DEFAULT_TIME_LIMIT), options


def settle_bound(problem, found, cert=None) -> tuple[float, str, str | None]:
    """(lower bound, its label, proved_by): the best bound known for `found` (a
    `Found`): the objective's closed form, a proof the search made (the planner's
    exact method, the non-contiguous IP's bound) or the certificate's."""
    info = found.info
    lower = float(getattr(found.result, "lower_bound", None)
                  or problem.objective_impl.lower_bound(problem))
    label, proved_by = "simple", info.get("proved_by")
    if proved_by and info.get("proof_lower_bound", 0.0) >= lower:
        lower, label = float(info["proof_lower_bound"]), f"proof: {proved_by}"
    elif "gap" in info and info.get("bound", 0.0) >= lower:  # the method's own IP
        lower = float(info["bound"])
        label = f"{found.method} IP: {info['status']}, gap {100 * info['gap']:.2f}%"
    if cert is not None and cert.lower_bound >= lower:  # ties: the ladder asked for
        lower, label = float(cert.lower_bound), f"certify: {cert.method}"
        proved_by = cert.method if cert.optimal else proved_by
    return lower, label, proved_by


def _ladder(problem, args) -> tuple[tuple[str, ...], str]:
    """(bounds, why) of --certify: --bounds, or the ones the objective picks for the
    input (on identical accelerators a count of ideals: under --time-limit at most
    `bounds.certificate.PICK_SHARE` of it), with their rungs loaded (the deferred ones
    import scipy and BB&R: 1-3 s under load)."""
    from jaxplace.bounds.registry import BOUNDS

    methods, why = ((problem.objective_impl.check_bound_methods(args.bounds), "--bounds")
                    if args.bounds else default_bounds(problem, time_left=args.time_limit))
    for m in methods:
        if m in BOUNDS:
            BOUNDS[m]  # noqa: B018 (loads a deferred rung)
    return methods, why


def _certify(problem, found, args, runner, clock: Clock, ladder=None):
    """The Certificate of --certify, or None when interrupted before it finished:
    the planner's proof when it made one, else the bounds of `ladder` (None: chosen
    now, `_ladder`) sharing --certify-time, at most what is left of --time-limit
    (`clock`): each rung gets its share of what is left when it starts
    (`jaxplace.bounds.certify`'s time_limit)."""
    info = found.info
    if info.get("proved_by") and not args.bounds \
            and found.result.cost <= info.get("proof_lower_bound", 0.0) * (1 + 1e-9):
        cert = _planner_certificate(problem, found.result.cost, info)
        print(f"certify: proven optimal by the planner's {info['proved_by']} "
              f"({info.get('exact_detail') or 'closed form'})", flush=True)
        print(cert.summary(), flush=True)
        return cert
    methods, why = ladder or _ladder(problem, args)
    print(f"certify with {','.join(methods)} ({why})", flush=True)
    try:
        return runner.call(lambda: certify_and_print(
            problem, getattr(found.result, "partition", found.result), methods=methods,
            time_limit=args.certify_time if clock.end is None else min(
                args.certify_time, clock.left()),
            threads=args.threads, mip_rel_gap=1e-6, seed=args.seed,
            quiet=args.quiet, picked=args.bounds is None))
    except Stopped:
        return None


def _planner_certificate(problem, cost: float, info: dict):
    """The Certificate of a plan the planner proved optimal (its exact method ran
    inside the search): the closed-form bound and the proof, without solving again."""
    from jaxplace.bounds.base import MethodResult
    from jaxplace.bounds.certificate import OPTIMAL_RTOL, Certificate

    method, lower = info["proved_by"], float(info["proof_lower_bound"])
    results = [MethodResult("simple", problem.objective_impl.lower_bound(problem),
                            "closed form", 0.0, kind="closed-form")]
    results += [MethodResult(method, lower, "Optimal", info.get("exact_s", 0.0), kind="dp")
                ] if method != "simple" else []
    return Certificate(lower, cost, None, "given", method, results, tolerance=OPTIMAL_RTOL,
                       settings={"methods": [r.name for r in results], "from": "planner"})


def _infeasible(problem, found) -> JaxplaceError:
    """The one-line refusal of a problem no partition fits (the capacity, or the
    cluster's device memory): proven, or none found."""
    field = "capacity" if problem.capacity is not None else (
        "cluster" if problem.cluster is not None else "problem")
    what = (f"capacity {problem.capacity:g}" if field == "capacity"
            else "the devices' memory")
    proof = found.info.get("proved_by")
    if math.isinf(problem.objective_impl.lower_bound(problem)):
        why = "an op's parameters alone exceed it"
    elif proof and math.isinf(found.info.get("proof_lower_bound", 0.0)):
        why = f"proven by {proof}"
    else:
        why = "the search found none; not proven infeasible"
    return JaxplaceError(f"no partition into {problem.k} blocks fits {what} ({why})",
                         field=field)


def _header(source: str, problem, found) -> str:
    info = found.info
    found_by, policy = info.get("found_by", found.method), info.get("policy")
    cluster = problem.cluster
    return (f"{source}: n={problem.n} k={problem.k} "
            + (f"cluster={cluster.name} " if cluster is not None else "")
            + f"method={found.method} "
            + (f"(its best, {info['method_best']:.6g}, did not beat its {found_by} start: "
               f"the plan is that start) " if "method_best" in info else
               f"found by {found_by} " if found_by != found.method else "")
            + (f"policy={policy} " if policy else "")
            + f"evaluations={found.evaluations} time={found.elapsed:.2f}s"
            + (f" ({found.stopped})" if found.stopped else ""))


def _print_fusion_line(meta) -> None:
    """What the ONNX importer fused (so costs compare with jaxplace.torch's); nothing
    for other inputs."""
    if meta.get("format") == "onnx":
        from jaxplace.importers.runtime_fusion import summary_line

        print(summary_line(meta), flush=True)


def run(args) -> int:
    from jaxplace.formats import save_result

    check_output(args.output, inputs=[args.file])
    if args.bounds is not None and not args.certify:  # never dropped without a word
        raise JaxplaceError("applies to --certify", field="--bounds")
    if args.cluster and is_config_file(args.file):  # a model config: the exact layer DP
        return run_config_on_cluster(args)
    problem, source = problem_from_args(args)
    obj = problem.objective_impl
    args, options = _search_args(args, obj)
    # --time-limit covers the whole command, from the process's start (imports and
    # reading the graph included) to its exit, less a reserve for printing and writing.
    # With --certify the limit is split between the search and the certificate: JAX
    # (1-4 s under load) and the ladder's rungs are imported first, so that neither
    # share pays for them
    import jaxplace.search  # noqa: F401

    ladder = _ladder(problem, args) if args.certify and args.time_limit else None
    clock = Clock(args.time_limit)
    with Runner(quiet=args.quiet) as runner:
        found = runner.search(problem, args, time_limit=search_limit(args, clock),
                              options=options)
        if found is None:
            return runner.nothing_written("a first solution was found")
        print(_header(source, problem, found), flush=True)
        _print_fusion_line(problem.graph.meta)
        best, cost, found_by = found.result, float(found.result.cost), \
            found.info.get("found_by", found.method)
        if not math.isfinite(cost):  # nothing to write: refused, exit 2
            raise _infeasible(problem, found)
        cert, timings = None, {"search_s": found.elapsed}
        if args.certify and not runner.interrupted:
            tc = time.perf_counter()
            cert = _certify(problem, found, args, runner, clock, ladder)
            timings["certify_s"] = time.perf_counter() - tc
            if cert is not None and cert.partition is not None and cert.partition_source \
                    != "given" and cert.upper_bound < cost * (1 - 1e-9):  # a bound's own
                best, cost, found_by = cert.partition, cert.upper_bound, cert.partition_source
                print(f"the certificate's {found_by} improved the partition:")
        for line in obj.report(problem, best, cert):
            print(line, flush=True)
        lower, label, proved_by = settle_bound(problem, found, cert)
        ratio = f"{cost / lower:.4f}" if lower > 0 else "n/a (bound 0)"
        print(f"{obj.cost_name} {obj.format_cost(cost)}   lower bound "
              f"{obj.format_cost(lower)} ({label})   ratio {ratio}")
        if args.output:
            proven = proved_by if cost <= lower * (1 + 1e-6) else None
            extra = {"evaluations": found.evaluations, "found_by": found_by, "proved_by": proven,
                     "policy": found.info.get("policy"), "stopped": found.stopped,
                     "ip": {k: v for k, v in found.info.items() if k in _IP_FIELDS}
                     if "gap" in found.info else None}  # a method's own IP: --noncontiguous
            save_result(args.output, problem, best, method=found.method, seed=args.seed,
                        lower_bound=lower, source=source, timings=timings, certificate=cert,
                        extra={k: v for k, v in extra.items() if v})
            print(f"wrote {args.output}")
        return runner.exit_status()
