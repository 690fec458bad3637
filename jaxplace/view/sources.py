"""`plan_view(obj)`: one `PlanView` from whatever the user holds.

Accepted: a result JSON path or dict (every objective), a `Problem` with a search
`Result` / `Partition` / block array (`problem=`), a search `Result` alone (its stages'
sizes and cost), a `Certificate` (its ladder), a torch `PipelinePlan` or training plan
(`plan_pipeline(..., train=True)`; both recognized by their fields, so this module
imports torch only for a training plan's module boundaries), and, for any of them, a schedule
timeline (`timeline=`: the simulator's `ScheduleTimeline` or anything with `events`
of rank, stage, microbatch, kind, start, end in seconds) drawn as the plan's timeline.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.importers.devices import get_device
from jaxplace.view.model import (
    EventView,
    PlanView,
    RungView,
    StageView,
    from_result_dict,
    load_view,
    topo_depth,
)


def timeline_events(timeline: Any, *, lane: str = "rank") -> tuple[EventView, ...]:
    """EventViews of a schedule timeline's events (seconds), one lane per rank."""
    events = getattr(timeline, "events", timeline)
    out = []
    try:
        for e in events:
            kind = str(e.kind)
            label = f"{kind}{int(e.microbatch)}" if kind in ("F", "B", "W") else \
                f"{kind.lower()} mb {int(e.microbatch)}"
            out.append(EventView(f"{lane} {int(e.rank)}", int(e.stage), label,
                                 "send" if kind.startswith("SEND") else kind,
                                 float(e.start), float(e.end)))
    except (AttributeError, TypeError, ValueError) as exc:
        raise JaxplaceError(f"not a schedule timeline (events of rank, stage, microbatch, "
                            f"kind, start, end): {exc}", field="timeline") from None
    return tuple(out)


def _is_pipeline_plan(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("split", "stage_starts", "graph", "device"))


def _from_pipeline_plan(plan: Any) -> PlanView:
    s = plan.split
    g = plan.graph
    try:
        cap = get_device(plan.device).memory_bytes
    except JaxplaceError:
        cap = math.nan
    starts = list(plan.stage_starts)
    stages = tuple(StageView(i, starts[i] or "(start)",
                             int(np.sum(np.asarray(s.assignment) == i)),
                             float(s.compute[i]), float(s.io_in[i]), float(s.io_out[i]), 0.0,
                             float(s.stage_times[i]), float(s.param_bytes[i]), cap)
                   for i in range(len(starts)))
    ladder = ()
    if s.lower_bound is not None:
        ladder = (RungView("chain certificate", float(s.lower_bound),
                           "optimal" if s.proved_optimal else "bound", 0.0),)
    edges = np.asarray(g.edges, np.int64).reshape(-1, 2)
    labels = tuple(o.name for o in plan.ops) if len(plan.ops) == g.num_nodes else \
        tuple(str(v) for v in g.node_ids)
    return PlanView(
        title=f"torch pipeline plan ({plan.device} roofline)",
        objective="throughput at module boundaries (torch.distributed.pipelining)",
        cost_name="bottleneck", cost=float(s.bottleneck),
        lower_bound=math.nan if s.lower_bound is None else float(s.lower_bound), unit="us",
        stages=stages, bottleneck=int(np.argmax(s.stage_times)),
        node_stage=np.asarray(s.assignment, np.int64),
        node_depth=topo_depth(g.num_nodes, edges), node_labels=labels, edges=edges,
        ladder=ladder, upper_bound=float(s.bottleneck), notes=tuple(plan.notes))


def _is_training_plan(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("stage_fwd", "stage_bwd", "stage_starts",
                                           "timeline", "ops"))


def _from_training_plan(plan: Any) -> PlanView:
    """A torch training plan: per stage fwd + bwd and sends (seconds), memory under the
    schedule, the simulated step as the timeline; ops in program order coloured by the
    stage whose module boundary precedes them."""
    from jaxplace.torch import module_boundaries

    ops = list(plan.ops)
    pos = {f: p for p, f in module_boundaries(ops).items()}
    firsts = sorted({0, *(pos[f] for f in plan.stage_starts if f in pos)})
    node_stage = np.searchsorted(np.asarray(firsts), np.arange(len(ops)), side="right") - 1
    send = list(np.asarray(plan.send, float)) + [0.0]
    k = len(plan.stage_starts)
    stages = tuple(StageView(i, plan.stage_starts[i] or "(start)",
                             int(np.sum(node_stage == i)),
                             float(plan.stage_fwd[i] + plan.stage_bwd[i]),
                             send[i - 1] if i else 0.0, send[i], 0.0,
                             float(plan.stage_fwd[i] + plan.stage_bwd[i] + send[i]),
                             float(plan.stage_memory[i])) for i in range(k))
    lb = float(plan.lower_bound)
    return PlanView(
        title=f"torch training plan ({plan.schedule}, {plan.n_microbatches} microbatches)",
        objective=f"training step ({plan.costs} costs, {plan.optimizer})",
        cost_name="step", cost=float(plan.step_time), lower_bound=lb, unit="s",
        stages=stages, bottleneck=int(np.argmax([s.total for s in stages])),
        node_stage=node_stage.astype(np.int64), node_depth=np.arange(len(ops)),
        node_labels=tuple(o.name for o in ops), edges=np.zeros((0, 2), np.int64),
        ladder=(RungView("training bound", lb, "optimal" if plan.proved_optimal
                         else "bound", 0.0),), upper_bound=float(plan.step_time),
        timeline=timeline_events(plan.timeline),
        timeline_title=f"simulated step ({plan.schedule})", notes=tuple(plan.notes))


