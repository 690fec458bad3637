"""The exact SliceGraph DP of one order, fast enough for 20,000-node orders.

Same recurrence and costs as `objectives.throughput.reference.slice_order` (float64; placement
units, overflow and capacity included), pruned without losing the optimum:

- an upper bound `ub` on the optimum (the equal-work cut of the same order, evaluated
  exactly, or a caller's incumbent): a segment whose work alone exceeds `ub` never
  helps, so the columns only span the last segments of work <= ub (prefix sums);
  a segment over the capacity is cut off the same way;
- Q[j][t] is only computed for the block counts j that can still finish under `ub`:
  ceil(work(prefix) / ub) <= j <= k - ceil(work(suffix) / ub);
- every column is one (j, l) array operation, the segment costs are streamed with
  range additions restricted to the window.

With a bound below the optimum the answer is a one-block partition of cost +inf.
CPU blocks are delegated to the reference when the order is small, else refused.
"""

from __future__ import annotations

import math

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import slice_order, unit_order
from jaxplace.partition import Partition
from jaxplace.problem import Problem
from jaxplace.units import sorted_unique

#: Largest order (in placement units) handed to the O(n^2 k) reference when the
#: problem has CPU blocks, which this DP does not model.
CPU_REFERENCE_MAX_UNITS = 3000
#: Relative slack on the work-bound pruning, far above float64 rounding of prefix sums.
_SLACK = 1e-9


def column_events(problem: Problem, upos: np.ndarray):
    """Vectorized `objectives.throughput.reference._column_events`, as CSR arrays by column:
    (ptr (U+1,), lo, hi, delta): from column r on, segments [l, r'] with
    lo <= l <= hi gain delta."""
    g, B = problem.graph, problem.bandwidth
    U = len(upos)
    node_pos = upos[g.units.unit_of]
    t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    size = g.tensor_size / B
    keep = (size[t_of] > 0)
    t_of, cpos = t_of[keep], node_pos[g.tensor_consumers[keep]]
    pairs = sorted_unique(t_of * U + cpos)
    t_of, cpos = pairs // U, pairs % U  # sorted by tensor, then position
    if len(t_of) == 0:
        z = np.zeros(0, np.int64)
        return np.zeros(U + 1, np.int64), z, z, np.zeros(0)
    s = size[t_of]
    p = node_pos[g.tensor_producer[t_of]]
    first = np.r_[True, t_of[1:] != t_of[:-1]]
    last = np.r_[t_of[1:] != t_of[:-1], True]
    tt = t_of[first]
    st, pt = size[tt], node_pos[g.tensor_producer[tt]]
    lo_t = np.minimum(pt, cpos[first])
    hi_t = np.maximum(pt, cpos[last])
    zero = np.zeros_like(pt)
    cols, los, his, ds = [pt, hi_t], [zero, zero], [pt, lo_t], [st, -st]
    # consumers after the producer: (prev + 1, c] from column c, prev the previous one
    after = cpos > p
    ca, ta, sa, pa = cpos[after], t_of[after], s[after], p[after]
    prev = np.where(np.r_[True, ta[1:] != ta[:-1]], pa, np.r_[0, ca[:-1]])
    cols.append(ca), los.append(prev + 1), his.append(ca), ds.append(sa)
    # consumers before it: (prev + 1, e] from column e, and -s on [0, e_q] at p
    before = cpos < p
    cb, tb, sb, pb = cpos[before], t_of[before], s[before], p[before]
    prev = np.where(np.r_[True, tb[1:] != tb[:-1]], -1, np.r_[0, cb[:-1]])
    cols.append(cb), los.append(prev + 1), his.append(cb), ds.append(sb)
    lastb = np.r_[tb[1:] != tb[:-1], True] if len(tb) else np.zeros(0, bool)
    cols.append(pb[lastb]), los.append(np.zeros(int(lastb.sum()), np.int64))
    his.append(cb[lastb]), ds.append(-sb[lastb])
    col = np.concatenate(cols)
    order = np.argsort(col, kind="stable")
    ptr = np.zeros(U + 1, np.int64)
    np.cumsum(np.bincount(col, minlength=U), out=ptr[1:])
    return (ptr, np.concatenate(los)[order].astype(np.int64),
            np.concatenate(his)[order].astype(np.int64), np.concatenate(ds)[order])


