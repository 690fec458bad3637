"""MOIRAI's latency MILP (Zhang et al. 2023, Sec. III-D, (4)-(8)) on HiGHS.

Variables, in the paper's names: x_ik (op i on device k), S_i (start; the completion
C_i = S_i + sum_k p_ik x_ik is kept as that expression), and for the data flows their
own start times and channel indicators u. Constraints: one device per op (4c),
memory (5), precedence (4a), non-overlap of ops on a device with an order indicator
delta_ij and big-M (6), only for pairs that no path orders, communication (7), and
port congestion (8).

Where this differs from the paper, to match instance.py:

- Data flows are hyperedges. The paper has one flow node q per edge (i, j), sent when
  i and j sit on different devices. Here a tensor e goes once to every device q that
  holds one of its consumers and not its producer, however many consumers sit there.
  So the flow variables are per (tensor, destination): R_eq (start) and
  u_epq = 1 iff the producer is on p != q and some consumer is on q, i.e.
  u_epq >= x_up + x_cq - 1 for each consumer c, u_epq <= x_up, u_epq <= sum_c x_cq
  (u is then exactly determined by x, so it is a continuous column). Its duration is
  sum_p u_epq (latency[p, q] + bytes_e / bandwidth[p, q]) (directed links, as (7)).
  A consumer c waits for it when it sits on q: S_c >= R_eq + dur_eq - H (1 - x_cq).
- Congestion (8) per port. The paper orders two flows that share a "channel" of
  device k: a sender side (both producers on k) and a receiver side (both consumers
  on k). instance.py gives each device one send and one receive port, so two
  transfers from the same device, or into the same device, never overlap: one
  indicator per pair of (tensor, destination) transfers, rows for each shared sender
  p (active when u_epq = u_fpr = 1) and, for equal destinations, one row active when
  both are sent. The paper's z_q (flow q is sent) is sum_p u_epq here.
- Pairs that a path orders in every placement are left out, as in (6) and (8): two
  ops when one reaches the other; two transfers (e, q), (f, r) when every consumer
  of e is, or reaches, the producer of f (whichever consumer sits on q waits for e
  and precedes f's producer, so e's transfer ends before f's starts).
- One big-M, H: the makespan of the best schedule known (greedy or the warm start),
  valid because the model also keeps Z <= H, and every time of a schedule that short
  is at most H. Times are scaled by H / 100 for HiGHS's absolute tolerances.

The solver's placement and event order are turned back into an exact semi-active
schedule (`_events.rebuild`), which is validated; `makespan` is that schedule's.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.latency import _events
from jaxplace.objectives.latency._model import ModelBuilder, add, horizon_and_start, model_scale
from jaxplace.objectives.latency.instance import LatencyInstance, Schedule, validate_schedule


@dataclass(frozen=True)
class LatencyMILPResult:
    """Outcome of one latency MILP solve.

    Attributes:
        status: HiGHS model status ("Optimal", "Time limit reached", "Infeasible", ...).
        makespan: the incumbent's makespan in seconds (inf when there is none).
        bound: a valid lower bound on the model's optimum (the dual bound, never below
            `latency_lower_bound`); for `solve_moirai` a lower bound on the latency
            optimum, for `contiguous.solve_contiguous` only on its restricted model.
        schedule: the incumbent as an exact, validated Schedule (None when none).
        time: seconds spent (model building and solving).
    """

    status: str
    makespan: float
    bound: float
    schedule: Schedule | None
    time: float

    @property
    def gap(self) -> float:
        """(makespan - bound) / makespan; 0 when proven optimal, inf without incumbent."""
        if not math.isfinite(self.makespan):
            return math.inf
        return max(0.0, self.makespan - self.bound) / max(self.makespan, 1e-300)


def reachability(inst: LatencyInstance) -> np.ndarray:
    """(n, n) bool: reach[a, b] when a path leads from a to b (a != b)."""
    g, n = inst.graph, inst.n
    reach = np.zeros((n, n), dtype=bool)
    for v in g.topo_order[::-1]:
        for s in g.successors(int(v)):
            reach[v, s] = True
            reach[v] |= reach[s]
    return reach


def latency_lower_bound(inst: LatencyInstance) -> float:
    """A cheap valid lower bound on the optimal makespan (seconds).

    The largest of: the slowest op at its fastest device; the longest path with each
    op at its fastest device and free communication; and a load bound: for weights
    lambda_p >= 0 summing to 1, makespan >= sum_p lambda_p busy_p >= sum_v min_p
    lambda_p t_vp (tried with equal weights and with weights proportional to each
    device's speed, 1 / median op time; with times w_v / s_p the latter is
    sum_v w_v / sum_p s_p, total work over total speed).
    """
    t = inst.times
    fast = np.min(t, axis=1)
    if inst.n == 0 or not np.all(np.isfinite(fast)):
        return math.inf if inst.n else 0.0
    g = inst.graph
    longest = np.zeros(inst.n)
    for v in g.topo_order:
        pred = g.predecessors(int(v))
        longest[v] = fast[v] + (float(np.max(longest[pred])) if len(pred) else 0.0)
    bounds = [float(np.max(fast)), float(np.max(longest))]
    for lam in load_weights(t):
        bounds.append(load_bound(t, lam))
    return max(b for b in bounds if math.isfinite(b))


def load_weights(t: np.ndarray) -> list[np.ndarray]:
    """The device weights of `latency_lower_bound`'s load bound: equal, and by speed
    (1 / median runnable op time). A device whose median time is 0 is infinitely fast:
    the speed weights then go to such devices only (any weights summing to 1 are
    valid; an unusable device gets weight 0, never an infinite one)."""
    d = t.shape[1]
    out = [np.full(d, 1.0 / d)]
    med = np.array([np.median(t[np.isfinite(t[:, p]), p]) if np.any(np.isfinite(t[:, p]))
                    else np.inf for p in range(d)])
    free = med == 0
    if free.any():
        out.append(free / free.sum())
    elif np.any(np.isfinite(med)):
        speed = np.where(np.isfinite(med), 1.0 / med, 0.0)
        out.append(speed / speed.sum())
    return out


def load_bound(t: np.ndarray, lam: np.ndarray) -> float:
    """sum_v min_p lam_p t_vp: a lower bound on sum_p lam_p busy_p <= the makespan
    (weights lam >= 0 summing to 1). An op counts 0 on a weight-0 device where it can
    run, and cannot use a device where its time is inf."""
    w = np.where(np.isfinite(t), lam[None, :] * np.where(np.isfinite(t), t, 0.0), np.inf)
    return float(np.sum(np.min(w, axis=1)))


@dataclass
class _Cols:
    """Column ids of the MOIRAI model (-1 where a column does not exist)."""

    x: np.ndarray  # (n, d) placement
    S: np.ndarray  # (n,) op start
    u: dict  # (e, p, q) -> channel indicator
    R: dict  # (e, q) -> transfer start
    d_op: dict  # (i, j) -> order indicator, i before j when 1
    d_tr: dict  # ((e, q), (f, r)) -> order indicator, first before second when 1
    Z: int


class OutOfTime(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """Building the model ran past the caller's deadline."""


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise OutOfTime


