"""The plan view with matplotlib: the same panels as the HTML page (graph by depth,
per-stage bars, ladder, timeline), for scripts and papers. matplotlib loads here only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.view._colors import fmt_time, stage_color
from jaxplace.view.model import PlanView
from jaxplace.view.sources import plan_view


def _pyplot():
    try:
        import matplotlib

        if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline",
                                                    "inline"):
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise JaxplaceError("jp.plot needs matplotlib (pip install matplotlib)",
                            field="matplotlib") from exc
    return plt


def _graph(ax, view: PlanView) -> None:
    depth, stage = np.asarray(view.node_depth), np.asarray(view.node_stage)
    n = len(depth)
    order = np.lexsort((np.arange(n), stage, depth))
    row = np.zeros(n)
    counts: dict[int, int] = {}
    for v in order:
        row[v] = counts.get(int(depth[v]), 0)
        counts[int(depth[v])] = row[v] + 1
    e = np.asarray(view.edges).reshape(-1, 2)
    if len(e):
        from matplotlib.collections import LineCollection

        cut = stage[e[:, 0]] != stage[e[:, 1]]
        for mask, color, lw in ((~cut, "#bbbbbb", 0.5), (cut, "#333333", 1.0)):
            segs = np.stack([np.stack([depth[e[mask, 0]], -row[e[mask, 0]]], 1),
                             np.stack([depth[e[mask, 1]], -row[e[mask, 1]]], 1)], 1)
            ax.add_collection(LineCollection(segs, colors=color, linewidths=lw, zorder=1))
    ax.scatter(depth, -row, c=[stage_color(int(s)) for s in stage], s=max(4, 400 / max(n, 1)
                                                                          ** 0.5), zorder=2)
    ax.set_title(f"graph by topological depth ({n} ops)")
    ax.set_xlabel("depth")
    ax.set_yticks([])


def _stages(ax, view: PlanView) -> None:
    y = np.arange(len(view.stages))
    left = np.zeros(len(y))
    known = all(math.isfinite(s.total) for s in view.stages)
    parts = (("received", "transfer_in", 0.35), ("compute", "compute", 1.0),
             ("sent", "transfer_out", 0.55), ("overflow", "overflow", 0.8)) if known else \
        (("ops", "ops", 1.0),)
    for name, attr, alpha in parts:
        vals = np.asarray([getattr(s, attr) for s in view.stages], float)
        vals = np.nan_to_num(vals)
        colors = ["#d62728" if attr == "overflow" else stage_color(i) for i in y]
        ax.barh(y, vals, left=left, color=colors, alpha=alpha, label=name)
        left += vals
    if view.bottleneck is not None and known:
        b = view.bottleneck
        ax.barh([b], [left[b]], fill=False, edgecolor="#d62728", linewidth=2)
        ax.annotate("bottleneck", (left[b], b), xytext=(4, 0), textcoords="offset points",
                    va="center", color="#d62728")
    ax.set_yticks(y, [f"stage {i}: {s.device[:18]}" for i, s in enumerate(view.stages)])
    ax.invert_yaxis()
    ax.set_xlabel(f"time per stage ({view.unit or 'graph unit'})" if known else "ops")
    ax.set_title("stages: received | compute | sent | overflow" if known else "stages")


def _ladder(ax, view: PlanView) -> None:
    ub = view.upper_bound if math.isfinite(view.upper_bound) else view.cost
    fr = [r.bound / ub if math.isfinite(r.bound) and ub > 0 else 0.0 for r in view.ladder]
    y = np.arange(len(fr))
    ax.barh(y, fr, color=["#2ca02c" if f >= 1 - 1e-6 else "#4e79a7" for f in fr])
    ax.set_yticks(y, [r.name for r in view.ladder])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.axvline(1.0, color="#333", lw=0.8)
    ax.set_xlabel("lower bound / plan cost")
    ax.set_title("certificate")


def _timeline(ax, view: PlanView) -> None:
    lanes = sorted({e.lane for e in view.timeline})
    at = {lane: i for i, lane in enumerate(lanes)}
    for e in view.timeline:
        send = e.kind == "send"
        ax.barh(at[e.lane] + (0.2 if send else 0.0), e.end - e.start, left=e.start,
                height=0.35 if send else 0.8, color=stage_color(e.stage),
                alpha={"B": 0.7, "W": 0.45}.get(e.kind, 1.0),
                edgecolor="#333" if send else "none", linewidth=0.4)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(view.timeline_title or "timeline")


def plot(obj: Any, *, fig=None, **kwargs):
    """Draw `obj` (anything `jaxplace.view.plan_view` accepts; keyword arguments go to
    it) with matplotlib: graph, stages, ladder and timeline panels, those it has.
    Returns the Figure."""
    view = plan_view(obj, **kwargs)
    shown = {_graph: view.node_stage, _stages: view.stages, _ladder: view.ladder,
             _timeline: view.timeline}
    panels = [draw for draw, items in shown.items() if len(items)]
    if not panels:
        raise JaxplaceError("nothing to draw: the plan has no ops, stages or bounds",
                            field="obj")
    plt = _pyplot()
    if fig is None:
        fig = plt.figure(figsize=(11, 3.2 * len(panels)))
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, draw in zip(axes, panels, strict=True):
        draw(ax, view)
    head = f"{view.title}: {view.cost_name} {fmt_time(view.cost, view.unit)}"
    if math.isfinite(view.ratio):
        head += f", ratio to lower bound {view.ratio:.4f}"
    fig.suptitle(head)
    fig.tight_layout()
    return fig
