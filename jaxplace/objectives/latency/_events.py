"""The event graph that a placement implies, and semi-active schedules of it.

A placement (`device[v]` per op) fixes every event of the latency model (instance.py):
the n ops, and one transfer per (tensor, destination device) pair whose destination
holds a consumer and not the producer. Each event needs one or two resources: a
device (ops), or the sender's send port and the receiver's receive port (transfers).
Given an event order that respects the precedences, the semi-active schedule starts
every event, in that order, at the earliest time its inputs and its resources allow.

Shared by the brute force (it enumerates orders), the MILP decoders (they rebuild an
exact schedule from a solver's placement and order, so float tolerances of the solver
never reach the returned schedule) and the greedy upper bound the MILPs use as big-M
and as their default MIP start.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.latency.instance import LatencyInstance, Schedule, Transfer


@dataclass(frozen=True)
class EventGraph:
    """Events of one placement: ops 0..n-1, then transfers.

    Attributes:
        device: (n,) int device of each op.
        dur: (E,) float64 duration of each event.
        res: E tuples of resource ids (device p: p; send port p: d + p; receive
            port q: 2d + q).
        preds / succs: E lists of event ids.
        transfers: (tensor, src, dst) of events n.., in event order.
        rank: (E,) int position of each event in one fixed topological order.
    """

    device: np.ndarray
    dur: np.ndarray
    res: tuple[tuple[int, ...], ...]
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    transfers: tuple[tuple[int, int, int], ...]
    rank: np.ndarray

    @property
    def num_events(self) -> int:
        return len(self.dur)


def event_graph(inst: LatencyInstance, device) -> EventGraph:
    """The events, resources and precedences that `device` (n,) implies."""
    g, n, d = inst.graph, inst.n, inst.num_devices
    dev = np.asarray(device, dtype=np.int64)
    dur = [float(inst.times[v, dev[v]]) for v in range(n)]
    res: list[tuple[int, ...]] = [(int(dev[v]),) for v in range(n)]
    preds: list[list[int]] = [[] for _ in range(n)]
    transfers = []
    for e in range(g.num_tensors):
        u = int(g.tensor_producer[e])
        p = int(dev[u])
        sent: dict[int, int] = {}
        for c in inst.tensor_consumers(e):
            q = int(dev[c])
            if q == p:
                preds[c].append(u)
                continue
            if q not in sent:
                sent[q] = len(dur)
                transfers.append((e, p, q))
                dur.append(inst.transfer_time(e, p, q))
                res.append((d + p, 2 * d + q))
                preds.append([u])
            preds[c].append(sent[q])
    E = len(dur)
    succs: list[list[int]] = [[] for _ in range(E)]
    for b in range(E):
        preds[b] = sorted(set(preds[b]))
        for a in preds[b]:
            succs[a].append(b)
    rank = np.empty(E, dtype=np.int64)
    indeg = np.array([len(p) for p in preds])
    ready = [b for b in range(E) if indeg[b] == 0]
    heapq.heapify(ready)
    i = 0
    while ready:
        a = heapq.heappop(ready)
        rank[a] = i
        i += 1
        for b in succs[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(ready, b)
    return EventGraph(dev, np.asarray(dur, dtype=np.float64), tuple(res),
                      tuple(tuple(p) for p in preds), tuple(tuple(s) for s in succs),
                      tuple(transfers), rank)


def semi_active(inst: LatencyInstance, eg: EventGraph, order) -> Schedule:
    """Start each event of `order` (a topological order of `eg`) as early as possible."""
    n, d = inst.n, inst.num_devices
    free = np.zeros(3 * d)
    start = np.zeros(eg.num_events)
    finish = np.zeros(eg.num_events)
    for a in order:
        t = max((finish[b] for b in eg.preds[a]), default=0.0)
        t = max(t, max(free[r] for r in eg.res[a]))
        start[a], finish[a] = t, t + eg.dur[a]
        for r in eg.res[a]:
            free[r] = finish[a]
    return to_schedule(eg, start, finish, n)


def to_schedule(eg: EventGraph, start, finish, n: int) -> Schedule:
    # transfers listed by (start, finish): validate_schedule sorts each port's transfers
    # stably by start, so a zero-length transfer must come before one starting with it
    tr = sorted((Transfer(e, p, q, float(start[n + i]), float(finish[n + i]))
                 for i, (e, p, q) in enumerate(eg.transfers)),
                key=lambda t: (t.start, t.finish, t.tensor, t.dst))
    return Schedule(eg.device.copy(), np.asarray(start[:n], dtype=np.float64),
                    np.asarray(finish[:n], dtype=np.float64), tuple(tr))


def order_by_keys(eg: EventGraph, keys) -> list[int]:
    """A topological order taking, at each step, the ready event of smallest key.

    When sorting by `keys` (then by `eg.rank`) is itself a topological order, this is
    that sort; otherwise (a solver's times off by its tolerance) it is the closest
    topological order, and the schedule built from it stays valid.
    """
    indeg = [len(p) for p in eg.preds]
    ready = [(keys[a], eg.rank[a], a) for a in range(eg.num_events) if indeg[a] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        *_, a = heapq.heappop(ready)
        out.append(a)
        for b in eg.succs[a]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(ready, (keys[b], eg.rank[b], b))
    return out


def rebuild(inst: LatencyInstance, device, op_start, transfer_start: dict) -> Schedule:
    """The semi-active schedule of a placement in the order of given start times.

    Args:
        device: (n,) placement.
        op_start: (n,) start times of the ops (a solver's, possibly inexact).
        transfer_start: {(tensor, dst): start} for the transfers; missing ones are keyed
            at their producer's start.
    """
    eg = event_graph(inst, device)
    n = inst.n
    keys = []
    for a in range(eg.num_events):
        if a < n:
            keys.append((float(op_start[a]), float(op_start[a]) + eg.dur[a]))
        else:
            e, _, q = eg.transfers[a - n]
            u = int(inst.graph.tensor_producer[e])
            s = float(transfer_start.get((e, q), op_start[u]))
            keys.append((s, s + eg.dur[a]))
    return semi_active(inst, eg, order_by_keys(eg, keys))


def greedy_schedule(inst: LatencyInstance) -> Schedule | None:
    """The best of a few cheap feasible schedules (None when none fits memory).

    Earliest-finish-time placement of the ops in topological order (each op goes to
    the device where it would finish first, transfers simulated on the ports), and
    every single device that can hold and run all ops.
    """
    cands = []
    n, d = inst.n, inst.num_devices
    for p in range(d):
        if (np.all(np.isfinite(inst.times[:, p]))
                and inst.memory.sum() <= inst.capacity[p]):
            dev = np.full(n, p)
            cands.append(rebuild(inst, dev, np.zeros(n), {}))
    s = _eft(inst)
    if s is not None:
        cands.append(s)
    return min(cands, key=lambda s: s.makespan, default=None)


def _eft(inst: LatencyInstance) -> Schedule | None:
    g, n, d = inst.graph, inst.n, inst.num_devices
    dev = np.full(n, -1)
    finish = np.zeros(n)
    used = np.zeros(d)
    dev_free, send_free, recv_free = np.zeros(d), np.zeros(d), np.zeros(d)
    arrival: dict[tuple[int, int], float] = {}
    for v in g.topo_order:
        v = int(v)
        best = None
        for p in range(d):
            if not np.isfinite(inst.times[v, p]) or used[p] + inst.memory[v] > inst.capacity[p]:
                continue
            sf, rf = send_free.copy(), recv_free.copy()
            ready, new = 0.0, {}
            for e in g.consumed_tensors(v):
                e = int(e)
                u = int(g.tensor_producer[e])
                pu = int(dev[u])
                if pu == p:
                    ready = max(ready, finish[u])
                elif (e, p) in arrival:
                    ready = max(ready, arrival[(e, p)])
                else:
                    t0 = max(finish[u], sf[pu], rf[p])
                    t1 = t0 + inst.transfer_time(e, pu, p)
                    sf[pu] = rf[p] = t1
                    new[(e, p)] = t1
                    ready = max(ready, t1)
            f = max(ready, dev_free[p]) + inst.times[v, p]
            if best is None or f < best[0]:
                best = (f, p, sf, rf, new)
        if best is None:
            return None
        f, p, send_free, recv_free, new = best
        dev[v], finish[v] = p, f
        dev_free[p] = f
        used[p] += inst.memory[v]
        arrival.update(new)
    start = finish - inst.times[np.arange(n), dev]
    tstart = {k: t - inst.transfer_time(e, int(dev[g.tensor_producer[e]]), k[1])
              for k, t in arrival.items() for e in [k[0]]}
    return rebuild(inst, dev, start, tstart)