def build_moirai(inst: LatencyInstance, H: float, lb: float, scale: float,
                 deadline: float | None = None):
    """The MOIRAI model in units of `scale` seconds: (ModelBuilder, _Cols)."""
    g, n, d = inst.graph, inst.n, inst.num_devices
    t = inst.times / scale
    Hs = H / scale * (1 + 1e-9)
    m = ModelBuilder()
    runnable = np.isfinite(t)
    x = m.cols(n * d, 0.0, runnable.reshape(-1).astype(float), integer=True).reshape(n, d)
    S = m.cols(n, 0.0, Hs)
    Z = int(m.cols(1, min(lb / scale, Hs), Hs, cost=1.0)[0])

    def C(v, terms=None, sign=1.0):
        terms = {} if terms is None else terms
        add(terms, S[v], sign)
        for p in range(d):
            if runnable[v, p]:
                add(terms, x[v, p], sign * t[v, p])
        return terms

    for v in range(n):
        m.row({int(x[v, p]): 1.0 for p in range(d) if runnable[v, p]}, 1.0, 1.0)  # (4c)
        m.row(C(v, {Z: 1.0}, -1.0), 0.0)  # Z >= C_v
    for p in range(d):  # (5)
        if np.isfinite(inst.capacity[p]) and inst.memory[runnable[:, p]].sum() > inst.capacity[p]:
            m.row({int(x[v, p]): inst.memory[v] for v in range(n) if runnable[v, p]},
                  hi=inst.capacity[p])
    for u_, c in g.edges:  # (4a) on direct edges; paths follow
        m.row(C(int(u_), {int(S[c]): 1.0}, -1.0), 0.0)

    u, R = {}, {}
    dur = {}
    for e in range(g.num_tensors):
        prod = int(g.tensor_producer[e])
        cons = [int(c) for c in inst.tensor_consumers(e)]
        for q in range(d):
            on_q = [c for c in cons if runnable[c, q]]
            srcs = [p for p in range(d) if p != q and runnable[prod, p]]
            if not on_q or not srcs:
                continue
            R[(e, q)] = int(m.cols(1, 0.0, Hs)[0])
            m.row(C(prod, {R[(e, q)]: 1.0}, -1.0), 0.0)  # transfer after its producer
            for p in srcs:
                col = int(m.cols(1, 0.0, 1.0)[0])
                u[(e, p, q)] = col
                dur[(e, p, q)] = inst.transfer_time(e, p, q) / scale
                for c in on_q:  # (7): sent when producer on p and a consumer on q
                    m.row({col: 1.0, int(x[prod, p]): -1.0, int(x[c, q]): -1.0}, -1.0)
                m.row({col: 1.0, int(x[prod, p]): -1.0}, hi=0.0)
                m.row(add({int(x[c, q]): -1.0 for c in on_q}, col, 1.0), hi=0.0)
            for c in on_q:  # the consumer waits for the transfer when on q
                terms = {int(S[c]): 1.0, R[(e, q)]: -1.0, int(x[c, q]): -Hs}
                for p in srcs:
                    add(terms, u[(e, p, q)], -dur[(e, p, q)])
                m.row(terms, -Hs)

    reach = reachability(inst)
    d_op = {}
    for i, j in itertools.combinations(range(n), 2):  # (6)
        if j == i + 1:  # the O(n^2) part: stop at the caller's deadline
            _check_deadline(deadline)
        if reach[i, j] or reach[j, i]:
            continue
        shared = [p for p in range(d) if runnable[i, p] and runnable[j, p]]
        if not shared:
            continue
        dl = int(m.cols(1, 0.0, 1.0, integer=True)[0])
        d_op[(i, j)] = dl
        for p in shared:
            both = {int(x[i, p]): -Hs, int(x[j, p]): -Hs}
            # delta = 0: i after j;  delta = 1: j after i
            m.row(add(C(j, {int(S[i]): 1.0} | both, -1.0), dl, Hs), -2 * Hs)
            m.row(add(C(i, {int(S[j]): 1.0} | both, -1.0), dl, -Hs), -3 * Hs)

    d_tr = _congestion(inst, m, u, R, dur, reach, Hs, deadline)
    return m, _Cols(x, S, u, R, d_op, d_tr, Z)


