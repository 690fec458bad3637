"""Human-readable tables of partitions and graphs for the CLI and notebooks."""

from __future__ import annotations

import numpy as np

from jaxplace.objectives.throughput.cost import PartitionCost
from jaxplace.problem import Problem


def _fmt(x: float) -> str:
    if not np.isfinite(x):
        return "inf"
    return f"{x:.6g}"


def units(problem: Problem) -> dict[str, str]:
    """The unit of each stage-table column, from the graph's metadata (imported
    models: work and transfers in microseconds, parameters in bytes); "" when the
    graph does not say."""
    meta = problem.graph.meta
    time = str(meta.get("time_unit") or "")
    param = "bytes" if "bytes" in str(meta.get("size_param_unit", "")) else ""
    link = time if time and problem.bandwidth == 1.0 and "us" in str(
        meta.get("size_out_unit", "")) else ""
    return {"work": time, "io_in": link, "io_out": link, "overflow": link,
            "param": param, "total": time}


def stage_table(problem: Problem, cost: PartitionCost, pieces=None) -> str:
    """One row per non-empty block, in pipeline order, with the bottleneck marked.

    `stage` is the block's number in the result JSON (accelerator stages 0.. in
    pipeline order, CPU blocks from k on); `device` says which kind of device runs it.
    Column headers carry their unit when the graph states it. With `pieces` (the
    `VirtualPieces` of a non-contiguous split) a `pieces` column gives each block's
    number of virtual pieces. `stage_notes` gives the lines to print under it.
    """
    unit = units(problem)
    cols = ["work", "io_in", "io_out", "overflow", "param", "total"]
    head = ["stage", "device", "nodes",
            *(f"{c}[{unit[c]}]" if unit[c] else c for c in cols)]
    per = None if pieces is None else pieces.per_device(len(cost.total))
    if per is not None:
        head.insert(3, "pieces")
    ids = cost.stage_ids()
    devices = cost.device_types
    worst = cost.bottleneck
    rows = []
    for b in (int(b) for b in cost.block_order if int(b) in ids):
        mark = " *" if cost.total[b] == worst else ""
        if cost.work[b] == 0:
            mark += " (no work)"
        rows.append([str(ids[b]), "CPU" if devices[b] == "cpu" else "accel",
                     str(int(np.sum(cost.assignment == b))), _fmt(cost.work[b]),
                     _fmt(cost.io_in[b]), _fmt(cost.io_out[b]), _fmt(cost.overflow[b]),
                     _fmt(cost.param[b]), _fmt(cost.total[b]) + mark])
        if per is not None:
            rows[-1].insert(3, str(int(per[b])))
    widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    lines += ["  ".join(x.rjust(w) for x, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def stage_notes(problem: Problem, cost: PartitionCost) -> list[str]:
    """Lines saying why fewer accelerator stages than k do work (empty if all k do):
    blocks holding only zero-work ops (views) are not counted as stages."""
    k = problem.k
    ids = cost.stage_ids()
    acc = [b for b in ids if cost.device_types[b] != "cpu"]
    idle = [b for b in acc if cost.work[b] == 0]
    working = len(acc) - len(idle)
    if working >= k:
        return []
    g = problem.graph
    units_ = g.units.num_units
    if units_ < k:
        why = f"the graph has only {units_} placement units"
    else:
        b = int(np.argmax(np.where(np.isfinite(cost.total), cost.total, np.inf)))
        members = np.flatnonzero(cost.assignment == b)
        v = int(members[np.argmax(g.work[members])])
        u = units(problem)["work"]
        if len(members) == 1:
            why = (f"the bottleneck stage is one op ({g.label(v)}), which no split "
                   "shortens, so more stages cannot lower the bottleneck")
        elif g.work[v] >= 0.9 * cost.total[b]:
            why = (f"one op ({g.label(v)}: {g.work[v]:.4g} of the bottleneck stage's "
                   f"{cost.total[b]:.4g}{' ' + u if u else ''}) dominates it and no split "
                   "shortens it, so more stages cannot lower the bottleneck much")
        else:
            why = (f"the search's best partition leaves {k - len(acc)} of the k blocks "
                   "empty: no partition it found with more stages had a lower "
                   "bottleneck (each cut adds transfer time)")
    out = [f"note: k = {k} asked, {working} stage{'s' if working != 1 else ''} "
           f"do{'es' if working == 1 else ''} work: {why}"]
    if idle:
        many = len(idle) > 1
        out.append(f"note: stage{'s' if many else ''} "
                   f"{', '.join(str(ids[b]) for b in sorted(idle, key=ids.get))} "
                   f"hold{'' if many else 's'} only ops without work (views) and "
                   f"{'are' if many else 'is'} not counted as stages")
    return out



def throughput_report(problem: Problem, cost: PartitionCost, pieces=None) -> list[str]:
    """The lines the CLI prints for a split on identical accelerators (its `cost`): the
    stage table and its notes, or for a non-contiguous split (`pieces`, its
    `VirtualPieces`) the table with each block's virtual pieces and the pipeline of
    pieces."""
    if pieces is None:
        return [stage_table(problem, cost), *stage_notes(problem, cost)]
    minimal = "fewest" if pieces.minimal else "not proven fewest"
    return [stage_table(problem, cost, pieces),
            f"virtual pieces {pieces.num_pieces} ({minimal}); pipeline: "
            + " ".join(str(cost.stage_ids()[int(d)]) for d in pieces.device)]
