"""Reports of a pipeline on unequal devices: the per-stage rows and table, and the
result JSON (`FORMAT`)."""

from __future__ import annotations

from jaxplace.importers.provenance import original_groups
from jaxplace.objectives.throughput_unequal.reference import decode
from jaxplace.objectives.throughput_unequal.search import speed_keys

FORMAT = "jaxplace-hetero-result/1"


def stage_rows(inst, sc) -> list[dict]:
    """One dict per stage: device name, ops, seconds, bytes."""
    return [{"stage": s, "device": inst.device_names[int(sc.devices[s])],
             "ops": int(sc.ops[s]), "compute_s": float(sc.compute[s]),
             "transfer_in_s": float(sc.transfer_in[s]),
             "transfer_out_s": float(sc.transfer_out[s]), "total_s": float(sc.total[s]),
             "memory_bytes": float(sc.memory[s]),
             "capacity_bytes": float(inst.capacity[int(sc.devices[s])])}
            for s in range(sc.num_stages)]


def stage_table(inst, sc) -> str:
    """A text table of `stage_rows` (times in ms, memory in GB)."""
    rows = stage_rows(inst, sc)
    w = max(6, *(len(r["device"]) for r in rows))
    lines = [f"{'stage':>5}  {'device':<{w}}  {'ops':>6}  {'compute ms':>10}  "
             f"{'in ms':>9}  {'out ms':>9}  {'total ms':>10}  {'memory GB':>10}  {'of GB':>8}"]
    for r in rows:
        lines.append(f"{r['stage']:>5}  {r['device']:<{w}}  {r['ops']:>6}  "
                     f"{r['compute_s'] * 1e3:>10.4g}  {r['transfer_in_s'] * 1e3:>9.4g}  "
                     f"{r['transfer_out_s'] * 1e3:>9.4g}  {r['total_s'] * 1e3:>10.4g}  "
                     f"{r['memory_bytes'] / 1e9:>10.4g}  {r['capacity_bytes'] / 1e9:>8.4g}")
    return "\n".join(lines)


def result_dict(problem, part, sc, *, method: str, lower_bound: float, source: str,
                extra: dict) -> dict:
    """The JSON-ready stage plan (ops named by `node_ids`, as every result does, so
    that `load_assignment` and `export` match them to a graph)."""
    inst = problem.pipeline_instance
    order = getattr(part, "order", None)
    order = problem.graph.topo_order if order is None else order
    out = {"format": FORMAT, "objective": "throughput", "source": source,
            "cluster": problem.cluster.name, "devices": list(inst.device_names),
            "num_nodes": problem.n, "k": problem.k,
            "method": method, "bottleneck": sc.bottleneck, "lower_bound": lower_bound,
            "stages": stage_rows(inst, sc),
            "stage_devices": [inst.device_names[int(p)] for p in sc.devices],
            "assignment": [int(s) for s in sc.assignment],
            "node_ids": list(problem.graph.node_ids),
            "order": [int(v) for v in order]}
    grouped = original_groups(problem.graph)
    if grouped is not None:  # a coarsened/fused import: the stage of every original op
        ids = problem.graph.node_ids
        out["original_ops"] = [{"name": name, "group": ids[i],
                                "block": int(sc.assignment[i])} for name, i in grouped]
    out.update(extra)
    return out


def report_lines(problem, part, sc) -> list[str]:
    """The stage table of `part` (its costs `sc`) and, for comparison, the DFS order
    on the devices fastest first."""
    import numpy as np

    from jaxplace.search.baselines import dfs_order, order_to_priorities

    inst = problem.pipeline_instance
    x = np.concatenate([order_to_priorities(dfs_order(problem.graph)), speed_keys(inst)])
    dfs = decode(inst, x, problem.k).cost
    return [stage_table(inst, sc),
            f"DFS fastest-first {dfs * 1e3:.6g} ms ({dfs / sc.bottleneck:.3f}x)"]


__all__ = ["FORMAT", "report_lines", "result_dict", "stage_rows", "stage_table"]
