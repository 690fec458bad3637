"""`jaxplace partition FILE -k K`: find a partition, print its stages, write JSON.

The search runs under `jaxplace.cli.runner.Runner`: Ctrl-C stops it, the best
partition found so far is printed (and written with -o), and the exit status is 130.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from jaxplace.cli.args import (
    add_input_args,
    add_output_arg,
    add_quiet_arg,
    check_output,
    load_input,
    positive_int,
    seconds,
    settled,
)
from jaxplace.cli.runner import ratio_line, search_limit
from jaxplace.errors import JaxplaceError

HELP = "partition a graph into pipeline stages"
DESCRIPTION = ("Search for a partition into at most k pipeline stages, print its stage "
               "table and its ratio to the best lower bound known, and write the result "
               "JSON with -o. Ctrl-C stops the search and keeps the best partition found "
               "(exit status 130).")


def _methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise argparse.ArgumentTypeError("no methods given")
    return methods


def add_arguments(p) -> None:
    add_input_args(p)
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
                   help="seconds to spend at most (compile time included)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--noncontiguous", action="store_true",
                   help="allow non-contiguous splits: the IP of Tarnawski et al. on HiGHS "
                   "(--method noncontiguous; --time-limit defaults to 60 s), scheduled as "
                   "a pipeline of virtual pieces")
    add_output_arg(p, "write the result JSON here")
    p.add_argument("--certify", action="store_true",
                   help="also prove a lower bound with HiGHS and print the ladder")
    p.add_argument("--bounds", default=None, type=_methods,
                   help="lower-bound methods for --certify (comma-separated; default: "
                   "picked per input: simple,ideals when the graph has at most 60,000 "
                   "ideals, else simple,bottleneck,exact, or simple,exact with CPU "
                   "blocks)")
    p.add_argument("--certify-time", type=seconds, default=60.0,
                   help="seconds per lower-bound method for --certify")
    p.add_argument("--threads", type=positive_int, default=1, help="HiGHS threads")
    p.add_argument("--cluster", default=None, metavar="FILE_OR_EXAMPLE",
                   help="cluster file (devices, memory, links) or a shipped example: "
                   "moirai_inter, moirai_intra")
    p.add_argument("--objective", choices=("throughput", "latency"), default="throughput",
                   help="throughput: pipeline stages (the bottleneck); latency: the "
                   "makespan of one inference on --cluster")
    add_quiet_arg(p)


@dataclass
class Found:
    """The partition to report, however the search ended."""

    partition: object  # jaxplace Partition (order, cuts, assignment, cost)
    method: str
    evaluations: int
    elapsed: float
    stopped: str | None = None  # None, "stopped early", "interrupted", "time limit"
    result: object = None  # the search Result when the search returned


def _run_search(problem, args, runner) -> Found | None:
    """The search's result, or the incumbent after Ctrl-C or the time limit (its
    partition, else its priorities decoded by the NumPy reference); None when there
    was none yet. One runner for every objective: `Runner.search`."""
    options = {}
    if args.policy is not None:
        if not (args.method or "").lower().startswith("policy"):
            raise JaxplaceError("--policy applies to --method policy or policy+brkga",
                                field="--policy")
        options["policy"] = args.policy

    def incumbent(x, evaluations, latest):
        part = getattr(latest, "partition", None)
        if part is None:  # decode the incumbent's priorities (NumPy reference)
            from jaxplace.reference import decode_reference

            part = decode_reference(problem, x)
        return part, evaluations

    t0 = time.perf_counter()
    found, stopped = runner.search(problem, args, incumbent, time_limit=search_limit(args),
                                   options=options)
    elapsed = time.perf_counter() - t0
    if found is None:
        return None
    if isinstance(found, tuple):
        part, evaluations = found
        return Found(part, args.method or "default", evaluations, elapsed, stopped)
    if stopped == "stopped early" and runner.interrupted:
        stopped = "interrupted"
    return Found(found.partition, found.method, found.evaluations, elapsed, stopped, found)


def _certify(problem, assignment, args, runner, remaining: float | None):
    """The Certificate of --certify, or None when interrupted before it finished.
    `remaining`: seconds left of --time-limit (None: no limit), shared by the bounds."""
    from jaxplace.bounds.registry import BOUNDS, choose_methods
    from jaxplace.cli.cmd_certify import certify_and_print
    from jaxplace.cli.runner import Stopped

    methods, why = (args.bounds, "--bounds") if args.bounds else choose_methods(problem)
    per_method = args.certify_time
    if remaining is not None:
        solves = sum(1 for m in methods if m not in BOUNDS or BOUNDS[m].kind != "closed-form")
        per_method = max(min(per_method, remaining / max(solves, 1)), 0.05)
    print(f"certify with {','.join(methods)} ({why})", flush=True)
    try:
        return runner.call(lambda: certify_and_print(
            problem, assignment, methods=methods,
            time_limit=per_method,
            threads=args.threads, mip_rel_gap=1e-6, seed=args.seed, quiet=args.quiet))
    except Stopped:
        return None


def _planner_certificate(problem, cost: float, info: dict, lower: float):
    """The Certificate of a plan the planner proved optimal (its exact method ran
    inside the search): the simple bound and the proof, without solving again."""
    from jaxplace.bounds.base import MethodResult
    from jaxplace.bounds.certificate import OPTIMAL_RTOL, Certificate
    from jaxplace.cost import lower_bound

    method = info["proved_by"]
    results = [MethodResult("simple", lower_bound(problem), "closed form", 0.0,
                            kind="closed-form")]
    if method != "simple":
        results.append(MethodResult(method, lower, "Optimal", info.get("exact_s", 0.0),
                                    kind="dp"))
    return Certificate(lower_bound=lower, upper_bound=cost, partition=None,
                       partition_source="given", method=method, results=results,
                       tolerance=OPTIMAL_RTOL, settings={"methods": [r.name for r in results],
                                                         "from": "planner"})


def run(args) -> int:
    from jaxplace.cli.runner import Runner
    from jaxplace.cost import evaluate_partition, lower_bound
    from jaxplace.formats import save_result
    from jaxplace.report import stage_notes, stage_table

    if args.noncontiguous and (args.objective == "latency" or args.cluster):
        raise JaxplaceError("--noncontiguous splits identical accelerators (and CPU "
                            "blocks) for throughput; it does not take --cluster or "
                            "--objective latency", field="noncontiguous")
    if args.objective == "latency":
        from jaxplace.cli.partition_latency import run_latency

        return run_latency(args)
    if args.cluster:
        from jaxplace.cli.partition_cluster import is_config_file, run_config_on_cluster
        from jaxplace.cli.partition_latency import load_cluster_arg, throughput_cluster_k

        if is_config_file(args.file):  # a decoder config: exact split on any cluster
            return run_config_on_cluster(args, load_cluster_arg(args))
        cluster = load_cluster_arg(args)
        if not cluster.is_uniform:  # unequal devices: stages and device order searched
            from jaxplace.cli.partition_hetero import run_hetero

            return run_hetero(args, cluster)
        args = settled(args, k=throughput_cluster_k(args))
    if args.noncontiguous:
        from jaxplace.cli.partition_noncontiguous import check_args, report

        args = check_args(args)
    check_output(args.output, inputs=[args.file])
    t_start = time.perf_counter()
    problem, source = load_input(args)
    with Runner(quiet=args.quiet) as runner:
        found = _run_search(problem, args, runner)
        if found is None:
            print("jaxplace: interrupted before a first solution was found; nothing "
                  "written", file=sys.stderr)
            return 130
        best = found.partition  # a Partition (its order goes to the JSON) or blocks
        if args.noncontiguous:
            return report(problem, source, found, args, runner)
        cost = evaluate_partition(problem, best.assignment)
        info = getattr(found.result, "info", None) or {}
        policy = info.get("policy")
        found_by = info.get("found_by", found.method)
        print(f"{source}: n={problem.n} k={problem.k} method={found.method} "
              + (f"found by {found_by} " if found_by != found.method else "")
              + (f"policy={policy} " if policy else "")
              + f"evaluations={found.evaluations} time={found.elapsed:.2f}s"
              + (f" ({found.stopped})" if found.stopped else ""), flush=True)
        print(stage_table(problem, cost), flush=True)
        for line in stage_notes(problem, cost):
            print(line)
        lower, label = lower_bound(problem), "simple"
        proved_by = info.get("proved_by")
        if proved_by and info.get("proof_lower_bound", 0.0) >= lower:
            lower, label = info["proof_lower_bound"], f"proof: {proved_by}"
        timings, cert = {"search_s": found.elapsed}, None
        if args.certify and not runner.interrupted and proved_by and not args.bounds \
                and cost.bottleneck <= lower * (1 + 1e-9):
            cert = _planner_certificate(problem, cost.bottleneck, info, lower)
            print(f"certify: proven optimal by the planner's {proved_by} "
                  f"({info.get('exact_detail') or 'closed form'})", flush=True)
            print(cert.summary(), flush=True)
        elif args.certify and not runner.interrupted:
            tc = time.perf_counter()
            remaining = (None if args.time_limit is None
                         else args.time_limit - (tc - t_start))
            cert = _certify(problem, best.assignment, args, runner, remaining)
            timings["certify_s"] = time.perf_counter() - tc
        if cert is not None:
            if cert.lower_bound >= lower:  # ties: the ladder the user asked for
                lower, label = cert.lower_bound, f"certify: {cert.method}"
                proved_by = cert.method if cert.optimal else proved_by
            if cert.partition is not None and cert.upper_bound < cost.bottleneck:
                best = cert.partition  # a bound method found a better partition
                cost = evaluate_partition(problem, best)
                found_by = cert.partition_source
                print(f"the certificate's {found_by} improved the partition:")
                print(stage_table(problem, cost))
                for line in stage_notes(problem, cost):
                    print(line)
        print(ratio_line(cost.bottleneck, lower, label))
        if args.output:
            save_result(args.output, problem, best, method=found.method, seed=args.seed,
                        lower_bound=lower, source=source, timings=timings,
                        extra={"evaluations": found.evaluations, "found_by": found_by,
                               **({"proved_by": proved_by}
                                  if proved_by and cost.bottleneck <= lower * (1 + 1e-6)
                                  else {}),
                               **({"policy": policy} if policy else {}),
                               **({"stopped": found.stopped} if found.stopped else {})},
                        certificate=cert)
            print(f"wrote {args.output}")
        if runner.interrupted:
            print("jaxplace: interrupted", file=sys.stderr)
            return 130
    return 0
