"""The NumPy float64 list scheduler: the oracle of the batched JAX decoder.

`list_schedule(inst, priorities)`: Kahn's order with priorities (highest first, ties
to the smaller index; `objectives.throughput.reference.kahn` on a graph without placement units),
then every op in that order goes to the device where it finishes earliest (ties to
the lower index) among those where it can run and whose remaining memory holds it:

- its inputs that are not yet on the candidate device are sent there one after the
  other, in the order their producers finished (ties: tensor index); a transfer starts
  at max(producer finish, sender's send port free, receiver's receive port free) and
  occupies both ports until it arrives (instance.py); a tensor already sent to that
  device is reused;
- the op starts at max(device free, every input there); ports and devices are used
  without insertion: a new transfer or op never goes into an earlier idle gap, it
  starts after the last one that was booked (list scheduling as in HEFT without its
  insertion policy, Topcuoglu et al. 2002).

When no device can take an op, the makespan is +inf (the remaining ops get device -1
and infinite times). MOIRAI (Zhang et al. 2023) solves the same model with a MILP;
this scheduler is the decoder of the random-key searches.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.objectives.latency import _events
from jaxplace.objectives.latency.instance import LatencyInstance, Schedule, Transfer
from jaxplace.objectives.throughput.reference import kahn_csr


def kahn_order(graph: CompGraph, priorities) -> np.ndarray:
    """(n,) int64 topological order, the ready op of highest priority first, ties to the
    smaller index; priorities are compared in their own dtype (like reference.kahn)."""
    x = np.asarray(priorities)
    n = graph.num_nodes
    if x.shape != (n,):
        raise JaxplaceError(f"has shape {x.shape}, expected ({n},)", field="priorities")
    if x.dtype.kind not in "fiub" or (x.dtype.kind == "f" and np.isnan(x).any()):
        raise JaxplaceError("must be real numbers without NaN", field="priorities")
    # ops one by one (no placement units: the latency model places each op)
    return kahn_csr(x, graph.succ_ptr, graph.succ_idx, graph.pred_ptr)


def _plan(inst: LatencyInstance, v: int, q: int, st: dict):
    """(EFT of op v on device q, its start, its transfers [(tensor, src, start,
    finish)]) given the current state, without changing it; (inf, inf, []) when q
    cannot take v."""
    t = inst.times[v, q]
    if not np.isfinite(t) or st["used"][q] + inst.memory[v] > inst.capacity[q]:
        return np.inf, np.inf, []
    g = inst.graph
    finish, dev, arrival = st["finish"], st["device"], st["arrival"]
    ins = g.consumed_tensors(v)
    prod = g.tensor_producer[ins]
    ready = st["free"][q]
    send = st["send"].copy()
    recv = st["recv"][q]
    moves = []
    for j in sorted(range(len(ins)), key=lambda j: (finish[prod[j]], ins[j])):
        e, u = int(ins[j]), int(prod[j])
        p = int(dev[u])
        if p == q:
            r = finish[u]
        elif (e, q) in arrival:
            r = arrival[(e, q)]
        else:
            s = max(finish[u], send[p], recv)
            r = s + inst.link_latency[p, q] + inst.tensor_bytes[e] / inst.bandwidth[p, q]
            send[p] = recv = r
            moves.append((e, p, s, r))
        ready = max(ready, r)
    return ready + t, ready, moves


def schedule_order(inst: LatencyInstance, order, device=None) -> Schedule:
    """The earliest-finish-time list schedule of a topological `order` (module doc);
    with `device` ((n,) int), every op goes to its given device instead (ASAP there,
    same port rules; +inf makespan when the devices' memory or times do not allow)."""
    n, d = inst.n, inst.num_devices
    st = {"finish": np.full(n, np.inf), "device": np.full(n, -1, np.int64),
          "free": np.zeros(d), "send": np.zeros(d), "recv": np.zeros(d),
          "used": np.zeros(d), "arrival": {}}
    start = np.full(n, np.inf)
    transfers: list[Transfer] = []
    for v in np.asarray(order, dtype=np.int64):
        v = int(v)
        best, begin, moves, q_best = np.inf, np.inf, [], -1
        for q in (range(d) if device is None else (int(device[v]),)):
            f, b, m = _plan(inst, v, q, st)
            if f < best:  # strict: ties keep the lower device index
                best, begin, moves, q_best = f, b, m, q
        if q_best < 0:
            break
        for e, p, s, r in moves:
            transfers.append(Transfer(e, p, q_best, float(s), float(r)))
            st["arrival"][(e, q_best)] = r
            st["send"][p] = r
            st["recv"][q_best] = r
        st["device"][v] = q_best
        st["finish"][v] = best
        start[v] = begin
        st["free"][q_best] = best
        st["used"][q_best] += inst.memory[v]
    return Schedule(st["device"], start, st["finish"], tuple(transfers))


def replay_schedule(inst: LatencyInstance, device, schedule: Schedule) -> Schedule | None:
    """The semi-active schedule of `device`'s events in the order of `schedule`'s start
    times (ops, and transfers by (tensor, destination)): the schedule itself when it is
    a valid semi-active one (every schedule jaxplace builds), never longer when it is
    valid. None when the placement does not fit (memory) or an op cannot run on its
    device: `schedule_order` then gives the infeasible answer."""
    dev = np.asarray(device, np.int64)
    n = inst.n
    if not np.all(np.isfinite(inst.times[np.arange(n), dev])):
        return None
    used = np.bincount(dev, weights=inst.memory, minlength=inst.num_devices)
    if np.any(used > inst.capacity):
        return None
    tstart = {(int(t.tensor), int(t.dst)): float(t.start) for t in schedule.transfers}
    return _events.rebuild(inst, dev, np.asarray(schedule.start, np.float64), tstart)


def list_schedule(inst: LatencyInstance, priorities) -> Schedule:
    """The list schedule of Kahn(priorities) (module docstring)."""
    return schedule_order(inst, kahn_order(inst.graph, priorities))


def makespans(inst: LatencyInstance, X) -> np.ndarray:
    """(P,) float64 makespans of (P, n) priority rows (the decoder's oracle)."""
    X = np.atleast_2d(np.asarray(X))
    return np.array([list_schedule(inst, x).makespan for x in X])


def critical_path(inst: LatencyInstance) -> float:
    """Longest path of the graph with every op on its fastest device and free transfers
    (a lower bound on any makespan)."""
    g = inst.graph
    best = inst.times.min(axis=1)
    top = np.zeros(inst.n)
    for v in g.topo_order:
        preds = g.predecessors(v)
        top[v] = (top[preds].max() if len(preds) else 0.0) + best[v]
    return float(top.max()) if inst.n else 0.0


def lower_bound(inst: LatencyInstance) -> float:
    """max(critical path, total fastest work / devices): no schedule is shorter."""
    work = float(inst.times.min(axis=1).sum()) / inst.num_devices
    return max(critical_path(inst), work)


__all__ = ["critical_path", "kahn_order", "list_schedule", "lower_bound", "makespans",
           "replay_schedule", "schedule_order"]
