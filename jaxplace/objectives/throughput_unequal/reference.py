"""NumPy float64 reference of pipeline throughput on unequal devices: the oracle of
its batched `decoder` (the cost model is in `model`).

- `slice_on_devices(inst, order, devices, k)`: the slicing DP of docs/problem.md section 2
  (Archer et al., ICML 2024) with the device sequence given: the order is split into
  S <= k contiguous non-empty stages, stage s on `devices[s]` (a prefix of the
  sequence). With P[s][t] the best bottleneck of the first t ops in exactly s+1
  stages, and c_s(l, t) the cost of positions l..t-1 as stage s,

      P[0][t] = c_0(0, t),   P[s][t] = min_{s <= l < t} max(P[s-1][l], c_s(l, t)),

  answer min_s P[s][n] (ties: fewer stages). c_s(l, t) = W_p(t) - W_p(l) +
  in_s(l) + out_s(t) (W_p: prefix sums of the op times on p = devices[s]; in/out: the
  traffic of cut l over devices[s-1] -> p and of cut t over p -> devices[s+1]), +inf
  when the memory of l..t-1 exceeds p's. O(n^2 k) time, O(n k) memory.
- `decode(inst, x, k)`: Kahn(node keys), device order by the device keys, then the DP.
- `evaluate_stages(inst, assignment, devices)`: per-stage costs of any pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.reference import check_order, kahn
from jaxplace.objectives.throughput_unequal.model import (
    capacity_limit,
    check_devices,
    cut_traffic,
    device_sequence,
    link_times,
)
from jaxplace.partition import Partition

#: Rows of the (t, l) cost matrix built at once by the DP.
_ROWS = 256


@dataclass(frozen=True, eq=False)
class StageCosts:
    """Per-stage costs of a pipeline on unequal devices; arrays are (S,) in stage order.

    Attributes:
        assignment: (n,) int64 stage of every op, 0..S-1 in pipeline order.
        devices: (S,) int64 device (cluster index) of each stage.
        ops: (S,) int64 op count.  compute: (S,) seconds of the stage's ops on its
        device.  transfer_in, transfer_out: (S,) seconds over the links from the
        previous and to the next stage.  memory: (S,) bytes.  fits: (S,) bool.
        total: (S,) seconds, +inf where memory does not fit.
    """

    assignment: np.ndarray
    devices: np.ndarray
    ops: np.ndarray
    compute: np.ndarray
    transfer_in: np.ndarray
    transfer_out: np.ndarray
    memory: np.ndarray
    fits: np.ndarray
    total: np.ndarray

    @property
    def bottleneck(self) -> float:
        """The largest stage time: seconds per sample."""
        return float(self.total.max())

    @property
    def cost(self) -> float:
        """The objective's value: the bottleneck."""
        return self.bottleneck

    @property
    def feasible(self) -> bool:
        return bool(np.isfinite(self.bottleneck))

    @property
    def num_stages(self) -> int:
        return len(self.total)


def _stage_links(inst, devices: np.ndarray, s: int) -> tuple[int, int, int]:
    """(previous, own, next) device of stage s (own for a missing neighbour)."""
    p = int(devices[s])
    a = int(devices[s - 1]) if s > 0 else p
    b = int(devices[s + 1]) if s + 1 < len(devices) else p
    return a, p, b


