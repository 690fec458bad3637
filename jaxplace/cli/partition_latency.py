"""`jaxplace partition FILE --cluster C --objective latency`: the makespan of one
inference on a cluster of unequal devices (`jaxplace.latency`).

Prints the per-device table (ops, busy time, memory), the makespan, the critical path
(every op on its fastest device, free transfers), the lower bound and the EFT greedy
baseline; -o writes the schedule JSON (`jaxplace.formats.results.latency_result_dict`).
"""

from __future__ import annotations

import sys
import time

from jaxplace.errors import JaxplaceError


def load_cluster_arg(args):
    """The Cluster of --cluster (a file or a shipped example name)."""
    from jaxplace.cluster import load_cluster

    if not getattr(args, "cluster", None):
        raise JaxplaceError("the latency objective needs a cluster: pass --cluster FILE "
                            "or one of moirai_inter, moirai_intra", field="--cluster")
    return load_cluster(args.cluster)


def throughput_cluster_k(args) -> int | None:
    """-k for --objective throughput with --cluster: only identical devices and links,
    whose device count is k unless -k is given (the cost parameters stay those of the
    graph/flags)."""
    c = load_cluster_arg(args)
    if not c.is_uniform:
        raise JaxplaceError("throughput needs identical devices and links; use "
                            "--objective latency for this cluster", source=args.cluster,
                            field="devices")
    return c.num_devices if args.k is None else args.k


def _problem(args):
    from jaxplace.cli.args import load_input
    from jaxplace.problem import Problem

    if args.k is not None:
        raise JaxplaceError("the latency objective uses every device of the cluster; "
                            "drop -k", field="-k")
    cluster = load_cluster_arg(args)
    base, source = load_input(args, default_k=1)
    try:
        problem = Problem(base.graph, cluster=cluster, objective="latency")
        problem.latency  # noqa: B018 (builds and checks the instance: memory fits)
    except JaxplaceError as exc:
        raise exc.with_source(args.cluster) from None
    return problem, source



def _incumbent(problem, x, evaluations: int):
    """(schedule, method, evaluations) after Ctrl-C or a time limit: the list schedule
    of the incumbent's priorities, or a baseline schedule when shorter (what the
    default search would have returned)."""
    import numpy as np

    from jaxplace.latency.baselines import BASELINES
    from jaxplace.latency.reference import list_schedule

    inst = problem.latency
    best, method = list_schedule(inst, np.asarray(x, np.float32)[:problem.n]), "incumbent"
    for name, fn in BASELINES.items():
        s = fn(inst)
        if s.makespan < best.makespan:
            best, method = s, f"baseline:{name}"
    return best, method, evaluations


def _certify(inst, sched, lb: float, args, seconds: float):
    """(schedule, lower bound, certificate dict): MOIRAI's MILP on HiGHS, warm-started
    from the search's schedule, for --certify-time seconds; its dual bound (and the
    cheap bounds) certify, and a better MILP incumbent replaces the schedule."""
    from jaxplace.latency.milp import latency_lower_bound, solve_moirai

    cheap = max(lb, latency_lower_bound(inst))
    print(f"certify: MOIRAI MILP, {seconds:g} s, warm start "
          f"{sched.makespan * 1e3:.6g} ms", file=sys.stderr, flush=True)
    r = solve_moirai(inst, time_limit=seconds, warm_start=sched,
                     threads=args.threads)
    improved = r.schedule is not None and r.makespan < sched.makespan * (1 - 1e-9)
    best = r.schedule if improved else sched
    bound = max(cheap, r.bound if r.bound == r.bound else 0.0)
    ratio = best.makespan / bound if bound > 0 else float("inf")
    print(f"certificate: lower bound {bound * 1e3:.6g} ms (MILP {r.status}, "
          f"{r.time:.1f} s)   makespan {best.makespan * 1e3:.6g} ms   ratio {ratio:.4f}"
          + ("   (MILP improved the schedule)" if improved else ""))
    return best, bound, {"method": "moirai-milp", "status": r.status,
                         "lower_bound": bound, "ratio": ratio, "time_s": r.time,
                         "optimal": bool(ratio <= 1 + 1e-6), "improved": bool(improved)}


def run_latency(args) -> int:
    from jaxplace.cli.args import check_output
    from jaxplace.cli.runner import Runner, search_limit
    from jaxplace.formats import save_result
    from jaxplace.latency.baselines import eft_greedy
    from jaxplace.latency.reference import critical_path, lower_bound
    from jaxplace.latency.summary import device_table

    t0 = time.perf_counter()
    check_output(args.output, inputs=[args.file])
    problem, source = _problem(args)
    inst = problem.latency
    with Runner(quiet=args.quiet) as runner:
        found, stopped = runner.search(problem, args, lambda x, ev, _: _incumbent(problem, x, ev),
                                       time_limit=search_limit(args))
        if found is None:
            print("jaxplace: interrupted before a first solution was found; nothing "
                  "written", file=sys.stderr)
            return 130
        if hasattr(found, "schedule"):
            sched, method, evals = found.schedule, found.method, found.evaluations
            if "baseline" in found.info:
                method = f"{method} (baseline:{found.info['baseline']})"
            if found.info.get("refined"):
                method = f"{method} + refine"
        else:  # after Ctrl-C or the time limit
            sched, method, evals = found
        elapsed = time.perf_counter() - t0
        print(f"{source}: n={problem.n} cluster={problem.cluster.name} "
              f"devices={inst.num_devices} method={method} evaluations={evals} "
              f"time={elapsed:.2f}s" + (f" ({stopped})" if stopped else ""), flush=True)
        print(device_table(inst, sched))
        lb, cp, eft = lower_bound(inst), critical_path(inst), eft_greedy(inst).makespan
        cert = None
        if args.certify and not runner.interrupted:
            seconds = args.certify_time
            if args.time_limit is not None:  # the limit covers the whole command
                left = args.time_limit - (time.perf_counter() - t0)
                seconds = max(min(seconds, left), 0.5)
            sched, lb, cert = _certify(inst, sched, lb, args, seconds)
            if cert["improved"]:
                method = f"{method} + milp"
        print(f"makespan {sched.makespan * 1e3:.6g} ms   critical path {cp * 1e3:.6g} ms   "
              f"lower bound {lb * 1e3:.6g} ms   ratio {sched.makespan / lb:.4f}   "
              f"EFT greedy {eft * 1e3:.6g} ms ({eft / sched.makespan:.3f}x)")
        if args.output:
            save_result(args.output, problem, sched, method=method, seed=args.seed,
                        lower_bound=lb, source=source, timings={"search_s": elapsed},
                        extra={"evaluations": evals, "eft_makespan": eft,
                               **({"certificate": cert} if cert else {}),
                               **({"stopped": stopped} if stopped else {})})
            print(f"wrote {args.output}")
        if runner.interrupted:
            print("jaxplace: interrupted", file=sys.stderr)
            return 130
    return 0


__all__ = ["load_cluster_arg", "run_latency", "throughput_cluster_k"]
