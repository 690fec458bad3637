"""The training-pipeline model of a graph: what one op costs in a training step and
what a contiguous split of the op order costs under a pipeline schedule.

A graph describes one microbatch (nodes in program order, a topological order):

- `work`: forward seconds (graph time unit) of each op;
- node attribute `bwd_work`: its whole backward (default 2 x work: a matrix op's
  input and weight gradients are each a product of the forward's size);
- node attribute `weight_work`: the weight-gradient part of the backward that the
  zero-bubble schedules run apart (W) (default: half the backward of ops holding
  parameters, 0 elsewhere);
- node attribute `opt_work`: the optimizer step's time for the op's parameters
  (default 0), run by each rank after its last backward;
- node attribute `act_bytes`: bytes of the tensors the op saves for its backward, per
  microbatch (default 0);
- `size_param`: parameter bytes; a stage also holds their gradients and optimizer
  state, `state_factor` x the parameter bytes (Adam in fp32: 2 moments -> 2);
- tensor sizes: seconds to send the tensor to another rank per microbatch (divided
  by the problem's bandwidth); a tensor crossing several stage boundaries is sent
  across each (torch.distributed.pipelining passes skip connections through the
  stages in between).

`graph.meta["training"]` (all optional): `schedule` ("1f1b"), `n_microbatches`
(2 k for a problem of at most k stages: one batch however it is split),
`n_virtual` (1; chunks per rank), `state_factor` (2.0), `held_bytes_per_unit` (0: the
bytes per unit of tensor size of the tensors that cross a stage boundary, which both
stages keep until their backward, as torch.distributed.pipelining's stages keep their
inputs and outputs: a stage then holds them for every microbatch in flight), `step_factor` (0: the bytes the
optimizer step allocates beyond its state, per parameter byte).

A stage's memory is the larger of its backward phase, parameters + gradients +
optimizer state + the activations (and kept outputs) of every microbatch in flight +
the backward's working set (the gradients of one node's saved activations: the
largest node's act_bytes), and its optimizer step, the state + step_factor x the
parameter bytes.

A partition is a contiguous split of the node order: every block a run of
consecutive nodes; stages ordered by position. Its cost is the simulated step time
(`jaxplace.pipeline.schedule`) plus the slowest rank's optimizer step after its last
action; a rank whose memory (parameters, gradients, optimizer state, and the
activations of the microbatches it holds at once under the schedule) exceeds the
problem's `capacity` makes the split infeasible (inf).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.pipeline.schedule import held_activations, simulate_schedule
from jaxplace.pipeline.schedule_orders import (
    SCHEDULES,
    SPLIT_BACKWARD,
    check_schedule,
    pipeline_order,
    stage_rank,
)

#: the meta key of a graph's training settings
META_KEY = "training"
DEFAULT_SCHEDULE = "1f1b"
#: optimizer-state bytes per parameter byte: Adam's two fp32 moments
DEFAULT_STATE_FACTOR = 2.0
#: backward / forward time where a graph gives no `bwd_work`
DEFAULT_BACKWARD_RATIO = 2.0


@dataclass(frozen=True)
class TrainingSettings:
    """The schedule a split is costed under."""

    schedule: str = DEFAULT_SCHEDULE
    n_microbatches: int | None = None  # None: 2 k (the problem's stage limit)
    n_virtual: int = 1
    state_factor: float = DEFAULT_STATE_FACTOR
    held_bytes_per_unit: float = 0.0
    step_factor: float = 0.0

    def microbatches(self, k: int) -> int:
        """Microbatches per step of a problem of at most k stages."""
        return int(self.n_microbatches) if self.n_microbatches else 2 * int(k)


@dataclass(frozen=True)
class TrainingOps:
    """Per-op arrays of a training problem, float64, shape (n,)."""

    fwd: np.ndarray
    bwd: np.ndarray
    weight: np.ndarray
    opt: np.ndarray
    act: np.ndarray
    state: np.ndarray  # parameter + gradient + optimizer-state bytes
    step: np.ndarray  # bytes at the optimizer step: the state and its temporaries
    settings: TrainingSettings


@dataclass(frozen=True)
class SplitCost:
    """The cost of a contiguous split under the schedule.

    Attributes:
        cost: simulated step time with the optimizer step (inf: infeasible).
        assignment: (n,) int64 the block of every op.
        starts: (stages,) first op position of each stage.
        fwd, bwd: (stages,) seconds per microbatch of each stage.
        send: (stages - 1,) seconds per microbatch across each boundary.
        memory: (stages,) bytes each stage holds at its peak under the schedule.
        rank_memory: (ranks,) bytes per rank (the sum of its stages).
        in_flight: (stages,) the most microbatches' activations a stage holds.
        timeline: the simulated ScheduleTimeline (None when infeasible before it).
        why: why the split is infeasible ("" otherwise).
    """

    cost: float
    assignment: np.ndarray
    starts: tuple[int, ...]
    fwd: np.ndarray
    bwd: np.ndarray
    send: np.ndarray
    memory: np.ndarray
    rank_memory: np.ndarray
    in_flight: np.ndarray
    timeline: object = None
    why: str = ""


def settings_of(graph) -> TrainingSettings:
    """The graph's training settings (`meta["training"]`), checked."""
    raw = graph.meta.get(META_KEY) or {}
    if not isinstance(raw, dict):
        raise JaxplaceError("must be a mapping of training settings", field="meta.training")
    unknown = set(raw) - {"schedule", "n_microbatches", "n_virtual", "state_factor",
                          "held_bytes_per_unit", "step_factor"}
    if unknown:
        raise JaxplaceError(f"unknown setting {sorted(unknown)[0]!r}", field="meta.training")
    s = TrainingSettings(**raw)
    if s.schedule not in SCHEDULES:
        raise JaxplaceError(f"unknown schedule {s.schedule!r}; known: "
                            f"{', '.join(SCHEDULES)}", field="meta.training.schedule")
    m = s.n_microbatches
    if m is not None and (isinstance(m, bool) or not isinstance(m, int | float)
                          or m != int(m) or m < 1):
        raise JaxplaceError(f"must be a positive integer, got {m!r}",
                            field="meta.training.n_microbatches")
    v = s.n_virtual
    need = SCHEDULES[s.schedule][1]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1 or (need and v != need):
        raise JaxplaceError(f"schedule {s.schedule!r} cannot run {v!r} chunks per rank",
                            field="meta.training.n_virtual")
    for name in ("state_factor", "held_bytes_per_unit", "step_factor"):
        f = getattr(s, name)
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0 <= f < math.inf:
            raise JaxplaceError(f"must be non-negative and finite, got {f!r}",
                                field=f"meta.training.{name}")
    return s