def _unit_arrays(problem: Problem, uo: np.ndarray):
    units = problem.graph.units
    U = len(uo)
    work = np.bincount(units.unit_of, weights=problem.graph.work, minlength=U)[uo]
    param = np.bincount(units.unit_of, weights=problem.graph.size_param, minlength=U)[uo]
    bad = np.bincount(units.unit_of, weights=~problem.supported, minlength=U)[uo]
    return work, param, bad


def equal_work_cuts(work: np.ndarray, k: int) -> np.ndarray:
    """Start positions of blocks 1.. of the cut of a sequence into min(k, len) pieces
    of about equal work."""
    csum = np.cumsum(work)
    k = min(k, len(work))
    targets = csum[-1] * np.arange(1, k) / k
    return np.unique(np.clip(np.searchsorted(csum, targets, side="right"), 1,
                             len(work) - 1)) if k > 1 else np.zeros(0, np.int64)


def slice_units(problem: Problem, order, bound: float | None = None) -> Partition:
    """Optimal split of a node `order` into at most k contiguous blocks (the cost of
    `objectives.throughput.reference.slice_order`); see the module doc. `bound`: only partitions
    costing at most it are looked for (+inf cost when there is none)."""
    g = problem.graph
    problem.objective_impl.require("identical_devices", field="problem")
    uo = unit_order(g, order)
    U = len(uo)
    if problem.cpus:
        if U <= CPU_REFERENCE_MAX_UNITS:
            return slice_order(problem, order)
        raise JaxplaceError(f"CPU blocks are sliced by the O(n^2 k) reference only up to "
                            f"{CPU_REFERENCE_MAX_UNITS} placement units; this order has "
                            f"{U}", field="cpus")
    units = g.units
    work, param, bad = _unit_arrays(problem, uo)
    ustart = np.concatenate([[0], np.cumsum(np.diff(units.members_ptr)[uo])])
    node_order = np.asarray(uo, np.int64) if units.trivial else np.concatenate(
        [units.unit_members(u) for u in uo]).astype(np.int64)
    K = min(problem.k, U)
    seg = _dp(problem, uo, work, param, bad, K, bound)
    if seg is None:
        seg, cost = [(0, U)], math.inf
    else:
        seg, cost = seg
    assignment = np.empty(g.num_nodes, np.int64)
    for b, (s0, s1) in enumerate(seg):
        assignment[node_order[ustart[s0]:ustart[s1]]] = b
    cuts = tuple(int(ustart[s0]) for s0, _ in seg[1:])
    return Partition(node_order, cuts, assignment, float(cost))


