"""Baselines of the latency objective, each a `Schedule` valid in the model of
instance.py (makespans computed by the reference scheduler, never estimated):

- `fastest_single_device`: every op on one device (the fastest whose memory holds the
  whole graph), in topological order: no transfers.
- `eft_greedy`: HEFT (Topcuoglu, Hariri and Wu, IEEE TPDS 2002) without insertion:
  upward ranks (mean time over the devices plus the mean transfer time of each
  outgoing tensor over the links) as priorities of `list_schedule`. It stands in for
  MOIRAI's m-SCT baseline (Baechi), which also places each op where it starts/finishes
  earliest; m-SCT's ILP for favourite children is not reproduced.
- `best_pipeline`: the DFS linearization (`jaxplace.search.baselines.dfs_order`) cut
  into contiguous segments, each on its own device, devices in any order and any
  subset. A DP over (devices used so far as a bitmask, last device, cut position)
  picks the cuts and the device order minimizing the sum of the segments' times plus,
  at every cut, the bytes of the tensors crossing it over the link between the two
  segments' devices (tensors that skip a segment are charged as if they crossed from
  the previous segment: an estimate). Segment memory must fit its device. The chosen
  assignment is then scheduled exactly (ops in DFS order, each on its segment's
  device, `schedule_order` with fixed devices); since the DP's cut cost is an
  estimate, the fastest single device (a one-segment pipeline) is kept when shorter.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from jaxplace.objectives.latency.instance import LatencyInstance, Schedule
from jaxplace.objectives.latency.reference import list_schedule, schedule_order


def _infeasible(n: int) -> Schedule:
    return Schedule(np.full(n, -1, np.int64), np.full(n, np.inf), np.full(n, np.inf), ())


def fastest_single_device(inst: LatencyInstance) -> Schedule:
    """All ops on the device with the smallest total time that holds them all (an
    infinite-makespan schedule when none does)."""
    g = inst.graph
    total = inst.times.sum(axis=0)
    fits = (inst.memory.sum() <= inst.capacity) & np.isfinite(total)
    if not fits.any():
        return _infeasible(inst.n)
    p = int(np.argmin(np.where(fits, total, np.inf)))
    return schedule_order(inst, g.topo_order, np.full(inst.n, p, np.int64))


def upward_ranks(inst: LatencyInstance) -> np.ndarray:
    """(n,) HEFT upward ranks: mean op time + max over outgoing tensors of (mean transfer
    time + the consumer's rank)."""
    g = inst.graph
    d = inst.num_devices
    ok = np.isfinite(inst.times)  # mean over the devices an op can run on
    w = np.where(ok, inst.times, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1)
    off = ~np.eye(d, dtype=bool)
    if d > 1:
        lat = inst.link_latency[off].mean()
        inv = (1.0 / inst.bandwidth[off]).mean()
        comm = lat + inst.tensor_bytes * inv
    else:
        comm = np.zeros(g.num_tensors)
    rank = np.zeros(inst.n)
    out_ptr = np.searchsorted(g.tensor_producer, np.arange(inst.n + 1)) \
        if np.all(np.diff(g.tensor_producer) >= 0) else None
    by_prod: list[list[int]] = [[] for _ in range(inst.n)]
    if out_ptr is None:
        for e, u in enumerate(g.tensor_producer):
            by_prod[int(u)].append(e)
    for v in g.topo_order[::-1]:
        es = range(out_ptr[v], out_ptr[v + 1]) if out_ptr is not None else by_prod[v]
        tail = 0.0
        for e in es:
            cs = inst.tensor_consumers(e)
            if len(cs):
                tail = max(tail, comm[e] + rank[cs].max())
        rank[v] = w[v] + tail
    return rank


def eft_greedy(inst: LatencyInstance) -> Schedule:
    """HEFT without insertion: `list_schedule` with upward-rank priorities."""
    return list_schedule(inst, upward_ranks(inst))


def _cut_bytes(inst: LatencyInstance, order: np.ndarray) -> np.ndarray:
    """(n+1,) bytes of the tensors crossing each cut position of `order` (a tensor
    crosses cut i when its producer is before i and some consumer at or after i)."""
    g = inst.graph
    pos = np.empty(inst.n, np.int64)
    pos[order] = np.arange(inst.n)
    delta = np.zeros(inst.n + 2)
    for e in range(g.num_tensors):
        cs = inst.tensor_consumers(e)
        if not len(cs):
            continue
        a, b = pos[g.tensor_producer[e]] + 1, pos[cs].max()
        if b >= a:
            delta[a] += inst.tensor_bytes[e]
            delta[b + 1] -= inst.tensor_bytes[e]
    return np.cumsum(delta)[:inst.n + 1]


def _window_min(vals: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every j in 1..n: min and argmin of vals[i] over lo[j] <= i < j (lo
    nondecreasing); inf / -1 when the window is empty."""
    n = len(vals) - 1
    best = np.full(n + 1, np.inf)
    arg = np.full(n + 1, -1, np.int64)
    dq: deque[int] = deque()
    for j in range(1, n + 1):
        i = j - 1
        while dq and vals[dq[-1]] >= vals[i]:
            dq.pop()
        dq.append(i)
        while dq and dq[0] < lo[j]:
            dq.popleft()
        if dq and np.isfinite(vals[dq[0]]):
            best[j], arg[j] = vals[dq[0]], dq[0]
    return best, arg


def best_pipeline(inst: LatencyInstance, order=None) -> Schedule:
    """The contiguous pipeline of the module docstring, scheduled exactly."""
    from jaxplace.search.baselines import dfs_order

    n, d = inst.n, inst.num_devices
    order = dfs_order(inst.graph) if order is None else np.asarray(order, np.int64)
    t = inst.times[order]
    bad = ~np.isfinite(t)  # ops that cannot run on a device end its segments
    S = np.vstack([np.zeros((1, d)), np.cumsum(np.where(bad, 0.0, t), axis=0)])  # (n+1, d)
    M = np.concatenate([[0.0], np.cumsum(inst.memory[order])])
    cross = _cut_bytes(inst, order)
    # lo[p][j]: first cut i with segment [i, j) fitting device p's memory and holding
    # no op that p cannot run
    last_bad = np.vstack([np.zeros((1, d), np.int64),
                          np.maximum.accumulate(np.where(bad, np.arange(1, n + 1)[:, None], 0),
                                                axis=0)])
    lo = [np.maximum(np.searchsorted(M, M - inst.capacity[p] * (1 + 1e-12), side="left"),
                     last_bad[:, p]) for p in range(d)]
    full = 1 << d
    f = np.full((full, d, n + 1), np.inf)  # f[mask, last, j]: ops [0, j) placed
    back = {}
    for p in range(d):
        seg = S[:, p] - S[0, p]
        ok = (np.arange(n + 1) >= 1) & (lo[p] <= 0)
        f[1 << p, p] = np.where(ok, seg, np.inf)
    for mask in range(1, full):
        for last in range(d):
            if not (mask >> last) & 1 or not np.isfinite(f[mask, last]).any():
                continue
            for p in range(d):
                if (mask >> p) & 1:
                    continue
                comm = inst.link_latency[last, p] + cross / inst.bandwidth[last, p]
                vals = f[mask, last] + comm - S[:, p]
                vals[n] = np.inf  # a segment starts before the end
                best, arg = _window_min(vals, lo[p])
                cand = best + S[:, p]
                nm = mask | (1 << p)
                better = cand < f[nm, p]
                f[nm, p] = np.where(better, cand, f[nm, p])
                for j in np.flatnonzero(better):
                    back[(nm, p, int(j))] = (mask, last, int(arg[j]))
    end = f[:, :, n]
    if not np.isfinite(end).any():
        return _infeasible(n)
    mask, last = np.unravel_index(int(np.argmin(end)), end.shape)
    device = np.empty(n, np.int64)
    j, mask, last = n, int(mask), int(last)
    while True:
        prev = back.get((mask, last, j))
        i = 0 if prev is None else prev[2]
        device[order[i:j]] = last
        if prev is None:
            break
        mask, last, j = prev
    s = schedule_order(inst, order, device)
    single = fastest_single_device(inst)
    return single if single.makespan < s.makespan else s


BASELINES = {"single": fastest_single_device, "eft": eft_greedy, "pipeline": best_pipeline}

__all__ = ["BASELINES", "best_pipeline", "eft_greedy", "fastest_single_device",
           "upward_ranks"]
