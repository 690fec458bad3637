"""Pipeline timelines as Chrome / Perfetto traces (the Trace Event Format, JSON).

One file holds a predicted schedule (the simulator's `ScheduleTimeline`) and a
measured run (its per-action events on each rank, clocks aligned), each a process of
its own (pid 1 predicted, pid 2 measured), one thread per rank: open both in
ui.perfetto.dev or chrome://tracing and compare them side by side.

- every action (F, B, W) and send is an "X" (complete) event, `ts`/`dur` in
  microseconds from that timeline's start;
- a send is linked to the action that receives it by an "s"/"f" flow pair (from the
  sender's SEND event, or from the producing action where sends take no time);
- each rank's bubble share (the part of the step it does not compute) is a "C"
  counter event at t = 0 and in the thread's name, and `metadata.bubble` lists them.

Events are duck-typed: anything with rank, stage, microbatch, kind, start, end
(seconds) - `ScheduleEvent`s, or dicts with those keys.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.jsonio import write_json

COMPUTE_KINDS = ("F", "B", "W")
SEND_KINDS = ("SEND_F", "SEND_B")
PIDS = {"predicted": 1, "measured": 2}


@dataclass(frozen=True)
class _Ev:
    rank: int
    stage: int
    microbatch: int
    kind: str
    start: float
    end: float


def _events(timeline: Any, what: str) -> list[_Ev]:
    raw = getattr(timeline, "events", timeline)
    out = []
    try:
        for e in raw:
            get = e.get if isinstance(e, dict) else lambda k, e=e: getattr(e, k)
            ev = _Ev(int(get("rank")), int(get("stage")), int(get("microbatch")),
                     str(get("kind")), float(get("start")), float(get("end")))
            if ev.kind not in COMPUTE_KINDS + SEND_KINDS:
                raise ValueError(f"kind {ev.kind!r} is none of "
                                 f"{', '.join(COMPUTE_KINDS + SEND_KINDS)}")
            if not (np.isfinite(ev.start) and np.isfinite(ev.end)) or ev.end < ev.start:
                raise ValueError(f"event {ev} ends before it starts")
            out.append(ev)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise JaxplaceError(f"not a timeline of events (rank, stage, microbatch, kind, "
                            f"start, end): {exc}", field=what) from None
    if not out:
        raise JaxplaceError("has no events", field=what)
    return out


def bubble_shares(events: Iterable[Any]) -> np.ndarray:
    """(ranks,) the share of the step (first start to last end, over every rank) each
    rank spends outside F, B and W."""
    ev = list(events)
    t0 = min(e.start for e in ev)
    span = max(e.end for e in ev) - t0
    ranks = max(e.rank for e in ev) + 1
    busy = np.zeros(ranks)
    for e in ev:
        if e.kind in COMPUTE_KINDS:
            busy[e.rank] += e.end - e.start
    return 1.0 - busy / span if span > 0 else np.zeros(ranks)


def _receiver(e: _Ev, by_action: dict) -> _Ev | None:
    """The action that consumes what `e` produced on another rank, if any."""
    if e.kind in ("F", "SEND_F"):
        nxt = by_action.get(("F", e.stage + 1, e.microbatch))
    elif e.kind in ("B", "SEND_B"):
        nxt = by_action.get(("B", e.stage - 1, e.microbatch))
    else:
        return None
    return nxt if nxt is not None and nxt.rank != e.rank else None


def _process(events: list[_Ev], pid: int, name: str, flow0: int) -> tuple[list[dict], list]:
    t0 = min(e.start for e in events)
    us = 1e6
    bubble = bubble_shares(events)
    out: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
         "args": {"sort_index": pid}}]
    for r, b in enumerate(bubble):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": r,
                    "args": {"name": f"rank {r} (bubble {b:.1%})"}})
    out.append({"ph": "C", "name": "bubble share", "pid": pid, "tid": 0, "ts": 0.0,
                "args": {f"rank {r}": float(b) for r, b in enumerate(bubble)}})
    by_action = {(e.kind, e.stage, e.microbatch): e for e in events
                 if e.kind in COMPUTE_KINDS}
    sent = {(e.kind[-1], e.stage, e.microbatch) for e in events if e.kind in SEND_KINDS}
    flow = flow0
    for e in sorted(events, key=lambda e: (e.rank, e.start, e.end)):
        send = e.kind in SEND_KINDS
        label = (f"{e.kind}{e.microbatch} s{e.stage}" if not send else
                 f"send {'fwd' if e.kind == 'SEND_F' else 'bwd'} mb{e.microbatch} "
                 f"s{e.stage}")
        out.append({"name": label, "cat": "send" if send else "compute", "ph": "X",
                    "ts": (e.start - t0) * us, "dur": (e.end - e.start) * us, "pid": pid,
                    "tid": e.rank, "args": {"stage": e.stage, "microbatch": e.microbatch,
                                            "kind": e.kind}})
        # a flow from the send, or from the producing action where no send was recorded
        if send or (e.kind in ("F", "B") and (e.kind, e.stage, e.microbatch) not in sent):
            dst = _receiver(e, by_action)
            if dst is not None:
                flow += 1
                out.append({"name": "activation" if e.kind.endswith("F") else "gradient",
                            "cat": "send", "ph": "s", "id": flow, "pid": pid,
                            "tid": e.rank, "ts": (e.start - t0) * us})
                out.append({"name": "activation" if e.kind.endswith("F") else "gradient",
                            "cat": "send", "ph": "f", "bp": "e", "id": flow, "pid": pid,
                            "tid": dst.rank, "ts": (dst.start - t0) * us})
    return out, [float(b) for b in bubble], flow


def chrome_trace(predicted: Any = None, measured: Any = None, *,
                 labels: dict | None = None) -> dict:
    """The Trace Event Format dict of a predicted schedule and/or a measured run.

    Args:
        predicted: the simulator's ScheduleTimeline (or its events), seconds.
        measured: a run's events (per rank, one clock), seconds.
        labels: process names {"predicted": ..., "measured": ...}.
    """
    if predicted is None and measured is None:
        raise JaxplaceError("give a predicted timeline, a measured run, or both",
                            field="timeline")
    names = {"predicted": f"predicted ({getattr(predicted, 'schedule', 'schedule')})",
             "measured": "measured run", **(labels or {})}
    events: list[dict] = []
    meta: dict = {"bubble": {}, "step_time_s": {}, "generator": "jaxplace.view.trace"}
    flow = 0
    for what, timeline in (("predicted", predicted), ("measured", measured)):
        if timeline is None:
            continue
        ev = _events(timeline, what)
        part, bubble, flow = _process(ev, PIDS[what], names[what], flow)
        events += part
        meta["bubble"][what] = bubble
        meta["step_time_s"][what] = max(e.end for e in ev) - min(e.start for e in ev)
    return {"traceEvents": events, "displayTimeUnit": "ms", "metadata": meta}


def save_trace(path: str | os.PathLike, predicted: Any = None, measured: Any = None,
               **kwargs) -> dict:
    """Write `chrome_trace(...)` to `path` (JSON, atomically); returns the dict."""
    trace = chrome_trace(predicted, measured, **kwargs)
    write_json(path, trace, indent=None)
    return trace