def _attr(graph, name: str, default: np.ndarray) -> np.ndarray:
    a = graph.node_attrs.get(name)
    if a is None:
        return default
    a = np.asarray(a, dtype=np.float64)
    if a.shape != (graph.num_nodes,) or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise JaxplaceError("must hold one finite, non-negative number per node",
                            field=f"node_attrs.{name}")
    return a


def training_ops(graph) -> TrainingOps:
    """The per-op arrays of `graph` (defaults as the module doc says)."""
    s = settings_of(graph)
    fwd = np.asarray(graph.work, np.float64)
    bwd = _attr(graph, "bwd_work", DEFAULT_BACKWARD_RATIO * fwd)
    param = np.asarray(graph.size_param, np.float64)
    weight = _attr(graph, "weight_work", np.where(param > 0, bwd / 2, 0.0))
    if np.any(weight > bwd * (1 + 1e-12)):
        raise JaxplaceError("an op's weight-gradient time exceeds its backward time",
                            field="node_attrs.weight_work")
    opt = _attr(graph, "opt_work", np.zeros(graph.num_nodes))
    act = _attr(graph, "act_bytes", np.zeros(graph.num_nodes))
    return TrainingOps(fwd, bwd, np.minimum(weight, bwd), opt, act,
                       param * (2.0 + s.state_factor),
                       param * (2.0 + s.state_factor + s.step_factor), s)


def check_contiguous(assignment: np.ndarray) -> tuple[list[int], list[int]]:
    """(starts, block per stage) of a split whose blocks are runs of the node order;
    a JaxplaceError naming the first block split in two."""
    starts = [0] + [i for i in range(1, len(assignment)) if assignment[i] != assignment[i - 1]]
    blocks = [int(assignment[i]) for i in starts]
    if len(set(blocks)) != len(blocks):
        b = next(b for b in blocks if blocks.count(b) > 1)
        raise JaxplaceError(f"block {b} is not one run of consecutive ops: a training "
                            "pipeline splits the op order into contiguous stages",
                            field="assignment")
    return starts, blocks


def boundary_sends(graph, starts: list[int], bandwidth: float) -> np.ndarray:
    """(stages - 1,) seconds per microbatch across each boundary: every tensor crosses
    the boundaries between its producer's stage and its last consumer's; a tensor
    consumed before the stage that makes it is a JaxplaceError (not a pipeline)."""
    n_stages = len(starts)
    stage = np.searchsorted(np.asarray(starts), np.arange(graph.num_nodes), side="right") - 1
    diff = np.zeros(n_stages + 1)
    prod = graph.tensor_producer
    for t in range(graph.num_tensors):
        cons = graph.consumers(t)
        if len(cons) == 0:
            continue
        p = int(stage[prod[t]])
        lo, hi = int(min(stage[c] for c in cons)), int(max(stage[c] for c in cons))
        if lo < p:
            raise JaxplaceError(f"a tensor of stage {p} is read by stage {lo}, before it: "
                                "the node order is not a topological order",
                                field="graph")
        if hi > p:
            diff[p] += graph.tensor_size[t]
            diff[hi] -= graph.tensor_size[t]
    return np.cumsum(diff)[: n_stages - 1] / bandwidth