def slice_on_devices(inst, order, devices, k: int) -> Partition:
    """The best split of `order` into at most k stages on a prefix of `devices`
    (module docstring). Returns a Partition whose `devices` holds each stage's device;
    cost +inf (one stage) when no split fits the memory."""
    g = inst.graph
    n, d = g.num_nodes, inst.num_devices
    order = check_order(g, order)
    devices = check_devices(devices, d)
    K = max(1, min(int(k), len(devices), n))
    W = np.vstack([np.zeros((1, d)), np.cumsum(inst.times[order], axis=0)])
    M = np.concatenate([[0.0], np.cumsum(inst.memory[order])])
    cnt, byt = cut_traffic(g, inst.tensor_bytes, order)
    cap = capacity_limit(inst.capacity)
    P = np.full((K, n + 1), np.inf)
    arg = np.zeros((K, n + 1), np.int64)
    prev = np.full(n + 1, np.inf)
    prev[0] = 0.0
    for s in range(K):
        a, p, b = _stage_links(inst, devices, s)
        tin = link_times(inst, cnt, byt, a, p)  # (n+1,) by cut l
        tout = link_times(inst, cnt, byt, p, b)  # (n+1,) by cut t
        for t0 in range(1, n + 1, _ROWS):
            t = np.arange(t0, min(t0 + _ROWS, n + 1))
            c = (W[t, p][:, None] - W[None, :n, p]) + tin[None, :n] + tout[t][:, None]
            ok = (np.arange(n)[None, :] < t[:, None]) & \
                (M[t][:, None] - M[None, :n] <= cap[p])
            cand = np.where(ok, np.maximum(prev[None, :n], c), np.inf)
            j = np.argmin(cand, axis=1)
            P[s, t] = cand[np.arange(len(t)), j]
            arg[s, t] = j
        prev = P[s]
    S = int(np.argmin(P[:, n])) + 1  # ties: fewer stages
    cost = float(P[S - 1, n])
    if not np.isfinite(cost):
        return Partition(order, (), np.zeros(n, np.int64), np.inf,
                         devices=(int(devices[0]),))
    cuts, t = [], n
    for s in range(S - 1, 0, -1):
        t = int(arg[s, t])
        cuts.append(t)
    cuts.reverse()
    assignment = np.empty(n, np.int64)
    for s, piece in enumerate(np.split(order, cuts)):
        assignment[piece] = s
    return Partition(order, tuple(cuts), assignment, cost,
                     devices=tuple(int(x) for x in devices[:S]))


def decode(inst, x, k: int) -> Partition:
    """`slice_on_devices` of Kahn(x[:n]) on the device order of the keys x[n:n+d]
    (largest first; no device keys: the cluster's order)."""
    n, d = inst.n, inst.num_devices
    x = np.asarray(x)
    if x.ndim != 1 or len(x) not in (n, n + d):
        raise JaxplaceError(f"has shape {x.shape}, expected ({n},) or ({n + d},) "
                            "(node priorities, then device keys)", field="priorities")
    devs = device_sequence(x[n:], d) if len(x) == n + d else np.arange(d)
    return slice_on_devices(inst, kahn(inst.graph, x[:n]), devs, k)


def evaluate_stages(inst, assignment, devices) -> StageCosts:
    """Per-stage costs of `assignment` (a stage index per op; stages run in index
    order, empty ones are skipped) with stage s on device `devices[s]`.

    Raises JaxplaceError for a malformed assignment or device list, or an edge going
    from a later stage to an earlier one (naming the edge).
    """
    g = inst.graph
    n, d = g.num_nodes, inst.num_devices
    a = np.asarray(assignment.assignment if hasattr(assignment, "assignment")
                   else assignment)
    if a.shape != (n,) or a.dtype.kind not in "iu" or (n and a.min() < 0):
        raise JaxplaceError(f"must be ({n},) non-negative stage indices",
                            field="assignment")
    a = a.astype(np.int64)
    devices = check_devices(devices, d, int(a.max()) + 1)
    used = np.unique(a)
    stage = np.searchsorted(used, a)  # empty stages skipped
    devs = devices[used]
    S = len(used)
    e = g.edges
    back = np.flatnonzero(stage[e[:, 0]] > stage[e[:, 1]]) if len(e) else []
    if len(back):
        u, v = (int(z) for z in e[back[0]])
        raise JaxplaceError(f"edge {g.label(u)} -> {g.label(v)} goes from stage "
                            f"{a[u]} back to stage {a[v]}", field="assignment")
    compute = np.array([inst.times[stage == s, devs[s]].sum() for s in range(S)])
    memory = np.bincount(stage, weights=inst.memory, minlength=S)
    cnt, byt = np.zeros(S + 1), np.zeros(S + 1)  # cut s: before stage s
    for t in range(g.num_tensors):
        cons = g.consumers(t)
        if len(cons) == 0:
            continue
        lo, hi = stage[g.tensor_producer[t]], stage[cons].max()
        cnt[lo + 1:hi + 1] += 1
        byt[lo + 1:hi + 1] += inst.tensor_bytes[t]
    t_in, t_out = np.zeros(S), np.zeros(S)
    for s in range(1, S):
        t_in[s] = t_out[s - 1] = float(link_times(inst, cnt[s], byt[s], int(devs[s - 1]),
                                                  int(devs[s])))
    fits = memory <= capacity_limit(inst.capacity)[devs]
    total = np.where(fits, compute + t_in + t_out, np.inf)
    return StageCosts(stage, devs, np.bincount(stage, minlength=S), compute, t_in, t_out,
                      memory, fits, total)


__all__ = ["StageCosts", "decode", "evaluate_stages", "slice_on_devices"]