def _congestion(inst, m, u, R, dur, reach, Hs, deadline=None) -> dict:
    """(8): transfers sharing a send or a receive port do not overlap."""
    g, d = inst.graph, inst.num_devices
    keys = sorted(R)
    cons = {e: [int(c) for c in inst.tensor_consumers(e)] for e in range(g.num_tensors)}

    def before(e, f):  # e's transfers always end before f's start
        pf = int(g.tensor_producer[f])
        return all(c == pf or reach[c, pf] for c in cons[e])

    def length(e, q):
        return {u[(e, p, q)]: dur[(e, p, q)] for p in range(d) if (e, p, q) in u}

    d_tr = {}
    for step, (a, b) in enumerate(itertools.combinations(keys, 2)):
        if step % 1024 == 0:
            _check_deadline(deadline)
        (e, q), (f, r) = a, b
        if e != f and (before(e, f) or before(f, e)):
            continue
        senders = [p for p in range(d) if (e, p, q) in u and (f, p, r) in u]
        if not senders and q != r:
            continue
        dl = int(m.cols(1, 0.0, 1.0, integer=True)[0])
        d_tr[(a, b)] = dl
        gates = [{u[(e, p, q)]: -Hs, u[(f, p, r)]: -Hs} for p in senders]
        if q == r:  # receive port: both sent at all
            gate = {}
            for col in length(e, q):
                add(gate, col, -Hs)
            for col in length(f, r):
                add(gate, col, -Hs)
            gates.append(gate)
        for gate in gates:
            # delta = 0: a after b;  delta = 1: b after a
            t1 = dict(gate)
            add(t1, R[a], 1.0)
            add(t1, R[b], -1.0)
            for col, w in length(f, r).items():
                add(t1, col, -w)
            add(t1, dl, Hs)
            m.row(t1, -2 * Hs)
            t2 = dict(gate)
            add(t2, R[b], 1.0)
            add(t2, R[a], -1.0)
            for col, w in length(e, q).items():
                add(t2, col, -w)
            add(t2, dl, -Hs)
            m.row(t2, -3 * Hs)
    return d_tr


