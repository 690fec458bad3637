"""What a plan view shows, taken out of every kind of plan jaxplace writes.

`plan_view(obj)` turns a result JSON (a dict or a path) of any objective, a `Problem`
with a search `Result` or partition, a `Certificate`, or a torch `PipelinePlan` into one
`PlanView`: the graph (nodes by topological depth, coloured by stage), per-stage costs
(compute, transfers, overflow, memory; the bottleneck), the certificate's ladder and a
timeline where the plan has one. The renderers (`view.html`, `view.plot`) read only
this, so every source is drawn the same way.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.jsonio import read_json


@dataclass(frozen=True)
class StageView:
    """One stage (or device) of a plan; times in the plan's unit, NaN where unknown."""

    index: int
    device: str
    ops: int
    compute: float
    transfer_in: float
    transfer_out: float
    overflow: float
    total: float
    memory: float = math.nan
    capacity: float = math.nan


@dataclass(frozen=True)
class RungView:
    """One method of the certificate's ladder."""

    name: str
    bound: float
    status: str
    time: float


@dataclass(frozen=True)
class EventView:
    """One bar of a timeline: `lane` is a rank or device, `stage` colours it."""

    lane: str
    stage: int
    label: str
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class PlanView:
    """Everything a plan view draws.

    Attributes:
        title, objective: headings (the source, the objective's label).
        cost_name, cost, lower_bound: the plan's cost and the best bound known.
        unit: the unit of every time ("s", "us", or "" for the graph's own unit).
        stages: one StageView per stage (per device for latency plans).
        bottleneck: index into `stages` of the stage that sets the cost, or None.
        node_stage: (n,) int64 stage of every op (-1: none); node_depth: (n,) int64
            topological depth (longest path from a source); node_labels: (n,) names;
            edges: (m, 2) int64 producer -> consumer (empty without the graph).
        ladder: the certificate's rungs in ladder order; upper_bound its cost.
        timeline: bars of a schedule (empty where the plan has none).
        notes: what the view could not show.
    """

    title: str
    objective: str
    cost_name: str
    cost: float
    lower_bound: float
    unit: str
    stages: tuple[StageView, ...]
    bottleneck: int | None
    node_stage: np.ndarray
    node_depth: np.ndarray
    node_labels: tuple[str, ...]
    edges: np.ndarray
    ladder: tuple[RungView, ...] = ()
    upper_bound: float = math.nan
    timeline: tuple[EventView, ...] = ()
    timeline_title: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def ratio(self) -> float:
        lb = self.lower_bound
        return self.cost / lb if lb > 0 and math.isfinite(self.cost) else math.nan


def topo_depth(num_nodes: int, edges: np.ndarray) -> np.ndarray:
    """(n,) int64 longest-path depth of every node from the sources (Kahn's order)."""
    depth = np.zeros(num_nodes, np.int64)
    if len(edges) == 0:
        return depth
    indeg = np.bincount(edges[:, 1], minlength=num_nodes)
    order = np.argsort(edges[:, 0], kind="stable")
    src, dst = edges[order, 0], edges[order, 1]
    ptr = np.searchsorted(src, np.arange(num_nodes + 1))
    stack = list(np.flatnonzero(indeg == 0))
    seen = 0
    while stack:
        u = stack.pop()
        seen += 1
        for v in dst[ptr[u]:ptr[u + 1]]:
            depth[v] = max(depth[v], depth[u] + 1)
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    if seen != num_nodes:
        raise JaxplaceError("the graph has a cycle; a plan view needs a DAG", field="edges")
    return depth


def _num(x: Any, default: float = math.nan) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return default
    return v


def _ladder(cert: dict | None) -> tuple[tuple[RungView, ...], float]:
    if not isinstance(cert, dict):
        return (), math.nan
    rungs = tuple(RungView(str(r.get("name", "?")), _num(r.get("bound")),
                           str(r.get("status", "")), _num(r.get("time"), 0.0))
                  for r in cert.get("results", ()) if isinstance(r, dict))
    return rungs, _num(cert.get("upper_bound"))