def _dp(problem, uo, work, param, bad, K, bound):
    """[(start, stop)] unit segments and the optimal cost, or None (nothing <= bound)."""
    U = len(uo)
    if bad.any():  # an accelerator-unsupported op and no CPU block: nothing is finite
        return None
    B = problem.bandwidth
    wp = np.concatenate([[0.0], np.cumsum(work)])
    pp = np.concatenate([[0.0], np.cumsum(param)])
    ub = _equal_work_bound(problem, uo, work)
    if bound is not None:
        ub = min(ub, float(bound))
    upos = np.empty(U, np.int64)
    upos[uo] = np.arange(U)
    eptr, elo, ehi, ed = column_events(problem, upos)
    t_all = np.arange(1, U + 1)
    if math.isfinite(ub):
        lim = ub * (1 + _SLACK) + 1e-300
        L = np.searchsorted(wp, wp[1:] - lim, side="left")
        jlo = np.maximum(1, np.ceil(wp[1:] / lim - _SLACK)).astype(np.int64)
        jhi = K - np.ceil((wp[-1] - wp[1:]) / lim - _SLACK).astype(np.int64)
        jhi = np.minimum(jhi, K)
    else:
        L = np.zeros(U, np.int64)
        jlo, jhi = np.ones(U, np.int64), np.full(U, K)
    if problem.capacity is not None:  # params only grow leftwards: cut the window
        cap = problem.capacity_limit
        Lc = np.searchsorted(pp, pp[1:] - cap, side="left")
        L = np.maximum(L, np.maximum(Lc - 1, 0))
    L = np.minimum(np.maximum.accumulate(L), t_all - 1)
    jhi[-1] = K
    Q = np.full((K + 1, U + 1), np.inf)
    Q[0, 0] = 0.0
    start = np.full((K + 1, U + 1), -1, np.int32)
    cost = np.zeros(U)
    mem, capl = problem.memory, problem.capacity_limit
    eptr_l = eptr.tolist()
    work_l, L_l, jlo_l, jhi_l = work.tolist(), L.tolist(), jlo.tolist(), jhi.tolist()
    for r in range(U):
        lw = L_l[r]
        e0, e1 = eptr_l[r], eptr_l[r + 1]
        if e1 - e0 > DENSE_EVENTS:  # many events (dense graphs): one difference array
            _add_events(cost, lw, r, elo[e0:e1], ehi[e0:e1], ed[e0:e1])
        else:
            for e in range(e0, e1):
                lo, hi = int(elo[e]), int(ehi[e])
                if hi >= lw:
                    cost[max(lo, lw):hi + 1] += ed[e]
        cost[lw:r + 1] += work_l[r]
        ja, jb = jlo_l[r], jhi_l[r]
        if ja > jb:
            continue
        col = cost[lw:r + 1]
        if mem is not None or problem.capacity is not None:
            prm = pp[r + 1] - pp[lw:r + 1]
            if mem is not None:
                col = col + np.maximum(0.0, prm - mem) / B
            if problem.capacity is not None:
                col = np.where(prm > capl, np.inf, col)
        t = r + 1
        M = np.maximum(Q[ja - 1:jb, lw:t], col)
        idx = M.argmin(axis=1)
        vals = M[np.arange(jb - ja + 1), idx]
        prev = Q[ja - 1, t]
        for i, j in enumerate(range(ja, jb + 1)):
            v = vals[i]
            if prev <= v:
                Q[j, t] = prev
            else:
                Q[j, t], start[j, t], prev = v, lw + idx[i], v
    best = Q[K, U]
    if not math.isfinite(best) or (bound is not None and best > bound * (1 + _SLACK)):
        return None
    seg, j, t = [], K, U
    while t > 0:
        s0 = int(start[j, t])
        if s0 < 0:
            j -= 1
            if j == 0:
                return None
            continue
        seg.append((s0, t))
        j, t = j - 1, s0
    seg.reverse()
    return seg, float(best)


#: A column with more events than this adds them through one difference array
#: (`_add_events`) rather than a slice each: dense graphs have hundreds per column.
DENSE_EVENTS = 16


def _add_events(cost: np.ndarray, lw: int, r: int, lo: np.ndarray, hi: np.ndarray,
                d: np.ndarray) -> None:
    """cost[max(lo, lw):hi + 1] += d for every event whose range reaches lw, as one
    prefix sum over the window [lw, r] (the same sums as adding them one by one, in
    another order: equal up to float64 rounding)."""
    keep = hi >= lw
    lo, hi, d = np.maximum(lo[keep], lw) - lw, hi[keep] - lw + 1, d[keep]
    w = r + 2 - lw
    diff = np.bincount(lo, weights=d, minlength=w) - np.bincount(hi, weights=d, minlength=w)
    cost[lw:r + 1] += np.cumsum(diff[:w - 1])


def _equal_work_bound(problem: Problem, uo: np.ndarray, work: np.ndarray) -> float:
    """The exact cost of the equal-work cut of this unit order (an upper bound on the
    DP's optimum), +inf when infeasible."""
    units = problem.graph.units
    cuts = equal_work_cuts(work, problem.k)
    block_of_pos = np.zeros(len(uo), np.int64)
    block_of_pos[cuts] = 1
    block_of_pos = np.cumsum(block_of_pos)
    ublock = np.empty(len(uo), np.int64)
    ublock[uo] = block_of_pos
    a = ublock[units.unit_of]
    return float(evaluate_partition(problem, a).bottleneck)


__all__ = ["CPU_REFERENCE_MAX_UNITS", "column_events", "equal_work_cuts", "slice_units"]