def start_vector(inst: LatencyInstance, cols: _Cols, s: Schedule, scale: float,
                 ncol: int) -> np.ndarray:
    """The MIP start of a schedule (scaled units)."""
    g = inst.graph
    xv = np.zeros(ncol)
    dev = np.asarray(s.device)
    for v in range(inst.n):
        xv[cols.x[v, dev[v]]] = 1.0
        xv[cols.S[v]] = s.start[v] / scale
    xv[cols.Z] = s.makespan / scale
    sent = {(tr.tensor, tr.dst): (tr.start, tr.finish) for tr in s.transfers}
    rstart = {}
    for (e, q), col in cols.R.items():
        f = float(s.finish[g.tensor_producer[e]])
        rstart[(e, q)] = sent.get((e, q), (f, f))
        xv[col] = rstart[(e, q)][0] / scale
    for (e, p, q), col in cols.u.items():
        xv[col] = float((e, q) in sent and dev[g.tensor_producer[e]] == p)
    for (i, j), col in cols.d_op.items():
        xv[col] = float((s.start[i], s.finish[i]) <= (s.start[j], s.finish[j]))
    for (a, b), col in cols.d_tr.items():
        xv[col] = float(rstart[a] <= rstart[b])
    return xv


def decode(inst: LatencyInstance, cols: _Cols, col_value, scale: float) -> Schedule:
    """The exact semi-active schedule of the solver's placement and event order."""
    xv = np.asarray(col_value)
    dev = np.array([int(np.argmax(xv[cols.x[v]])) for v in range(inst.n)])
    start = xv[cols.S] * scale
    tstart = {k: xv[c] * scale for k, c in cols.R.items()}
    s = _events.rebuild(inst, dev, start, tstart)
    validate_schedule(inst, s)
    return s


def _prepare(inst: LatencyInstance, warm_start: Schedule | None):
    """Check the input; (big-M horizon H, best schedule known or None, lower bound)."""
    if not isinstance(inst, LatencyInstance):
        raise JaxplaceError("must be a LatencyInstance", field="inst")
    if warm_start is not None:
        try:
            validate_schedule(inst, warm_start)
        except AssertionError as exc:
            raise JaxplaceError(f"is not a valid schedule: {exc}", field="warm_start") from None
    H, best = horizon_and_start(inst, warm_start)
    lb = latency_lower_bound(inst)
    return H, best, lb


#: HiGHS's share when building the model took the whole limit (it returns its first
#: bound, valid, at once)
MIN_SOLVE_SECONDS = 0.05


