"""Simulated timelines of pipeline-parallel training schedules.

`simulate_schedule` runs every rank's actions in the order the schedule gives them
(`schedule_orders.pipeline_order`, torch.distributed.pipelining's order), each as soon
as its rank is free and its inputs have arrived:

- F(s, j) waits for F(s - 1, j) and its send across boundary s - 1;
- B(s, j) waits for B(s + 1, j) and its send back (the last stage: for F(s, j), whose
  output the loss reads);
- W(s, j) (zero-bubble schedules) waits for B(s, j).

A send holds its sender for `send[b]` seconds right after the action that produced it
(SEND_F after F, SEND_B after B), as the stage cost of the throughput objective counts
a stage's sends in its time; stages on one rank (the V of `zbv`) exchange nothing. With
the order fixed, each action's earliest start is unique, so the timeline is the one
any event-by-event run of the same order gives (`schedule_reference` checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.pipeline.schedule_orders import (
    SCHEDULES,
    SPLIT_BACKWARD,
    Action,
    check_schedule,
    pipeline_order,
    stage_rank,
)

#: the kinds of a timeline's events; "F", "B", "W" compute, the sends move tensors
EVENT_KINDS = ("F", "B", "W", "SEND_F", "SEND_B")


@dataclass(frozen=True)
class ScheduleEvent:
    """One action of a rank's timeline: [start, end) in seconds from the step's start."""

    rank: int
    stage: int
    microbatch: int
    kind: str
    start: float
    end: float


@dataclass(frozen=True)
class ScheduleTimeline:
    """A simulated (or measured) training step of a pipeline schedule.

    Attributes:
        schedule: the schedule's name.
        step_time: seconds from the first action's start to the last one's end.
        bubble: (ranks,) float64, the fraction of the step each rank does not compute
            (sends count as idle).
        events: every action and send, ordered by (rank, start).
        order: per rank, the compute actions (kind, stage, microbatch) in run order.
        in_flight: (ranks,) int, the most (stage, microbatch) pairs whose activations a
            rank holds at once: from its forward to the end of its backward (to W under
            the zero-bubble schedules, whose weight gradient reads them).
        stage_in_flight: (stages,) int, the same per global stage.
        stage_rank: (stages,) the rank that runs each global stage.
    """

    schedule: str
    step_time: float
    bubble: np.ndarray
    events: tuple[ScheduleEvent, ...]
    order: tuple[tuple[Action, ...], ...]
    in_flight: np.ndarray
    stage_in_flight: np.ndarray
    stage_rank: tuple[int, ...]

    @property
    def num_ranks(self) -> int:
        return len(self.order)

    def rank_busy(self) -> np.ndarray:
        """(ranks,) seconds each rank computes (F, B and W events)."""
        return busy_seconds(self.events, self.num_ranks)


@dataclass(frozen=True)
class StageCosts:
    """Validated per-stage inputs of a simulation (seconds per microbatch).

    Attributes:
        fwd, bwd, weight: (stages,) float64; bwd is the B action's time (the whole
            backward, or its input-gradient part where W is split off), weight W's.
        send: (stages - 1,) float64 seconds to move one microbatch across each boundary.
    """

    fwd: np.ndarray
    bwd: np.ndarray
    weight: np.ndarray
    send: np.ndarray


def stage_costs(schedule: str, fwd, bwd, n_stages: int, *, send=0.0,
                weight=None) -> StageCosts:
    """Check and broadcast the per-stage costs; the zero-bubble schedules split the
    backward into B = bwd - weight and W = weight (weight defaults to bwd / 2)."""
    f = _vector(fwd, n_stages, "fwd")
    b = _vector(bwd, n_stages, "bwd")
    s = _vector(send, max(n_stages - 1, 0), "send")
    if schedule in SPLIT_BACKWARD:
        w = b / 2 if weight is None else _vector(weight, n_stages, "weight")
        if np.any(w > b * (1 + 1e-12) + 1e-300):
            raise JaxplaceError("the weight-gradient time must not exceed the backward "
                                "time it is part of", field="weight")
        return StageCosts(f, np.maximum(b - w, 0.0), w, s)
    if weight is not None:
        raise JaxplaceError(f"schedule {schedule!r} does not split the backward; "
                            "weight applies to 'zero-bubble' and 'zbv'", field="weight")
    return StageCosts(f, b, np.zeros(n_stages), s)


def _vector(x, n: int, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise JaxplaceError(f"not numbers: {exc}", field=name) from exc
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise JaxplaceError(f"expected {n} values, got shape {a.shape}", field=name)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise JaxplaceError("values must be finite and non-negative", field=name)
    return a


def dependencies(action: Action, n_stages: int, where: Sequence[int]
                 ) -> list[tuple[Action, int | None]]:
    """The actions `action` waits for, each with the boundary whose send it waits for
    too (None where the two run on one rank)."""
    kind, s, j = action
    if kind == "F":
        if s == 0:
            return []
        return [(("F", s - 1, j), None if where[s - 1] == where[s] else s - 1)]
    if kind == "B":
        if s == n_stages - 1:
            return [(("F", s, j), None)]
        return [(("B", s + 1, j), None if where[s + 1] == where[s] else s)]
    return [(("B", s, j), None)]


def action_time(action: Action, costs: StageCosts) -> float:
    kind, s, _ = action
    return float({"F": costs.fwd, "B": costs.bwd, "W": costs.weight}[kind][s])


def send_after(action: Action, n_stages: int, where: Sequence[int]) -> int | None:
    """The boundary across which `action`'s output is sent (None: no send)."""
    kind, s, _ = action
    if kind == "F" and s < n_stages - 1 and where[s + 1] != where[s]:
        return s
    if kind == "B" and s > 0 and where[s - 1] != where[s]:
        return s - 1
    return None


