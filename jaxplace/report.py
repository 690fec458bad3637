"""Human-readable tables of partitions and graphs for the CLI and notebooks."""

from __future__ import annotations

import numpy as np

from jaxplace.cost import PartitionCost
from jaxplace.problem import Problem


def _fmt(x: float) -> str:
    if not np.isfinite(x):
        return "inf"
    return f"{x:.6g}"


def stage_table(problem: Problem, cost: PartitionCost, pieces=None) -> str:
    """One row per non-empty block, in pipeline order, with the bottleneck marked.

    `stage` is the block's number in the result JSON (accelerator stages 0.. in
    pipeline order, CPU blocks from k on); `device` says which kind of device runs it.
    With `pieces` (the `VirtualPieces` of a non-contiguous split) a `pieces` column
    gives each block's number of virtual pieces.
    """
    head = ["stage", "device", "nodes", "work", "io_in", "io_out", "overflow", "param",
            "total"]
    per = None if pieces is None else pieces.per_device(len(cost.total))
    if per is not None:
        head.insert(3, "pieces")
    ids = cost.stage_ids()
    devices = cost.device_types
    worst = cost.bottleneck
    rows = []
    for b in (int(b) for b in cost.block_order if int(b) in ids):
        mark = " *" if cost.total[b] == worst else ""
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