def solve_built(inst, m: ModelBuilder, cols, *, scale, lb, best, time_limit, threads,
                mip_rel_gap, relax: bool, start_fn, decode_fn, t0: float,
                clip_bound: bool = True) -> LatencyMILPResult:
    """Solve a built model and wrap the outcome (shared by both latency MILPs).

    `clip_bound`: report min(dual bound, makespan), right when the model's optimum is
    the latency optimum; the contiguous IP's bound bounds its own model only, which
    the decoded (possibly shorter) schedule does not bound, so it stays unclipped.
    """
    from jaxplace.highs import solve_arrays  # highspy loads on first use

    arrays = m.arrays()
    start = None
    if best is not None and not relax:
        start = start_fn(inst, cols, best, scale, m.num_cols)
    # the limit covers building the model too: HiGHS gets what is left of it
    left = max(time_limit - (time.perf_counter() - t0), MIN_SOLVE_SECONDS)
    res = solve_arrays(arrays, relax=relax, time_limit=left, threads=threads,
                       mip_rel_gap=mip_rel_gap, z_floor=0.0 if relax else lb,
                       scale=scale, start=start)
    sched = None
    if not relax and res.col_value is not None:
        sched = decode_fn(inst, cols, res.col_value, scale)
    if best is not None and not relax and (sched is None or best.makespan < sched.makespan):
        sched = best  # HiGHS may drop a start it finds slightly infeasible
    makespan = sched.makespan if sched is not None else math.inf
    bound = max(res.bound, 0.0 if relax else lb)
    if clip_bound and not relax:
        bound = min(bound, makespan)
    return LatencyMILPResult(status=res.status, makespan=float(makespan),
                             bound=float(bound), schedule=sched,
                             time=time.perf_counter() - t0)


def solve_moirai(inst: LatencyInstance, time_limit: float = 60.0,
                 warm_start: Schedule | None = None, threads: int = 1, *,
                 mip_rel_gap: float = 1e-7) -> LatencyMILPResult:
    """Solve MOIRAI's MILP for `inst` (module docstring), minimizing the makespan.

    Args:
        time_limit: HiGHS wall-clock limit in seconds.
        warm_start: a valid schedule (else JaxplaceError). The shorter of it and the
            greedy schedule (`_events.greedy_schedule`) is the MIP start, given to
            HiGHS with setSolution, and its makespan is the big-M H.
        threads: HiGHS threads (process-wide, see jaxplace.highs.HighsScheduler).
        mip_rel_gap: relative gap at which HiGHS stops.
    """
    t0 = time.perf_counter()
    H, best, lb = _prepare(inst, warm_start)
    scale = model_scale(inst, H)
    try:
        m, cols = build_moirai(inst, H, lb, scale, deadline=t0 + time_limit)
    except OutOfTime:  # the closed-form bound and the best schedule known
        return _unbuilt(best, lb, t0)
    return solve_built(inst, m, cols, scale=scale, lb=lb, best=best,
                       time_limit=time_limit, threads=threads, mip_rel_gap=mip_rel_gap,
                       relax=False, start_fn=start_vector, decode_fn=decode, t0=t0)


def _unbuilt(best: Schedule | None, lb: float, t0: float) -> LatencyMILPResult:
    """The answer when the time limit ran out while building the model."""
    mk = best.makespan if best is not None else math.inf
    return LatencyMILPResult(status=UNBUILT, makespan=float(mk), bound=float(min(lb, mk)),
                             schedule=best, time=time.perf_counter() - t0)


#: `LatencyMILPResult.status` when the time limit ran out while building the model
UNBUILT = "Time limit reached (building the model)"


def moirai_lp_bound(inst: LatencyInstance, time_limit: float = 60.0,
                    threads: int = 1) -> float:
    """The optimum of MOIRAI's LP relaxation, a valid lower bound. Never below
    `latency_lower_bound` (the makespan column starts there); with big-M rows it is
    rarely much above it."""
    t0 = time.perf_counter()
    H, best, lb = _prepare(inst, None)
    scale = model_scale(inst, H)
    try:
        m, cols = build_moirai(inst, H, lb, scale, deadline=t0 + time_limit)
    except OutOfTime:
        return float(lb)
    res = solve_built(inst, m, cols, scale=scale, lb=lb, best=None,
                      time_limit=time_limit, threads=threads, mip_rel_gap=1e-7,
                      relax=True, start_fn=start_vector, decode_fn=decode, t0=t0)
    return res.bound