def simulate_schedule(schedule: str, fwd, bwd, n_microbatches: int, *, send=0.0,
                      n_virtual: int = 1, weight=None) -> ScheduleTimeline:
    """The timeline of one training step of `schedule`.

    Args:
        schedule: "gpipe", "1f1b", "interleaved-1f1b", "zero-bubble" or "zbv".
        fwd, bwd: (stages,) seconds per microbatch of each global stage's forward and
            whole backward (stages = ranks * n_virtual, stage s on rank s mod ranks;
            `zbv`: on rank s for s < ranks, else 2 ranks - 1 - s).
        n_microbatches: microbatches per step.
        send: seconds to move one microbatch's tensor across each stage boundary
            (scalar or (stages - 1,)), each way.
        n_virtual: chunks (stages) per rank: 1 for gpipe / 1f1b, 2 for zbv.
        weight: zero-bubble schedules: (stages,) seconds of the weight-gradient part
            W of each backward (default half of bwd); B takes the rest.
    """
    if schedule not in SCHEDULES:
        check_schedule(schedule, 1, 1, 1)
    n_virtual = int(n_virtual)
    n_stages = int(np.size(fwd))
    if n_virtual < 1 or n_stages % n_virtual or n_stages == 0:
        raise JaxplaceError(f"{n_stages} stages do not split into {n_virtual} chunk(s) "
                            "per rank", field="n_virtual")
    p = n_stages // n_virtual
    order = pipeline_order(schedule, p, int(n_microbatches), n_virtual)
    costs = stage_costs(schedule, fwd, bwd, n_stages, send=send, weight=weight)
    where = stage_rank(schedule, p, n_virtual)
    events = _run(order, costs, where)
    return timeline(schedule, order, events, where)


def _run(order: list[list[Action]], costs: StageCosts, where: Sequence[int]
         ) -> list[ScheduleEvent]:
    """Each rank's next action starts once the rank is free and its inputs are in."""
    n_stages = len(where)
    done: dict[Action, float] = {}  # action -> the time its output is ready to send
    sent: dict[Action, float] = {}  # action -> the time its send ends (its consumer's cue)
    nxt = [0] * len(order)
    free = [0.0] * len(order)
    events: list[ScheduleEvent] = []
    remaining = sum(len(o) for o in order)
    while remaining:
        moved = False
        for r, acts in enumerate(order):
            while nxt[r] < len(acts):
                a = acts[nxt[r]]
                deps = dependencies(a, n_stages, where)
                if any(d not in done for d, _ in deps):
                    break
                start = max([free[r], *((sent if b is not None else done)[d]
                                        for d, b in deps)])
                end = start + action_time(a, costs)
                events.append(ScheduleEvent(r, a[1], a[2], a[0], start, end))
                done[a] = end
                b = send_after(a, n_stages, where)
                if b is not None:
                    t = end + float(costs.send[b])
                    events.append(ScheduleEvent(r, a[1], a[2], "SEND_" + a[0], end, t))
                    end = t
                sent[a] = end
                free[r] = end
                nxt[r] += 1
                remaining -= 1
                moved = True
        if not moved:
            raise JaxplaceError("the schedule's order deadlocks: every rank waits for "
                                "an action another rank runs later", field="schedule")
    return events


def timeline(schedule: str, order: list[list[Action]], events: Sequence[ScheduleEvent],
             where: Sequence[int]) -> ScheduleTimeline:
    """The ScheduleTimeline of `events` (simulated or measured) run in `order`."""
    evs = tuple(sorted(events, key=lambda e: (e.rank, e.start, e.end)))
    t0 = min((e.start for e in evs), default=0.0)
    step = max((e.end for e in evs), default=0.0) - t0
    p = len(order)
    busy = busy_seconds(evs, p)
    bubble = 1.0 - busy / step if step > 0 else np.zeros(p)
    held_rank, held_stage = held_activations(schedule, order, len(where))
    return ScheduleTimeline(schedule, float(step), bubble, evs,
                            tuple(tuple(o) for o in order), held_rank, held_stage,
                            tuple(int(w) for w in where))


def busy_seconds(events: Sequence[ScheduleEvent], n_ranks: int) -> np.ndarray:
    """(ranks,) seconds each rank computes (F, B and W events)."""
    busy = np.zeros(n_ranks)
    for e in events:
        if e.kind in ("F", "B", "W"):
            busy[e.rank] += e.end - e.start
    return busy


def held_activations(schedule: str, order: list[list[Action]], n_stages: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """((ranks,), (stages,)) the most (stage, microbatch) activations held at once:
    taken by F, released by the last backward action (W where split off, else B).
    A rank runs its actions in order, so the most held over time is the most held
    after any prefix of its order."""
    release = "W" if schedule in SPLIT_BACKWARD else "B"
    per_rank = np.zeros(len(order), dtype=np.int64)
    per_stage = np.zeros(n_stages, dtype=np.int64)
    for r, acts in enumerate(order):
        held = 0
        stage_held = np.zeros(n_stages, dtype=np.int64)
        for kind, s, _ in acts:
            if kind == "F":
                held += 1
                stage_held[s] += 1
                per_stage[s] = max(per_stage[s], stage_held[s])
            elif kind == release:
                held -= 1
                stage_held[s] -= 1
            per_rank[r] = max(per_rank[r], held)
    return per_rank, per_stage
