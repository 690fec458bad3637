"""`jaxplace partition FILE --cluster C --objective throughput` on unequal devices:
pipeline stages on distinct devices, node order and device order searched together
(`jaxplace.hetero`).

Prints the per-stage table (device, ops, compute, transfers in and out, total time,
memory), the bottleneck, the lower bound (`jaxplace.hetero.bound`) and the DFS order
on the devices fastest first for comparison; -o writes the stage plan as JSON.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.hetero.report import result_dict, stage_rows, stage_table


def _problem(args, cluster):
    from jaxplace.cli.args import load_input
    from jaxplace.problem import Problem

    base, source = load_input(args, default_k=1)
    k = cluster.num_devices if args.k is None else args.k
    try:
        problem = Problem(base.graph, k=k, cluster=cluster, objective="throughput")
    except JaxplaceError as exc:
        raise exc.with_source(args.cluster) from None
    return problem, source



def _row(problem, x) -> np.ndarray:
    """(n + d,) node priorities and device keys of an incumbent's search row."""
    from jaxplace.hetero.decoder import make_spec
    from jaxplace.hetero.search import speed_keys

    inst = problem.pipeline_instance
    n, d = inst.n, inst.num_devices
    x = np.asarray(x, np.float32)
    spec = make_spec(inst, problem.k)
    if len(x) == spec.width:
        return np.concatenate([x[:n], x[spec.N:spec.N + d]])
    return x if len(x) == n + d else np.concatenate([x[:n], speed_keys(inst)])


def run_hetero(args, cluster) -> int:
    from jaxplace.cli.args import check_output
    from jaxplace.cli.runner import Runner, search_limit
    from jaxplace.hetero.bound import lower_bound
    from jaxplace.hetero.reference import decode, evaluate_stages
    from jaxplace.hetero.search import speed_keys
    from jaxplace.jsonio import write_json
    from jaxplace.search.baselines import dfs_order, order_to_priorities

    if getattr(args, "certify", False):  # the load bound is all there is (yet)
        print("jaxplace: note: --certify on unequal devices gives the load bound "
              "(fractional compute over the devices, `hetero.bound`), no MIP",
              file=sys.stderr)
    check_output(args.output, inputs=[args.file])
    problem, source = _problem(args, cluster)
    inst = problem.pipeline_instance
    t0 = time.perf_counter()
    with Runner(quiet=args.quiet) as runner:
        found, stopped = runner.search(problem, args, lambda x, ev, _: (x, "incumbent", ev),
                                       time_limit=search_limit(args))
        if found is None:
            print("jaxplace: interrupted before a first solution was found; nothing "
                  "written", file=sys.stderr)
            return 130
        if isinstance(found, tuple):  # after Ctrl-C or the time limit
            x, method, evals = found
            part = decode(inst, _row(problem, x), problem.k)
        else:
            part, method, evals = found.partition, found.method, found.evaluations
        sc = evaluate_stages(inst, part.assignment, part.devices)
        elapsed = time.perf_counter() - t0
        print(f"{source}: n={problem.n} cluster={problem.cluster.name} k={problem.k} "
              f"method={method} evaluations={evals} time={elapsed:.2f}s"
              + (f" ({stopped})" if stopped else ""), flush=True)
        print(stage_table(inst, sc))
        lb = lower_bound(inst, problem.k)
        x_dfs = np.concatenate([order_to_priorities(dfs_order(problem.graph)),
                                speed_keys(inst)])
        dfs = decode(inst, x_dfs, problem.k).cost
        ratio = f"{sc.bottleneck / lb:.4f}" if lb > 0 else "n/a"
        print(f"bottleneck {sc.bottleneck * 1e3:.6g} ms   lower bound {lb * 1e3:.6g} ms "
              f"(compute / devices)   ratio {ratio}   DFS fastest-first "
              f"{dfs * 1e3:.6g} ms ({dfs / sc.bottleneck:.3f}x)")
        if args.output:
            write_json(args.output, result_dict(
                problem, part, sc, method=method, lower_bound=lb, source=source,
                extra={"seed": args.seed, "evaluations": evals, "search_s": elapsed,
                       **({"stopped": stopped} if stopped else {})}))
            print(f"wrote {args.output}")
        if runner.interrupted:
            print("jaxplace: interrupted", file=sys.stderr)
            return 130
    return 0


__all__ = ["result_dict", "run_hetero", "stage_rows", "stage_table"]
