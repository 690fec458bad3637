"""`jaxplace info FILE`: sizes, totals, placement units, the shipped policy for the graph,
op types, heaviest ops and the lower bound."""

from __future__ import annotations

from jaxplace.cli.args import add_input_args, load_input

HELP = "describe a graph: sizes, totals, lower bound"


def add_arguments(p) -> None:
    add_input_args(p)
    p.add_argument("--top", type=int, default=5, help="how many heaviest ops to list")


def run(args) -> int:
    from collections import Counter

    import numpy as np

    from jaxplace.analysis import critical_path
    from jaxplace.objectives.throughput.cost import throughput_lower_bound
    from jaxplace.objectives.throughput.report import units

    problem, source = load_input(args, default_k=8)
    g = problem.graph
    unit = units(problem)
    w, p = _u(unit["work"]), _u(unit["param"])
    t = _u(unit["io_in"])
    lines = [
        f"graph       {source} ({g.meta.get('format', 'node-link')})",
        f"nodes       {g.num_nodes}",
        f"edges       {g.num_edges}",
        f"tensors     {g.num_tensors}",
        f"work        total {g.work.sum():.6g}{w}, max {g.work.max():.6g}{w} "
        f"(node {g.label(int(g.work.argmax()))})",
        f"params      total {g.size_param.sum():.6g}{p}, max {g.size_param.max():.6g}{p}"
        + (f" ({g.size_param.sum() / 1e9:.4g} GB)" if p else ""),
        f"tensor size total {g.tensor_size.sum():.6g}{t}",
        f"critical path work {critical_path(g):.6g}{w}",
        f"k           {problem.k}" + ("" if args.k else " (from file or default)"),
        f"bandwidth   {problem.bandwidth:g}",
    ]
    if problem.memory is not None:
        lines.append(f"memory M    {problem.memory:g}{p}")
    if problem.capacity is not None:
        lines.append(f"capacity    {problem.capacity:g}{p}")
    lines.append(f"lower bound {throughput_lower_bound(problem):.6g}{w} (simple: max(max work, "
                 f"total work / k))")
    for key in sorted(g.node_attrs):
        a = g.node_attrs[key]
        if a.dtype == bool:
            lines.append(f"{key:<11} {int(a.sum())} of {g.num_nodes} true")
    units = g.units
    if not units.trivial:
        lines.append(f"units       {units.num_units} placement units (colocation classes and "
                     f"the cycles they close), {len(units.free_units())} free (no "
                     f"ordering edge)")
    if problem.objective_impl.supports("identical_devices"):  # what the policies serve
        from jaxplace.policy import default_policy_name

        lines.append(f"policy      {default_policy_name(problem)} (the shipped one for "
                     f"this graph: --method policy|policy+brkga)")
    if g.op_types is not None:
        hist = Counter(g.op_types).most_common(10)
        lines.append("op types    " + ", ".join(f"{t} {c}" for t, c in hist))
    top = np.argsort(-g.work, kind="stable")[: args.top]
    lines.append("heaviest    " + ", ".join(f"{g.label(int(v))} {g.work[v]:.4g}{w}"
                                           for v in top))
    print("\n".join(lines))
    return 0


def _u(unit: str) -> str:
    """" us" / " bytes"; nothing when the graph states no unit (a plain graph
    file's numbers are in whatever unit its author used)."""
    return f" {unit}" if unit else ""
