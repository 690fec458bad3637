"""The latency IP for contiguous splits of Tarnawski et al. (NeurIPS 2020, Sec. 4 and
Appendix A), adapted to the latency model of instance.py.

Their model, as Section 4 describes it: x_vi places node v on device i; every device
holds a contiguous subgraph (Definition 3.1: no path leaves the set and comes back),
encoded with auxiliary z_vi (z_vi >= x_vi; z_wi >= z_vi on each edge (v, w);
z_vi <= x_vi - x_wi + 1 on each edge (v, w)): z_vi = 1 marks that v or one of its
ancestors is on i, and an edge that leaves i after such a node may not come back into
i. Each subgraph is invoked once, uninterrupted: it has a start and a finish time, all
its inputs are transferred in before it starts (CommIn), it computes its nodes, and its
outputs become available after it finishes (CommOut, Latency_v); the objective is the
largest finish. Subgraphs with no path between them run at the same time, which is
where the latency gain of model parallelism comes from.

What changes here, and why:

- Communication. Their transfers go through host RAM over each accelerator's PCIe link,
  at a cost c_u per node, paid once out of the producer and once into each consumer
  subgraph. instance.py sends a tensor directly from the producer's device p to each
  consumer device q, once per (tensor, destination), at latency[p, q] + bytes /
  bandwidth[p, q], and each device has one send and one receive port. So the CommIn
  variables become the per-(tensor, source, destination) indicators u_epq of
  `milp.py`, and a device's stage reads all its inputs in a receive phase just before
  it computes.
- Ports. For the ports to be respected without pairwise transfer disjunctions, the
  receive phases of different devices do not overlap (one order indicator per pair of
  devices, d(d-1)/2 of them): every transfer happens inside its receiver's phase,
  after its sender's stage finished, so two transfers never share a time, let alone a
  port. Compute phases still overlap freely with other stages.
- Stage order. Convex sets can still need each other: with edges a -> b and c -> d
  only, {a, d} and {b, c} are both convex, yet each stage waits for the other. The
  stage timing (inputs before start, outputs after finish) makes such a cycle
  infeasible whenever its times are positive, so the feasible splits are "one stage
  per device, visited in a device order": the order of the stages' start times, with
  every tensor flowing forward (the stages are differences of a chain of ideals, as in
  their DP, Fact 5.2).

Time line of device q: receive phase [B_q, B_q + in_q], in_q = sum of its incoming
transfer durations; compute phase [K_q, F_q], K_q >= B_q + in_q, F_q = K_q + sum of
its op times (ops in topological order); B_q >= F_p whenever q receives from p. The
makespan is max F_q.

Meaning of the numbers. Every solution is a valid schedule of instance.py's model (and
is decoded into its semi-active schedule, which is no longer), so the IP's optimum,
and any incumbent, is an upper bound on the true optimum; it exceeds it when the best
schedule needs a non-contiguous split, an op that starts before all inputs of its
stage arrived, or overlapping transfers. The IP's dual bound is a lower bound only on
this restricted class (stage-as-a-block schedules of contiguous splits), not on the
true optimum, so it must not be reported as a bound of the latency problem;
`milp.solve_moirai` and `milp.latency_lower_bound` give those.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.latency import _events
from jaxplace.objectives.latency._model import ModelBuilder, add, model_scale, serial_horizon
from jaxplace.objectives.latency.instance import LatencyInstance, Schedule, validate_schedule
from jaxplace.objectives.latency.milp import LatencyMILPResult, _prepare, solve_built


@dataclass
class _Cols:
    x: np.ndarray  # (n, d) placement
    z: np.ndarray  # (n, d) contiguity auxiliaries
    u: dict  # (e, p, q) -> sent from p to q
    B: np.ndarray  # (d,) receive-phase start
    K: np.ndarray  # (d,) compute-phase start
    order: dict  # (q, r) -> 1 when q's receive phase comes first
    Z: int


def build_contiguous(inst: LatencyInstance, H: float, lb: float, scale: float):
    """The adapted IP (module docstring) in units of `scale` seconds."""
    g, n, d = inst.graph, inst.n, inst.num_devices
    t = inst.times / scale
    Hs = H / scale * (1 + 1e-9)
    runnable = np.isfinite(t)
    m = ModelBuilder()
    x = m.cols(n * d, 0.0, runnable.reshape(-1).astype(float), integer=True).reshape(n, d)
    z = m.cols(n * d, 0.0, 1.0).reshape(n, d)
    B = m.cols(d, 0.0, Hs)
    K = m.cols(d, 0.0, Hs)
    Z = int(m.cols(1, min(lb / scale, Hs), Hs, cost=1.0)[0])

    def finish(q, terms, sign):  # F_q = K_q + sum_v t_vq x_vq
        add(terms, K[q], sign)
        for v in range(n):
            if runnable[v, q]:
                add(terms, x[v, q], sign * t[v, q])
        return terms

    for v in range(n):
        m.row({int(x[v, p]): 1.0 for p in range(d) if runnable[v, p]}, 1.0, 1.0)
    for p in range(d):
        if np.isfinite(inst.capacity[p]) and inst.memory[runnable[:, p]].sum() > inst.capacity[p]:
            m.row({int(x[v, p]): inst.memory[v] for v in range(n) if runnable[v, p]},
                  hi=inst.capacity[p])
        m.row(finish(p, {Z: 1.0}, -1.0), 0.0)
        for v in range(n):
            m.row({int(z[v, p]): 1.0, int(x[v, p]): -1.0}, 0.0)
        for a, b in g.edges:
            m.row({int(z[b, p]): 1.0, int(z[a, p]): -1.0}, 0.0)
            m.row({int(z[a, p]): 1.0, int(x[a, p]): -1.0, int(x[b, p]): 1.0}, hi=1.0)

    u, into = {}, {q: {} for q in range(d)}
    for e in range(g.num_tensors):
        prod = int(g.tensor_producer[e])
        cons = [int(c) for c in inst.tensor_consumers(e)]
        for p, q in itertools.permutations(range(d), 2):
            on_q = [c for c in cons if runnable[c, q]]
            if not on_q or not runnable[prod, p]:
                continue
            col = int(m.cols(1, 0.0, 1.0)[0])
            u[(e, p, q)] = col
            into[q][col] = inst.transfer_time(e, p, q) / scale
            for c in on_q:
                m.row({col: 1.0, int(x[prod, p]): -1.0, int(x[c, q]): -1.0}, -1.0)
            m.row({col: 1.0, int(x[prod, p]): -1.0}, hi=0.0)
            m.row(add({int(x[c, q]): -1.0 for c in on_q}, col, 1.0), hi=0.0)
            # q's receive phase starts after p's stage finished: B_q >= F_p - H (1 - u)
            m.row(finish(p, {int(B[q]): 1.0, col: -Hs}, -1.0), -Hs)
    for q in range(d):  # K_q >= B_q + in_q
        m.row({int(K[q]): 1.0, int(B[q]): -1.0} | {c: -w for c, w in into[q].items()}, 0.0)
    order = {}
    for q, r in itertools.combinations(range(d), 2):
        dl = int(m.cols(1, 0.0, 1.0, integer=True)[0])
        order[(q, r)] = dl
        # dl = 1: q's phase first (B_r >= B_q + in_q); dl = 0: r's first
        m.row({int(B[r]): 1.0, int(B[q]): -1.0, dl: -Hs}
              | {c: -w for c, w in into[q].items()}, -Hs)
        m.row({int(B[q]): 1.0, int(B[r]): -1.0, dl: Hs}
              | {c: -w for c, w in into[r].items()}, 0.0)
    return m, _Cols(x, z, u, B, K, order, Z)


def _decode(inst: LatencyInstance, cols: _Cols, col_value, scale: float) -> Schedule:
    """The semi-active schedule of the block schedule the solution describes."""
    xv = np.asarray(col_value)
    n = inst.n
    dev = np.array([int(np.argmax(xv[cols.x[v]])) for v in range(n)])
    B, K = xv[cols.B] * scale, xv[cols.K] * scale
    start = np.zeros(n)
    clock = K.copy()
    for v in inst.graph.topo_order:
        start[v] = clock[dev[v]]
        clock[dev[v]] += inst.times[v, dev[v]]
    eg = _events.event_graph(inst, dev)
    tstart, phase = {}, B.copy()
    for e, p, q in eg.transfers:
        tstart[(e, q)] = phase[q]
        phase[q] += inst.transfer_time(e, p, q)
    s = _events.rebuild(inst, dev, start, tstart)
    validate_schedule(inst, s)
    return s


def _single_device(inst: LatencyInstance) -> Schedule | None:
    """All ops on the one device that holds them fastest (a contiguous split), or None."""
    t = inst.times
    ok = [p for p in range(inst.num_devices) if np.all(np.isfinite(t[:, p]))
          and inst.memory.sum() <= inst.capacity[p]]
    if not ok:
        return None
    p = min(ok, key=lambda p: float(t[:, p].sum()))
    return _events.rebuild(inst, np.full(inst.n, p), np.zeros(inst.n), {})


def _start(inst: LatencyInstance, cols: _Cols, s: Schedule, scale: float,
           ncol: int) -> np.ndarray:
    """The MIP start of a single-device schedule: no transfers, every phase at 0."""
    xv = np.zeros(ncol)
    p = int(s.device[0])
    xv[cols.x[:, p]] = 1.0
    xv[cols.z[:, p]] = 1.0
    xv[cols.Z] = s.makespan / scale
    return xv


def solve_contiguous(inst: LatencyInstance, time_limit: float = 60.0,
                     threads: int = 1, *, mip_rel_gap: float = 1e-7) -> LatencyMILPResult:
    """Best contiguous split with stage-as-a-block timing (module docstring).

    `makespan` and `schedule` are an upper bound on the true optimum and a valid
    schedule (the semi-active schedule of the best block schedule found, which may
    be shorter than the block schedule); `bound` is the IP's dual bound, a lower
    bound for the restricted block model only (`brute.brute_contiguous` computes that
    model's optimum on tiny instances).
    """
    t0 = time.perf_counter()
    _, _, lb = _prepare(inst, None)
    # the greedy schedule need not be contiguous, so its makespan is no big-M here; the
    # single-device schedule is, and else every stage run one after another is
    best = _single_device(inst)
    H = best.makespan if best is not None else serial_horizon(inst)
    scale = model_scale(inst, H)
    m, cols = build_contiguous(inst, H, lb, scale)
    return solve_built(inst, m, cols, scale=scale, lb=lb, best=best,
                       time_limit=time_limit, threads=threads, mip_rel_gap=mip_rel_gap,
                       relax=False, start_fn=_start, decode_fn=_decode, t0=t0,
                       clip_bound=False)
