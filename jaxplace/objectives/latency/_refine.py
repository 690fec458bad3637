"""Local search over device assignments and op order with fixed devices (host, float64).

The list-scheduling decoder puts each op on its earliest-finish device, so some
schedules (an op on a device where it finishes later, to keep a faster device free
for the critical path) are the list schedule of no priority vector. On small graphs
that costs up to ~12% against MOIRAI's MILP optimum (`python -m experiments.bench.latency --small`).
`refine(inst, schedule)` closes it: it replays a schedule as an op order (by start
time) with its devices fixed (`reference.schedule_order(inst, order, device)`: the
same port and device rules, ASAP on the given device), then hill-climbs with two
moves, keeping any that shortens the makespan:

- reassign one op, or one op and one of its graph neighbours, to another device;
  the new devices are scored with the current order and with the HEFT order for
  those devices (`rank_order`: upward ranks with each op's time on its device and
  the transfer times its edges then cost), the better kept;
- swap two adjacent ops of the order that no edge joins (the order stays
  topological), which changes the order of their transfers on shared ports.

Passes repeat until one finds nothing; then, while `time_limit` lasts, the best
schedule is kicked (`KICK` random ops to random devices) and climbed again, kept when
shorter (iterated local search). Every candidate is scored by the float64 reference
itself, so the answer is a valid schedule of the model.
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.objectives.latency.instance import LatencyInstance, Schedule
from jaxplace.objectives.latency.reference import kahn_order, schedule_order

#: Relative improvement a move must bring (guards against float noise cycling).
RTOL = 1e-12
#: Ops moved to random devices by one kick of the iterated local search.
KICK = 3


def start_order(inst: LatencyInstance, s: Schedule) -> np.ndarray:
    """(n,) int64 topological order of a schedule's ops by start time (ties: the
    graph's topological order, for zero-time ops)."""
    topo = np.empty(inst.n, np.int64)
    topo[inst.graph.topo_order] = np.arange(inst.n)
    return np.lexsort((topo, s.start)).astype(np.int64)


def rank_order(inst: LatencyInstance, dev: np.ndarray, out: list) -> np.ndarray:
    """(n,) int64 Kahn order by upward ranks for fixed devices `dev`; `out[v]` lists
    (tensor, consumer) pairs of op v."""
    g = inst.graph
    t = inst.times[np.arange(inst.n), dev]
    rank = np.zeros(inst.n)
    for v in g.topo_order[::-1]:
        tail = 0.0
        for e, c in out[v]:
            tail = max(tail, inst.transfer_time(e, int(dev[v]), int(dev[c])) + rank[c])
        rank[v] = t[v] + tail
    return kahn_order(g, rank)


def _out_pairs(inst: LatencyInstance) -> list:
    out: list = [[] for _ in range(inst.n)]
    for e in range(inst.graph.num_tensors):
        p = int(inst.graph.tensor_producer[e])
        out[p].extend((e, int(c)) for c in inst.tensor_consumers(e))
    return out


def _edges(inst: LatencyInstance) -> set[tuple[int, int]]:
    g = inst.graph
    return {(int(u), int(v)) for v in range(inst.n) for u in g.predecessors(v)}


def _climb(inst, order, dev, best, edges, nbrs, t_end, out):
    """First-improvement hill climb in place on (order, dev); the best schedule."""
    d = inst.num_devices
    improved = True
    while improved and time.perf_counter() < t_end:
        improved = False
        for v in range(inst.n):
            for group in ((v,), *((v, u) for u in nbrs[v])):
                for q in range(d):
                    if all(dev[w] == q for w in group) or not all(
                            np.isfinite(inst.times[w, q]) for w in group):
                        continue
                    old = dev[list(group)].copy()
                    dev[list(group)] = q
                    c = schedule_order(inst, order, dev)
                    r = schedule_order(inst, rank_order(inst, dev, out), dev)
                    if r.makespan < c.makespan:
                        c = r
                    if c.makespan < best.makespan * (1 - RTOL):
                        best, improved = c, True
                        order[:] = start_order(inst, c)
                    else:
                        dev[list(group)] = old
                    if time.perf_counter() >= t_end:
                        return best
        for i in range(inst.n - 1):
            a, b = int(order[i]), int(order[i + 1])
            if (a, b) in edges:
                continue
            order[i], order[i + 1] = b, a
            c = schedule_order(inst, order, dev)
            if c.makespan < best.makespan * (1 - RTOL):
                best, improved = c, True
            else:
                order[i], order[i + 1] = a, b
    return best


def refine(inst: LatencyInstance, s: Schedule, *, time_limit: float = 5.0,
           seed: int = 0) -> Schedule:
    """A schedule no longer than `s` after the search of the module docstring."""
    t_end = time.perf_counter() + time_limit
    rng = np.random.default_rng(seed)
    order = start_order(inst, s)
    dev = np.asarray(s.device, np.int64).copy()
    if inst.n == 0 or np.any(dev < 0):
        return s
    best = schedule_order(inst, order, dev)
    if not best.makespan <= s.makespan:  # replay longer (not semi-active): keep s
        best = s
    g = inst.graph
    edges = _edges(inst)
    nbrs = [sorted({int(u) for u in g.predecessors(v)} | {int(w) for w in g.successors(v)})
            for v in range(inst.n)]
    out = _out_pairs(inst)
    best = _climb(inst, order, dev, best, edges, nbrs, t_end, out)
    d = inst.num_devices
    while time.perf_counter() < t_end and d > 1:
        o2 = start_order(inst, best)
        d2 = np.asarray(best.device, np.int64).copy()
        for v in rng.choice(inst.n, size=min(KICK, inst.n), replace=False):
            ok = np.flatnonzero(np.isfinite(inst.times[v]))
            d2[v] = int(rng.choice(ok))
        c = schedule_order(inst, o2, d2)
        if not np.isfinite(c.makespan):
            continue
        c = _climb(inst, o2, d2, c, edges, nbrs, t_end, out)
        if c.makespan < best.makespan * (1 - RTOL):
            best = c
    return best


__all__ = ["rank_order", "refine", "start_order"]