def _graph_parts(data: dict, graph: CompGraph | None, stage_of_id: dict
                 ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], np.ndarray, list[str]]:
    """(node_stage, node_depth, labels, edges, notes) from the graph where there is one,
    else the result's own node order laid out as a chain."""
    notes: list[str] = []
    ids = _seq(data.get("node_ids")) or list(range(len(_seq(data.get("assignment")))))
    if graph is not None and list(graph.node_ids) == ids:
        stage = np.asarray([stage_of_id.get(v, -1) for v in graph.node_ids], np.int64)
        edges = np.asarray(graph.edges, np.int64).reshape(-1, 2)
        labels = tuple(graph.names[i] if graph.names else str(graph.node_ids[i])
                       for i in range(graph.num_nodes))
        return stage, topo_depth(graph.num_nodes, edges), labels, edges, notes
    if graph is not None:
        notes.append("the graph's node ids do not match the result's; drawn without edges")
    else:
        notes.append("no graph file found; ops drawn in the result's order, without edges")
    order = _seq(data.get("order")) or ids
    pos = {v: i for i, v in enumerate(order)}
    stage = np.asarray([stage_of_id.get(v, -1) for v in ids], np.int64)
    depth = np.asarray([pos.get(v, i) for i, v in enumerate(ids)], np.int64)
    return stage, depth, tuple(str(v) for v in ids), np.zeros((0, 2), np.int64), notes


def _seq(x: Any) -> list:
    """A JSON list or a NumPy array (a result dict not yet written) as a list."""
    return [] if x is None else [v.item() if hasattr(v, "item") else v for v in x]


def _stage_map(data: dict) -> dict:
    ids = _seq(data.get("node_ids"))
    a = _seq(data.get("assignment"))
    if len(ids) != len(a):
        raise JaxplaceError(f"has {len(a)} entries for {len(ids)} node ids",
                            field="assignment")
    return {v: int(b) for v, b in zip(ids, a, strict=True)}


def _throughput(data: dict, graph: CompGraph | None) -> PlanView:
    blocks = data.get("blocks")
    if not isinstance(blocks, list):
        raise JaxplaceError("missing list 'blocks'", field="blocks")
    stages = []
    for b in blocks:
        stages.append(StageView(
            int(b["block"]), str(b.get("device", "accel")), len(b.get("nodes", ())),
            _num(b.get("work")), _num(b.get("io_in"), 0.0), _num(b.get("io_out"), 0.0),
            _num(b.get("overflow"), 0.0), _num(b.get("total")), _num(b.get("param")),
            _num(data.get("capacity"))))
    stages.sort(key=lambda s: (s.device != "accel", s.index))
    stage_of = _stage_map(data)
    rank = {s.index: i for i, s in enumerate(stages)}
    stage_of = {v: rank.get(b, -1) for v, b in stage_of.items()}
    node_stage, depth, labels, edges, notes = _graph_parts(data, graph, stage_of)
    ladder, ub = _ladder(data.get("certificate"))
    totals = [s.total for s in stages]
    return PlanView(
        title=str(data.get("source") or "plan"), objective="throughput (pipeline stages)",
        cost_name="bottleneck", cost=_num(data.get("bottleneck")),
        lower_bound=_num(data.get("lower_bound")), unit=_unit(graph),
        stages=tuple(stages), bottleneck=int(np.argmax(totals)) if stages else None,
        node_stage=node_stage, node_depth=depth, node_labels=labels, edges=edges,
        ladder=ladder, upper_bound=ub, notes=tuple(notes))


def _hetero(data: dict, graph: CompGraph | None) -> PlanView:
    rows = data.get("stages")
    if not isinstance(rows, list):
        raise JaxplaceError("missing list 'stages'", field="stages")
    stages = tuple(StageView(
        int(r["stage"]), str(r.get("device", "?")), int(r.get("ops", 0)),
        _num(r.get("compute_s")), _num(r.get("transfer_in_s"), 0.0),
        _num(r.get("transfer_out_s"), 0.0), 0.0, _num(r.get("total_s")),
        _num(r.get("memory_bytes")), _num(r.get("capacity_bytes"))) for r in rows)
    node_stage, depth, labels, edges, notes = _graph_parts(data, graph, _stage_map(data))
    ladder, ub = _ladder(data.get("certificate"))
    return PlanView(
        title=str(data.get("source") or "plan"),
        objective=f"throughput on unequal devices ({data.get('cluster', 'cluster')})",
        cost_name="bottleneck", cost=_num(data.get("bottleneck")),
        lower_bound=_num(data.get("lower_bound")), unit="s", stages=stages,
        bottleneck=int(np.argmax([s.total for s in stages])) if stages else None,
        node_stage=node_stage, node_depth=depth, node_labels=labels, edges=edges,
        ladder=ladder, upper_bound=ub, notes=tuple(notes))