@lru_cache(maxsize=256)
def stage_in_flight(schedule: str, n_stages: int, m: int, n_virtual: int) -> tuple[int, ...]:
    """(stages,) the most microbatches each global stage holds activations for."""
    p = n_stages // n_virtual
    return tuple(int(x) for x in held_activations(
        schedule, pipeline_order(schedule, p, m, n_virtual), n_stages)[1])


def runnable(settings: TrainingSettings, n_stages: int, k: int) -> str:
    """"" when the schedule runs `n_stages` stages (of a problem of at most k), else
    why not."""
    v, s = settings.n_virtual, settings.schedule
    if n_stages % v:
        return f"{n_stages} stages do not fill {v} chunks per rank"
    p, m = n_stages // v, settings.microbatches(k)
    try:
        check_schedule(s, p, v, m)
    except JaxplaceError as exc:
        return exc.message
    return ""


def split_cost(graph, ops: TrainingOps, assignment: np.ndarray, k: int, *,
               bandwidth: float = 1.0, capacity: float = math.inf,
               simulate: bool = True) -> SplitCost:
    """The cost of the contiguous split `assignment` of a problem of at most k stages
    (checked by the caller to hold valid block indices)."""
    starts, _ = check_contiguous(assignment)
    n_stages = len(starts)
    bounds = [*starts, graph.num_nodes]
    seg = [slice(bounds[i], bounds[i + 1]) for i in range(n_stages)]
    fwd = np.asarray([ops.fwd[s].sum() for s in seg])
    bwd = np.asarray([ops.bwd[s].sum() for s in seg])
    weight = np.asarray([ops.weight[s].sum() for s in seg])
    send = boundary_sends(graph, starts, bandwidth)
    st = ops.settings
    m = st.microbatches(k)
    why = runnable(st, n_stages, k)
    held = np.zeros(n_stages, np.int64)
    if not why:
        held = np.asarray(stage_in_flight(st.schedule, n_stages, m, st.n_virtual))
    kept = np.zeros(n_stages)  # inputs and outputs a stage keeps per microbatch in flight
    if st.held_bytes_per_unit and n_stages > 1:
        crossing = boundary_sends(graph, starts, 1.0) * st.held_bytes_per_unit
        kept[:-1] += crossing
        kept[1:] += crossing
    memory = np.asarray([max(ops.state[s].sum() + (ops.act[s].sum() + kept[i]) * h
                             + ops.act[s].max(initial=0.0), ops.step[s].sum())
                         for i, (s, h) in enumerate(zip(seg, held, strict=True))])
    where = stage_rank(st.schedule, max(n_stages // st.n_virtual, 1), st.n_virtual) \
        if not why else list(range(n_stages))
    rank_mem = np.bincount(where, weights=memory, minlength=max(where) + 1)
    if not why and rank_mem.max() > capacity:
        r = int(rank_mem.argmax())
        why = f"rank {r} needs {rank_mem[r]:.6g} bytes, over the capacity {capacity:.6g}"
    a = np.asarray(assignment, np.int64)
    if why or not simulate:
        cost = math.inf if why else math.nan
        return SplitCost(cost, a, tuple(starts), fwd, bwd, send, memory, rank_mem, held,
                         None, why)
    split_w = {"weight": weight} if st.schedule in SPLIT_BACKWARD else {}
    tl = simulate_schedule(st.schedule, fwd, bwd, m, send=send,
                           n_virtual=st.n_virtual, **split_w)
    cost = tl.step_time + optimizer_tail(tl, ops, seg)
    return SplitCost(float(cost), a, tuple(starts), fwd, bwd, send, memory, rank_mem, held,
                     tl)


def optimizer_tail(tl, ops: TrainingOps, seg: list[slice]) -> float:
    """Seconds the optimizer step adds past the simulated step: each rank steps its
    stages' parameters after its last action."""
    opt = np.zeros(tl.num_ranks)
    for s, r in enumerate(tl.stage_rank):
        opt[r] += ops.opt[seg[s]].sum()
    if not opt.any():
        return 0.0
    end = np.zeros(tl.num_ranks)
    for e in tl.events:
        end[e.rank] = max(end[e.rank], e.end)
    t0 = min(e.start for e in tl.events)
    return float(max((end - t0 + opt).max() - tl.step_time, 0.0))
