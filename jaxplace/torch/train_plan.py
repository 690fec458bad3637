"""Plan a PyTorch pipeline for training: split at module boundaries so that the
simulated training step under a schedule (GPipe, 1F1B, interleaved 1F1B, zero bubble)
is shortest, with each rank's memory under the schedule as a hard limit.

The module is traced (`trace.from_torch`), cut at the positions where
`SplitPoint.BEGINNING` can cut (`plan.module_boundaries`), and each segment between
them is costed for training (`training_costs`: backward derived from the forward
trace, or both measured on this host with `profile=True`; activation bytes measured
by autograd's saved-tensor hooks). The chain of segments is a problem of the
registered "training" objective (`jaxplace.objectives.training`), solved by
`jaxplace.search` (exact over contiguous splits when it finishes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.builder import US
from jaxplace.importers.devices import get_device
from jaxplace.objectives.training.model import SplitCost
from jaxplace.pipeline.chain import segments_graph
from jaxplace.pipeline.schedule import ScheduleTimeline, simulate_schedule
from jaxplace.pipeline.schedule_orders import SCHEDULES, SPLIT_BACKWARD
from jaxplace.problem import Problem
from jaxplace.search import search
from jaxplace.torch.boundaries import even_layer_starts, module_boundaries, repeated_layers
from jaxplace.torch.trace import TracedOp, from_torch, require_torch
from jaxplace.torch._training_costs import (
    OPTIMIZER_STATE,
    backward_costs,
    profile_segments,
    saved_activation_bytes,
)


@dataclass(frozen=True)
class TrainingPlan:
    """A training pipeline split of a torch module at module boundaries.

    Times in seconds (one microbatch of `example_args`, on the device profile, or on
    this host with `profile=True`), memory in bytes.

    Attributes:
        split_spec: {FQN: SplitPoint.BEGINNING} for torch.distributed.pipelining.
        stage_starts: (stages,) FQN of the module each stage begins with ("": start).
        schedule: the schedule's name; n_microbatches, n_virtual: its settings.
        num_ranks: processes (stages / n_virtual).
        step_time: simulated seconds per training step (the optimizer step included).
        stage_fwd, stage_bwd: (stages,) seconds per microbatch.
        stage_memory: (stages,) bytes each stage holds at its peak under the schedule
            (parameters, gradients, optimizer state, activations in flight).
        in_flight: (stages,) microbatches whose activations each stage holds at most.
        send: (stages - 1,) seconds per microbatch across each boundary.
        timeline: the simulated step (seconds), without the optimizer step.
        lower_bound: the objective's closed-form bound, seconds; proved_optimal: the
            search enumerated every contiguous split at the boundaries.
        even: the even split of the repeated layers, costed the same way (or None).
        segment_starts: (segments,) FQN each segment begins with; stage_segments:
            (stages,) the first segment of each stage.
        problem: the training problem over the segments (evaluate other splits with
            `cost_of`).
        costs: "derived" (backward from the forward's roofline) or "profiled".
        optimizer: the optimizer the memory and step were priced for.
        notes: what the plan could not do.
    """

    split_spec: dict
    stage_starts: tuple[str, ...]
    schedule: str
    n_microbatches: int
    n_virtual: int
    step_time: float
    stage_fwd: np.ndarray
    stage_bwd: np.ndarray
    stage_memory: np.ndarray
    in_flight: np.ndarray
    send: np.ndarray
    timeline: ScheduleTimeline
    lower_bound: float
    proved_optimal: bool
    even: SplitCost | None
    segment_starts: tuple[str, ...]
    stage_segments: tuple[int, ...]
    costs: str
    optimizer: str
    device: str
    problem: Problem = field(repr=False)
    ops: tuple[TracedOp, ...] = field(repr=False)
    layers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    train = True

    @property
    def num_stages(self) -> int:
        return len(self.stage_starts)

    @property
    def num_ranks(self) -> int:
        return self.num_stages // self.n_virtual

    @property
    def stage_times(self) -> np.ndarray:
        """(stages,) seconds of forward + backward per microbatch."""
        return self.stage_fwd + self.stage_bwd

    def cost_of(self, stage_starts: Sequence[str]) -> SplitCost:
        """The objective's cost (graph unit: us) of the split whose stages begin at
        these module FQNs ("" or none for the first)."""
        seg = {f: i for i, f in enumerate(self.segment_starts)}
        bad = [f for f in stage_starts if f and f not in seg]
        if bad:
            raise JaxplaceError(f"{bad[0]!r} is not a module boundary of the plan",
                                field="stage_starts")
        firsts = sorted({0, *(seg[f] for f in stage_starts if f)})
        a = np.searchsorted(np.asarray(firsts), np.arange(self.problem.n), side="right") - 1
        return self.problem.objective_impl.evaluate_partition(self.problem, a)

    def _repr_html_(self) -> str:
        """Notebooks show the plan (`jaxplace.view`)."""
        import importlib

        return importlib.import_module("jaxplace.view").html_fragment(self)

    def summary(self) -> str:
        lines = [f"{self.num_stages} stages on {self.num_ranks} ranks, {self.schedule}, "
                 f"{self.n_microbatches} microbatches ({self.costs} costs, "
                 f"{self.optimizer}): step {self.step_time * 1e3:.4g} ms simulated, "
                 f"bound {self.lower_bound * 1e3:.4g} ms"
                 f"{' (optimal over the boundaries)' if self.proved_optimal else ''}",
                 f"{'stage':>5}  {'begins at':<28} {'fwd ms':>8} {'bwd ms':>8} "
                 f"{'memory MiB':>10} {'in flight':>9}"]
        for i, s in enumerate(self.stage_starts):
            lines.append(f"{i:>5}  {s or '(start)':<28} {self.stage_fwd[i] * 1e3:>8.4g} "
                         f"{self.stage_bwd[i] * 1e3:>8.4g} "
                         f"{self.stage_memory[i] / 2**20:>10.3f} {self.in_flight[i]:>9}")
        if self.even is not None:
            lines.append(f"even split of {len(self.layers)} layers: step "
                         f"{self.even.cost / US * 1e3:.4g} ms")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _with(graph: CompGraph, work: np.ndarray, attrs: dict, meta: dict) -> CompGraph:
    tensors = [(int(graph.tensor_producer[t]), float(graph.tensor_size[t]),
                [int(c) for c in graph.consumers(t)]) for t in range(graph.num_tensors)]
    return CompGraph(work, (), graph.size_param, tensors=tensors, names=graph.names,
                     node_attrs=attrs, meta={**graph.meta, **meta})


@dataclass(frozen=True)
class TrainingOptions:
    """The training settings of `plan_training`."""

    schedule: str = "1f1b"
    n_microbatches: int | None = None
    n_virtual: int = 1
    optimizer: str = "adam"
    memory_limit: float | None = None
    profile: bool = False
    loss_fn: object = None
    target: object = None
    repeats: int = 5


def plan_training(module, example_args: Sequence, k: int, opts: TrainingOptions, *,
                  device="cpu", example_kwargs: dict | None = None,
                  seed: int = 0) -> TrainingPlan:
    """The training plan of `module` over k ranks (module doc); `plan_pipeline(...,
    train=True)` calls this."""
    require_torch()
    from torch.distributed.pipelining import SplitPoint

    if opts.schedule not in SCHEDULES:
        raise JaxplaceError(f"unknown schedule {opts.schedule!r}; known: "
                            f"{', '.join(SCHEDULES)}", field="schedule")
    if opts.optimizer not in OPTIMIZER_STATE:
        raise JaxplaceError(f"unknown optimizer {opts.optimizer!r}; known: "
                            f"{', '.join(OPTIMIZER_STATE)}", field="optimizer")
    if int(k) < 1:
        raise JaxplaceError("must be at least 1", field="k")
    m = int(opts.n_microbatches or 2 * k)
    dev = get_device(device)
    module.eval()
    graph, ops = from_torch(module, example_args, example_kwargs, device=dev)
    bounds = module_boundaries(ops)
    starts = [0, *bounds]
    fqns = [bounds[p] for p in starts[1:]]
    op_costs = backward_costs(ops, graph.work, graph.size_param, dev, opts.optimizer)
    coarse = segments_graph(graph, starts)

    def per_segment(x):
        return np.add.reduceat(np.asarray(x, float), starts)

    fwd, bwd = per_segment(graph.work), per_segment(op_costs.bwd)
    weight = per_segment(op_costs.weight)
    costs = "derived"
    if opts.profile:
        if opts.loss_fn is None or opts.target is None:
            raise JaxplaceError("profiling a training step needs loss_fn and target",
                                field="loss_fn")
        prof = profile_segments(module, example_args, fqns, opts.loss_fn, opts.target,
                                repeats=opts.repeats)
        share = np.divide(weight, bwd, out=np.zeros_like(bwd), where=bwd > 0)
        fwd, bwd = prof.fwd * US, prof.bwd * US
        weight = share * bwd
        costs = "profiled"
    attrs = {"bwd_work": bwd, "weight_work": weight,
             "opt_work": per_segment(op_costs.opt),
             "act_bytes": saved_activation_bytes(module, example_args, fqns,
                                                 example_kwargs, loss_fn=opts.loss_fn,
                                                 target=opts.target)}
    # tensor sizes are link seconds (us) on the device: a stage keeps what it sends
    settings = {"schedule": opts.schedule, "n_microbatches": m, "n_virtual": opts.n_virtual,
                "state_factor": OPTIMIZER_STATE[opts.optimizer],
                "held_bytes_per_unit": dev.link_bw / US}
    seg_graph = _with(coarse, fwd, attrs, {"training": settings})
    problem = Problem(seg_graph, int(k) * opts.n_virtual, objective="training",
                      capacity=opts.memory_limit)
    result = search(problem, seed=seed, progress=False)
    obj = problem.objective_impl
    best = obj.evaluate_partition(problem, result.partition)
    if not np.isfinite(best.cost):
        raise JaxplaceError(f"no split into at most {k} ranks at module boundaries fits "
                            f"the memory limit under {opts.schedule}"
                            + (f" ({best.why})" if best.why else ""), field="memory_limit")
    seg_starts = ("", *fqns)
    stage_starts = tuple(seg_starts[i] for i in best.starts)
    layers = repeated_layers(ops)
    even = _even(obj, problem, layers, starts, len(best.starts))
    notes = []
    if len(best.starts) < int(k) * opts.n_virtual:
        notes.append(f"{len(best.starts)} stages, not {int(k) * opts.n_virtual}: "
                     + ("fewer module boundaries" if len(starts) < k else
                        "more stages would not shorten the step"))
    w = {"weight": _stage_sum(weight, best.starts) / US} \
        if opts.schedule in SPLIT_BACKWARD else {}
    tl = simulate_schedule(opts.schedule, best.fwd / US, best.bwd / US, m,
                           send=best.send / US, n_virtual=opts.n_virtual, **w)
    return TrainingPlan(
        split_spec={f: SplitPoint.BEGINNING for f in stage_starts[1:]},
        stage_starts=stage_starts, schedule=opts.schedule, n_microbatches=m,
        n_virtual=opts.n_virtual, step_time=float(best.cost) / US,
        stage_fwd=best.fwd / US, stage_bwd=best.bwd / US, stage_memory=best.memory,
        in_flight=best.in_flight, send=best.send / US, timeline=tl,
        lower_bound=float(obj.lower_bound(problem)) / US,
        proved_optimal=bool("proved_by" in result.info
                            and np.isclose(result.cost, best.cost)),
        even=even, segment_starts=seg_starts,
        stage_segments=tuple(int(s) for s in best.starts), costs=costs,
        optimizer=opts.optimizer, device=dev.name if not opts.profile else "this host",
        problem=problem, ops=tuple(ops), layers=tuple(f for f, _ in layers),
        notes=tuple(notes))


def _stage_sum(x: np.ndarray, starts: Sequence[int]) -> np.ndarray:
    return np.add.reduceat(x, list(starts))


def _even(obj, problem, layers, starts, n_stages) -> SplitCost | None:
    """The even split of the repeated layers into n_stages, where its cuts are
    module boundaries."""
    pos = even_layer_starts(layers, n_stages)
    if not pos or len(set(pos)) != n_stages:
        return None
    seg_of = {p: i for i, p in enumerate(starts)}
    if any(p not in seg_of for p in pos[1:]):
        return None
    firsts = [0, *(seg_of[p] for p in pos[1:])]
    a = np.searchsorted(np.asarray(firsts), np.arange(problem.n), side="right") - 1
    return obj.evaluate_partition(problem, a)