def _latency(data: dict, graph: CompGraph | None) -> PlanView:
    devices = data.get("devices")
    if not isinstance(devices, list):
        raise JaxplaceError("missing list 'devices'", field="devices")
    names = [str(d.get("device", i)) for i, d in enumerate(devices)]
    index = {n: i for i, n in enumerate(names)}
    t_in, t_out = np.zeros(len(names)), np.zeros(len(names))
    events = []
    for t in data.get("transfers") or ():
        s, d = index.get(t.get("source")), index.get(t.get("destination"))
        dur = _num(t.get("finish"), 0.0) - _num(t.get("start"), 0.0)
        if s is None or d is None:
            continue
        t_out[s] += dur
        t_in[d] += dur
        events.append(EventView(f"link {names[s]}->{names[d]}", s,
                                f"tensor {t.get('tensor')} ({t.get('bytes', 0):.3g} B)",
                                "send", _num(t.get("start")), _num(t.get("finish"))))
    stages = tuple(StageView(i, names[i], int(d.get("ops", 0)), _num(d.get("busy"), 0.0),
                             float(t_in[i]), float(t_out[i]), 0.0, _num(d.get("busy"), 0.0),
                             _num(d.get("memory")), _num(d.get("capacity")))
                   for i, d in enumerate(devices))
    ops = data.get("ops") or ()
    stage_of = {o.get("id"): index.get(o.get("device"), -1) for o in ops}
    node_stage, depth, labels, edges, notes = _graph_parts(data, graph, stage_of)
    label_of = dict(zip(_seq(data.get("node_ids")), labels, strict=False))
    for o in ops:
        d = index.get(o.get("device"))
        if d is not None:
            events.append(EventView(f"device {names[d]}", d,
                                    str(label_of.get(o.get("id"), o.get("id"))), "compute",
                                    _num(o.get("start")), _num(o.get("finish"))))
    finish = np.zeros(len(names))
    for e in events:
        if e.kind == "compute":
            finish[e.stage] = max(finish[e.stage], e.end)
    ladder, ub = _ladder(data.get("certificate"))
    return PlanView(
        title=str(data.get("source") or "plan"),
        objective=f"latency of one inference ({data.get('cluster', 'cluster')})",
        cost_name="makespan", cost=_num(data.get("makespan")),
        lower_bound=_num(data.get("lower_bound")), unit="s", stages=stages,
        bottleneck=int(np.argmax(finish)) if len(names) else None,
        node_stage=node_stage, node_depth=depth, node_labels=labels, edges=edges,
        ladder=ladder, upper_bound=ub, timeline=tuple(sorted(
            events, key=lambda e: (e.lane, e.start))),
        timeline_title="schedule of one inference (ops per device, transfers per link)",
        notes=tuple(notes))


_BY_FORMAT = {"jaxplace-result/1": _throughput, "jaxplace-hetero-result/1": _hetero,
              "jaxplace-latency-result/1": _latency}


def _unit(graph: CompGraph | None) -> str:
    """"us" where the graph says its times are microseconds (the importers' and the
    generators' graphs), else "" (the graph's own unit)."""
    meta = graph.meta if graph is not None else {}
    units = str(meta.get("units", ""))
    return "us" if units.startswith("work and size_out in us") or \
        meta.get("time_unit") == "us" else ""


def from_result_dict(data: dict, graph: CompGraph | None = None, *,
                     source: str = "result") -> PlanView:
    """The view of a result JSON's dict (every objective's format); `graph`, when given,
    supplies the edges and the op names."""
    if not isinstance(data, dict):
        raise JaxplaceError("is not a JSON object", source=source)
    fmt = data.get("format")
    build = _BY_FORMAT.get(fmt)
    if build is None and "blocks" in data:
        build = _throughput
    if build is None:
        raise JaxplaceError(f"unknown result format {fmt!r}; known: "
                            f"{', '.join(_BY_FORMAT)}", source=source, field="format")
    try:
        return build(data, graph)
    except (KeyError, TypeError, ValueError) as exc:
        raise JaxplaceError(f"malformed result: {type(exc).__name__}: {exc}",
                            source=source) from None
    except JaxplaceError as exc:
        raise exc.with_source(source) from None


def find_graph(data: dict, result_path: str | os.PathLike | None) -> CompGraph | None:
    """The graph a result names in `source`, looked up beside the result file and in
    the working folder; None where it is not there (the view then has no edges)."""
    src = data.get("source")
    if not isinstance(src, str) or not src:
        return None
    from jaxplace.formats import load_graph

    here = Path(result_path).parent if result_path is not None else Path(".")
    for cand in (here / src, Path(src)):
        if cand.is_file():
            try:
                return load_graph(cand)
            except JaxplaceError:
                return None
    return None


def load_view(path: str | os.PathLike, graph: str | os.PathLike | CompGraph | None = None
              ) -> PlanView:
    """The view of a result JSON file; the graph from `graph` (a path or a CompGraph)
    or from the result's `source` where that file exists."""
    data = read_json(str(path))
    if isinstance(graph, str | os.PathLike):
        from jaxplace.formats import load_graph

        graph = load_graph(graph)
    if graph is None and isinstance(data, dict):
        graph = find_graph(data, path)
    return from_result_dict(data, graph, source=str(path))