def _from_certificate(cert: Any) -> PlanView:
    d = cert.to_dict()
    rungs = tuple(RungView(str(r["name"]), _f(r.get("bound")), str(r.get("status", "")),
                           _f(r.get("time"), 0.0)) for r in d.get("results", ()))
    return PlanView(title="certificate", objective=f"lower bound by {d.get('method')}",
                    cost_name="upper bound", cost=_f(d.get("upper_bound")),
                    lower_bound=_f(d.get("lower_bound")), unit="", stages=(),
                    bottleneck=None, node_stage=np.zeros(0, np.int64),
                    node_depth=np.zeros(0, np.int64), node_labels=(),
                    edges=np.zeros((0, 2), np.int64), ladder=rungs,
                    upper_bound=_f(d.get("upper_bound")))


def _from_search_result(result: Any) -> PlanView:
    a = np.asarray(result.partition.assignment, np.int64)
    blocks = sorted(int(b) for b in np.unique(a))
    stages = tuple(StageView(b, "stage", int(np.sum(a == b)), math.nan, math.nan, math.nan,
                             math.nan, math.nan) for b in blocks)
    order = np.asarray(result.partition.order, np.int64)
    depth = np.empty(len(a), np.int64)
    depth[order] = np.arange(len(order))
    return PlanView(title=f"search result ({result.method})", objective="",
                    cost_name="cost", cost=float(result.cost),
                    lower_bound=float(getattr(result, "lower_bound", math.nan)), unit="",
                    stages=stages, bottleneck=None, node_stage=a, node_depth=depth,
                    node_labels=tuple(str(i) for i in range(len(a))),
                    edges=np.zeros((0, 2), np.int64),
                    notes=("costs per stage need the problem: view.html(result, "
                           "problem=problem)",))


def _f(x: Any, default: float = math.nan) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def plan_view(obj: Any, *, problem: Any = None, certificate: Any = None,
              timeline: Any = None, graph: Any = None) -> PlanView:
    """The PlanView of `obj` (see the module's docstring for what it accepts).

    Args:
        obj: a result path or dict, a search Result / Partition / block array (with
            `problem`), a Certificate, a PipelinePlan, or a PlanView.
        problem: the Problem `obj` partitions (its objective writes the result).
        certificate: a Certificate of that partition (its ladder is drawn).
        timeline: a schedule timeline to draw (seconds).
        graph: for a result path or dict: the graph (path or CompGraph) it splits.
    """
    if isinstance(obj, PlanView):
        view = obj
    elif isinstance(obj, str | os.PathLike):
        view = load_view(obj, graph)
    elif isinstance(obj, dict):
        if isinstance(graph, str | os.PathLike):
            from jaxplace.formats import load_graph

            graph = load_graph(graph)
        view = from_result_dict(obj, graph)
    elif problem is not None:
        data = problem.objective_impl.result_dict(problem, obj, certificate=certificate)
        view = from_result_dict(data, problem.graph)
        view = replace(view, title=str(problem.graph.meta.get("name") or
                                       problem.graph.meta.get("generator") or "plan"),
                       notes=())
    elif _is_pipeline_plan(obj):
        view = _from_pipeline_plan(obj)
    elif _is_training_plan(obj):
        view = _from_training_plan(obj)
    elif hasattr(obj, "to_dict") and hasattr(obj, "results") and hasattr(obj, "lower_bound"):
        view = _from_certificate(obj)
    elif hasattr(obj, "partition") and hasattr(obj, "cost"):
        view = _from_search_result(obj)
    else:
        raise JaxplaceError(f"cannot draw a {type(obj).__name__}: give a result JSON, a "
                            "Result or partition with problem=, a Certificate or a "
                            "PipelinePlan", field="obj")
    if timeline is not None:
        view = replace(view, timeline=timeline_events(timeline),
                       timeline_title=f"predicted schedule "
                       f"({getattr(timeline, 'schedule', 'pipeline')}, one step)")
    return view
