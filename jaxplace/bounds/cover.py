"""Fractional cover by convex blocks: a column-generation (Dantzig-Wolfe) lower bound.

Every block of a valid partition is convex (the difference I2 \\ I1 of two nested
ideals of the ordering edges), a union of colocation classes, and costs at most the
bottleneck. So when OPT <= z, V is partitioned by at most k convex sets S with
f(S) <= z, and the LP

    min sum_S lam_S   s.t.  sum_{S ∋ v} lam_S = 1 (every v),  lam >= 0,

over all such S has value <= k. Its value exceeding k proves OPT > z. The LP is the
Dantzig-Wolfe reformulation of the exact MIP's blocks (Desrosiers and Lübbecke, "A
primer in column generation", 2005): it has none of the block symmetry that keeps the
exact MIP's LP at the simple bound, and each set's communication is exact.

Validity never rests on the restricted master LP: for the duals pi of any restricted
master (with artificial columns of cost M, so pi_v <= M), pi / max(theta, 1) is dual
feasible for the full LP whenever theta >= max{pi(S) : S convex, f(S) <= z}, so the
LP value is at least sum(pi) / max(theta, 1) (Farley's bound, 1990). theta is the
pricing MIP's dual bound (HiGHS), valid even at a time limit. A binary search on z
keeps the largest refuted z. Cheap columns come first (blocks of the best partition,
maximal segments of topological orders, greedy local search on the duals), the pricing
MIP adds the rest, with Wentges dual smoothing (Wentges 1997). Any weights pi give a
second bound, `weighted_bottleneck` (min f(S) over convex S with pi(S) >= sum(pi)/k;
pi = work is the bottleneck relaxation); on the duals of a refuted z it lands well above
that z. The bound returned is the best of both.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import highspy
import numpy as np

from jaxplace.bounds.base import BoundContext, MethodResult, skipped, unmodelled
from jaxplace.bounds._cover_pricing import ConvexPricer
from jaxplace.errors import JaxplaceError
from jaxplace.highs import INF, SCHEDULER, set_option, solve_arrays
from jaxplace.objectives.throughput.cost import quotient_order, throughput_lower_bound
from jaxplace.objectives.throughput.reference import kahn, segment_cost_columns
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

ART_COST = 10.0  # cost of the artificial column of each node (caps its dual at 10)
FARLEY_RTOL = 1e-6  # the Farley bound must exceed k by this much (solver tolerances)
LOCAL_ROUNDS = 4  # local-search pricing rounds between two pricing MIPs (only the MIP's
# dual bound can prove a refutation)


class SetCosts:
    """f(S) of many sets at once, with the tensor incidence built once per problem."""

    def __init__(self, problem: Problem):
        g = problem.graph
        self.problem = problem
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
        pairs = np.unique(np.stack([t_of, g.tensor_consumers], axis=1), axis=0) if len(
            t_of) else np.zeros((0, 2), dtype=np.int64)  # (P, 2) distinct (t, consumer)
        self.pair_cons = pairs[:, 1]  # (P,) sorted by tensor
        self.tens, first = np.unique(pairs[:, 0], return_index=True)  # tensors consumed
        self.first = first  # (Tc,) start of each tensor's pairs
        self.ncons = np.diff(np.r_[first, len(pairs)])  # (Tc,) distinct consumers
        self.tsize = g.tensor_size[self.tens] / problem.bandwidth  # (Tc,)
        self.bad = (~problem.supported).astype(np.float64)  # (n,)

    def __call__(self, sets: np.ndarray) -> np.ndarray:
        """(m,) f(S) of each row of `sets` ((m, n) bool) on an accelerator (inf: over
        the hard capacity or holding an unsupported node)."""
        p, g = self.problem, self.problem.graph
        X = np.asarray(sets, dtype=np.float64).reshape(-1, p.n)
        cost = X @ g.work
        if len(self.tens):  # gathers and segment sums, no BLAS (slow when oversubscribed)
            cons_in = np.add.reduceat(X[:, self.pair_cons], self.first, axis=1)  # (m, Tc)
            prod_in = X[:, g.tensor_producer[self.tens]] > 0.5
            leaves = prod_in & (cons_in < self.ncons - 0.5)
            enters = ~prod_in & (cons_in > 0.5)
            cost = cost + ((leaves | enters) * self.tsize).sum(axis=1)
        param = X @ g.size_param
        if p.memory is not None:
            cost = cost + np.maximum(0.0, param - p.memory) / p.bandwidth
        cost[param > p.capacity_limit] = np.inf
        cost[X @ self.bad > 0.5] = np.inf
        return cost


def set_costs(problem: Problem, sets: np.ndarray) -> np.ndarray:
    """(m,) f(S) of each row of `sets` ((m, n) bool); see `SetCosts`."""
    return SetCosts(problem)(sets)


def _colocation_pairs(problem: Problem) -> np.ndarray:
    """(q, 2) node pairs that must share a block (member, first member of its class)."""
    color = problem.graph.node_attrs.get("color_class")
    if color is None:
        return np.zeros((0, 2), dtype=np.int64)
    color = np.asarray(color, dtype=np.int64)
    members = np.flatnonzero(color >= 0)
    _, first, inv = np.unique(color[members], return_index=True, return_inverse=True)
    rep = members[first][inv]
    keep = rep != members
    return np.stack([members[keep], rep[keep]], axis=1)


@dataclass
class _Triplets:
    """Rowwise sparse rows under construction."""

    rows: list = field(default_factory=list)
    lo: list = field(default_factory=list)
    hi: list = field(default_factory=list)

    def add(self, cols, vals, lo, hi) -> None:
        self.rows.append((np.asarray(cols, np.int32), np.asarray(vals, np.float64)))
        self.lo.append(lo)
        self.hi.append(hi)

    def csr(self):
        start = np.zeros(len(self.rows) + 1, dtype=np.int32)
        start[1:] = np.cumsum([len(c) for c, _ in self.rows])
        index = np.concatenate([c for c, _ in self.rows]).astype(np.int32)
        value = np.concatenate([v for _, v in self.rows])
        return start, index, value, np.asarray(self.lo, float), np.asarray(self.hi, float)


def _pricing_rows(problem: Problem, scale: float, convex: bool = True):
    """Rows of the one-block pricing MIP over columns x (n, binary: "v in S"),
    d and e (n each, continuous; only with `convex`), c (Tc), [o]; row 0 is the cost row.

    c_t >= |x_v - x_u| per (tensor t of u, consumer v). Convexity (no path leaves S
    and comes back): d_v >= x_u, d_v >= d_u and e_u >= x_v, e_u >= e_v per ordering
    edge (u, v) make d_v >= "v has an ancestor in S" and e_v >= "v has a descendant in
    S"; then x_v >= d_v + e_v - 1. Every convex S is feasible (d, e at those minimal
    0/1 values), and every feasible x is convex."""
    g, n, B = problem.graph, problem.n, problem.bandwidth
    ncons = np.diff(g.tensor_ptr)
    tens = np.flatnonzero(ncons > 0)
    tpos = np.full(g.num_tensors, -1)
    tpos[tens] = np.arange(len(tens))
    d0, e0 = n, 2 * n
    c0 = 3 * n if convex else n
    o0 = c0 + len(tens)
    overflow = problem.memory is not None and g.size_param.max(initial=0) > 0
    R = _Triplets()
    cols = np.r_[0:n, c0:o0, o0] if overflow else np.r_[0:n, c0:o0]
    vals = np.r_[g.work / scale, g.tensor_size[tens] / B / scale]
    R.add(cols, np.r_[vals, 1.0] if overflow else vals, -INF, INF)
    if convex:
        for u, v in ordering_edges(g):
            R.add([d0 + v, u], [-1.0, 1.0], -INF, 0.0)  # x_u <= d_v
            R.add([d0 + v, d0 + u], [-1.0, 1.0], -INF, 0.0)
            R.add([e0 + u, v], [-1.0, 1.0], -INF, 0.0)  # x_v <= e_u
            R.add([e0 + u, e0 + v], [-1.0, 1.0], -INF, 0.0)
        for v in range(n):
            R.add([d0 + v, e0 + v, v], [1.0, 1.0, -1.0], -INF, 1.0)
    t_of = np.repeat(np.arange(g.num_tensors), ncons)
    for t, v in zip(t_of, g.tensor_consumers, strict=True):
        u = int(g.tensor_producer[t])
        if u != v:  # c >= x_v - x_u and c >= x_u - x_v
            R.add([v, u, c0 + tpos[t]], [1.0, -1.0, -1.0], -INF, 0.0)
            R.add([u, v, c0 + tpos[t]], [1.0, -1.0, -1.0], -INF, 0.0)
    pmax = float(g.size_param.max(initial=0))
    if overflow:
        f = 1.0 / (B * scale)
        R.add(np.r_[0:n, o0], np.r_[g.size_param * f, -1.0], -INF, problem.memory * f)
    if problem.capacity is not None and pmax > 0:
        R.add(np.arange(n), g.size_param / pmax, -INF, problem.capacity_limit / pmax)
    for v, r in _colocation_pairs(problem):
        R.add([v, r], [1.0, -1.0], 0.0, 0.0)
    ncol = o0 + (1 if overflow else 0)
    return R.csr(), ncol, overflow


class _Pricer:
    """The pricing MIP max{pi(S) : S convex, f(S) <= z}: rows built once, loaded into
    a fresh HiGHS instance per solve with the cost row's bound and the objective set."""

    def __init__(self, problem: Problem, scale: float, seed: int = 0, convex: bool = True):
        (start, index, value, lo, hi), ncol, overflow = _pricing_rows(problem, scale,
                                                                      convex)
        self.n, self.scale, self.seed = problem.n, scale, int(seed)
        integ = np.zeros(ncol, dtype=np.int32)
        integ[:self.n] = 1
        col_hi = np.ones(ncol)
        if overflow:
            col_hi[-1] = INF
        self.arrays = (ncol, start, index, value, lo, hi, col_hi, integ)

    def _highs(self, pi: np.ndarray, z: float, time_limit: float) -> highspy.Highs:
        """A fresh instance (no incumbent or callback data left from another pi)."""
        ncol, start, index, value, lo, hi, col_hi, integ = self.arrays
        n = self.n
        h = highspy.Highs()
        set_option(h, "output_flag", False)
        set_option(h, "threads", 1)
        set_option(h, "random_seed", self.seed)
        set_option(h, "mip_rel_gap", 1e-6)
        set_option(h, "time_limit", float(max(time_limit, 1e-2)))
        cost = np.zeros(ncol)
        cost[:n] = -pi  # min -pi.x
        hi = hi.copy()
        hi[0] = z / self.scale
        st = h.passModel(ncol, len(lo), len(value), int(highspy.MatrixFormat.kRowwise),
                         int(highspy.ObjSense.kMinimize), 0.0, cost, np.zeros(ncol),
                         col_hi, lo, hi, start, index, value, integ)
        if st != highspy.HighsStatus.kOk:
            raise RuntimeError(f"HiGHS passModel failed: {st}")
        return h

    def solve(self, pi: np.ndarray, z: float, target: float, time_limit: float):
        """max pi(S) over convex S with f(S) <= z; stops early once the incumbent
        exceeds `target` or the dual bound falls below it.

        Returns:
            (theta: an upper bound on the max, list of (n,) bool sets found).
        """
        n = self.n
        SCHEDULER.use(1)
        h = self._highs(pi, z, time_limit)
        found: list[np.ndarray] = []
        best = [-math.inf]

        def on_solution(e):
            x = np.asarray(e.data_out.mip_solution)
            s = x[:n] > 0.5
            found.append(s)
            best[0] = max(best[0], float(pi[s].sum()))

        def on_tick(e):
            db = e.data_out.mip_dual_bound
            if best[0] > target or (np.isfinite(db) and -db < target):
                e.interrupt()

        h.cbMipImprovingSolution += on_solution
        h.cbMipInterrupt += on_tick
        try:
            h.run()
        finally:
            h.cbMipImprovingSolution -= on_solution
            h.cbMipInterrupt -= on_tick
        info = h.getInfo()
        ms = h.getModelStatus()
        if ms == highspy.HighsModelStatus.kInfeasible:
            return math.inf, found  # the empty set is always feasible: do not trust it
        db = info.mip_dual_bound
        theta = -db if np.isfinite(db) else math.inf
        if ms == highspy.HighsModelStatus.kOptimal and info.primal_solution_status == 2:
            # "Optimal" within the gap: the dual bound is still the valid side
            theta = max(theta, -info.objective_function_value)
        return float(theta), found


class _Master:
    """The restricted master LP over a pool of sets (plus artificial columns)."""

    def __init__(self, n: int):
        self.n = n
        h = highspy.Highs()
        set_option(h, "output_flag", False)
        set_option(h, "threads", 1)
        ones = np.ones(n)
        st = h.passModel(n, n, n, int(highspy.MatrixFormat.kColwise),
                         int(highspy.ObjSense.kMinimize), 0.0, ones * ART_COST,
                         np.zeros(n), np.full(n, INF), ones, ones,
                         np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32), ones,
                         np.zeros(n, dtype=np.int32))
        if st != highspy.HighsStatus.kOk:
            raise RuntimeError(f"HiGHS passModel failed: {st}")
        self.h = h

    def add(self, sets: np.ndarray) -> None:
        if not len(sets):
            return
        sets = np.asarray(sets, dtype=bool)
        m = len(sets)
        rows, cols = np.nonzero(sets)
        start = np.searchsorted(rows, np.arange(m)).astype(np.int32)
        self.h.addCols(m, np.ones(m), np.zeros(m), np.full(m, INF), len(cols), start,
                       cols.astype(np.int32), np.ones(len(cols)))

    def solve(self):
        """(value, pi (n,)) of the restricted master."""
        SCHEDULER.use(1)
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError("cover master LP not solved: "
                               + self.h.modelStatusToString(self.h.getModelStatus()))
        pi = np.asarray(self.h.getSolution().row_dual, dtype=np.float64)
        return float(self.h.getInfo().objective_function_value), pi


class _Pool:
    """Distinct non-empty sets found so far, append-only: `sets` (m, n) bool and
    `costs` (m,) float64 (f of each set)."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.cost_of = SetCosts(problem)
        self.sets = np.zeros((0, problem.n), dtype=bool)
        self.costs = np.zeros(0)
        self._keys: set[bytes] = set()

    def add(self, new) -> int:
        """Add the sets not seen before; returns how many were new."""
        new = np.asarray(new, dtype=bool).reshape(-1, self.problem.n)
        keep = []
        for i, s in enumerate(new):
            key = np.packbits(s).tobytes()
            if s.any() and key not in self._keys:
                self._keys.add(key)
                keep.append(i)
        if keep:
            self.sets = np.concatenate([self.sets, new[keep]])
            self.costs = np.concatenate([self.costs, self.cost_of(new[keep])])
        return len(keep)


def segment_sets(problem: Problem, order: np.ndarray, z: float) -> np.ndarray:
    """(m, n) bool: for each start l, the longest segment of `order` from l costing at
    most z (plain graphs: every segment of a topological order is convex)."""
    n = problem.n
    last = np.full(n, -1)
    for r, col in segment_cost_columns(problem, order):
        ok = col <= z
        last[:r + 1][ok] = r
    pos_sets = []
    for l0 in range(n):
        if last[l0] >= l0:
            s = np.zeros(n, dtype=bool)
            s[order[l0:last[l0] + 1]] = True
            pos_sets.append(s)
    return np.asarray(pos_sets, dtype=bool).reshape(-1, n)


def _partition_order(problem: Problem, assignment: np.ndarray) -> np.ndarray:
    """A topological node order that lists the blocks of `assignment` one by one."""
    g = problem.graph
    a = np.asarray(assignment, dtype=np.int64)
    bo = quotient_order(problem, a)
    rank = np.empty(len(bo), dtype=np.int64)
    rank[bo] = np.arange(len(bo))
    topo = np.empty(problem.n, dtype=np.int64)
    topo[g.topo_order] = np.arange(problem.n)
    return np.lexsort((topo, rank[a]))


@dataclass
class ZTest:
    """Outcome of one refutation attempt of "OPT <= z".

    refuted: True when the Farley bound proved the LP value > k (so OPT > z); False when
        the restricted master already reached value <= k (the relaxation cannot refute
        z); None when the time ran out first.
    farley: the best Farley lower bound on the LP value found (0 if none).
    iterations: master solves; pricing: pricing MIP solves.
    """

    z: float
    refuted: bool | None
    farley: float = 0.0
    iterations: int = 0
    pricing: int = 0
    pi: np.ndarray | None = field(default=None, repr=False)  # (n,) duals of the best
    # Farley bound (the refuting ones when refuted)
    polished: float = 0.0  # weighted_bottleneck(pi) when it was run


class _LocalSearch:
    """Heuristic pricing: greedy single-node flips that raise pi(S) while S stays convex
    and f(S) <= z (plain graphs; no colocation classes). Only adds columns, so it
    changes the speed of the column generation, never its bound."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.cost_of = SetCosts(problem)
        self.topo = problem.graph.topo_order
        preds = [[] for _ in range(problem.n)]
        succs = [[] for _ in range(problem.n)]
        for u, v in ordering_edges(problem.graph):
            preds[v].append(u)
            succs[u].append(v)
        self.preds = [np.asarray(p, dtype=np.int64) for p in preds]
        self.succs = [np.asarray(q, dtype=np.int64) for q in succs]

    def convex(self, X: np.ndarray) -> np.ndarray:
        """(m,) bool: each row of X ((m, n) bool) is a convex set (no node outside it
        has both an ancestor and a descendant inside), by propagation in DAG order."""
        X = np.asarray(X, dtype=bool)
        anc = np.zeros_like(X)  # anc[:, v]: v has a strict ancestor in S
        desc = np.zeros_like(X)  # desc[:, v]: v has a strict descendant in S
        for v in self.topo:
            p = self.preds[v]
            if len(p):
                anc[:, v] = (X[:, p] | anc[:, p]).any(axis=1)
        for v in self.topo[::-1]:
            q = self.succs[v]
            if len(q):
                desc[:, v] = (X[:, q] | desc[:, q]).any(axis=1)
        return ~np.any(anc & desc & ~X, axis=1)

    def improve(self, s: np.ndarray, pi: np.ndarray, z: float, steps: int = 60,
                deadline: float = math.inf):
        """Greedy ascent of pi(S) from the set s; the sets passed on the way."""
        out = []
        eye = np.eye(len(s), dtype=bool)
        for _ in range(steps):
            if time.perf_counter() > deadline:
                break
            cand = s[None, :] ^ eye  # (n, n): s with node v flipped
            gain = np.where(s, -pi, pi)
            ok = (gain > 1e-12) & cand.any(axis=1)
            if not ok.any():
                break
            idx = np.flatnonzero(ok)
            idx = idx[self.cost_of(cand[idx]) <= z]
            idx = idx[self.convex(cand[idx])] if len(idx) else idx
            if not len(idx):
                break
            s = cand[idx[np.argmax(gain[idx])]]
            out.append(s)
        return out

    def run(self, pool: _Pool, pi: np.ndarray, z: float, starts: int = 6,
            deadline: float = math.inf) -> list:
        """Improve the `starts` best pool sets (by pi) of cost <= z, until `deadline`."""
        ok = np.flatnonzero(pool.costs <= z)
        if not len(ok):
            return []
        value = pool.sets[ok].astype(np.float64) @ pi
        found = []
        for i in ok[np.argsort(-value)[:starts]]:
            found += self.improve(pool.sets[i], pi, z, deadline=deadline)
        return found


class _Hybrid:
    """Branch and bound first (`ConvexPricer`, at most `bnb_time` seconds), the pricing
    MIP only when it neither ends (an exact theta) nor finds a set above target. Both
    thetas are upper bounds on the maximum (or on the floor), so the least is kept."""

    def __init__(self, bnb: ConvexPricer, mip: _Pricer, bnb_time: float):
        self.bnb, self.mip, self.bnb_time = bnb, mip, bnb_time

    def solve(self, pi: np.ndarray, z: float, target: float, time_limit: float):
        t0 = time.perf_counter()
        floor = max(float(target) * (1 - 1e-9), 1.0)
        theta, found, _, ended = self.bnb.search(pi, z, floor,
                                                 min(self.bnb_time, time_limit), 1)
        sets = [self.bnb.nodes_of(S) for S, _ in found]
        if ended or sets:
            return theta, sets
        theta_mip, more = self.mip.solve(pi, z, target,
                                         time_limit - (time.perf_counter() - t0))
        return min(theta, theta_mip), sets + more


def _price(pricer: _Pricer, pool: _Pool, pi, z, target, deadline):
    """One pricing solve; its sets join the pool. Returns (theta, the sets found)."""
    remaining = deadline - time.perf_counter()
    theta, found = pricer.solve(pi, z, target, remaining)
    if found:
        pool.add(np.asarray(found))
    return theta, found


def refute_z(problem: Problem, z: float, pool: _Pool, pricer: _Pricer,
             deadline: float, smoothing: float = 0.0,
             local: _LocalSearch | None = None) -> ZTest:
    """Try to refute OPT <= z by column generation over the sets of `pool` (f <= z).

    With `smoothing` a, the pricing uses a * center + (1 - a) * duals, the center being
    the duals of the best Farley bound so far (Wentges' stabilization); when that finds
    no column the master needs, the next pricing uses the plain duals. Any pi with
    pi_v <= ART_COST gives a valid Farley bound, so this changes speed, not validity.
    With `local`, greedy flips of the best pool sets are tried before the pricing MIP.
    """
    k, n = problem.k, problem.n
    master = _Master(n)
    loaded = 0  # pool.sets[:loaded] were offered to the master
    out = ZTest(z, None)
    plain = True  # price at the master's duals (first iteration, or after a misprice)
    streak = 0  # master solves since the last pricing MIP (local search only)
    while time.perf_counter() < deadline:
        fresh = np.arange(loaded, len(pool.sets))
        master.add(pool.sets[fresh[pool.costs[fresh] <= z]])
        loaded = len(pool.sets)
        value, duals = master.solve()
        out.iterations += 1
        if value <= k * (1 + FARLEY_RTOL):
            out.refuted = False
            return out
        duals = np.minimum(duals, ART_COST)  # dual feasible for the artificials, whatever
        # the LP tolerance; lowering pi never raises pi(S), so theta stays an upper bound
        if local is not None and streak < LOCAL_ROUNDS:
            found = [s for s in local.run(pool, duals, z, deadline=deadline)
                     if duals[s].sum() > 1 + 1e-9]
            if found and pool.add(np.asarray(found)):
                streak += 1
                continue
        streak = 0
        pi = duals if plain or out.pi is None else smoothing * out.pi + (1 - smoothing) * duals
        target = float(pi.sum()) / (k * (1 + FARLEY_RTOL))
        theta, found = _price(pricer, pool, pi, z, target, deadline)
        out.pricing += 1
        farley = float(pi.sum()) / max(theta, 1.0)
        if farley > out.farley:
            out.farley, out.pi = farley, pi
        if farley > k * (1 + FARLEY_RTOL):
            out.refuted = True
            return out
        useful = any(duals[s].sum() > 1 + 1e-9 for s in found)
        if not useful and plain:
            return out  # the pricing stopped (time) without a column the master needs
        plain = not useful or smoothing <= 0
    return out


def weighted_bottleneck(problem: Problem, pi: np.ndarray, *, time_limit: float,
                        convex: bool = True, scale: float | None = None) -> float:
    """min{f(S) : S convex, pi(S) >= sum(pi) / k}, a lower bound on OPT for ANY pi.

    Some block of every partition into at most k blocks holds at least the average
    pi(P_b) >= sum(pi) / k (empty blocks hold 0), so OPT is at least this minimum. With
    pi = work it is the bottleneck relaxation; the cover LP's duals make it stronger
    (a pi that refutes z gives a minimum above z). Returns HiGHS's dual bound (valid at a
    time limit), 0 when sum(pi) <= 0 (the empty set qualifies).
    """
    pi = np.asarray(pi, dtype=np.float64).copy()
    if not np.any(pi):
        return 0.0
    pi[np.abs(pi) <= 1e-7 * np.abs(pi).max()] = 0.0  # HiGHS drops tiny coefficients:
    total = float(pi.sum())  # bound this pi (valid for any pi) rather than a changed row
    if not total > 0:
        return 0.0
    scale = scale or max(throughput_lower_bound(problem), 1e-12)
    (start, index, value, lo, hi), ncol, overflow = _pricing_rows(problem, scale, convex)
    n = problem.n
    cost = np.zeros(ncol)
    cost[index[start[0]:start[1]]] = value[start[0]:start[1]]  # f(S) / scale
    norm = float(np.abs(pi).max())
    keep = np.flatnonzero(pi != 0)
    index = np.r_[keep, index[start[1]:]].astype(np.int32)
    value = np.r_[pi[keep] / norm, value[start[1]:]]
    start = np.r_[0, start[1:] - start[1] + len(keep)].astype(np.int32)
    lo, hi = lo.copy(), hi.copy()
    lo[0], hi[0] = total / (problem.k * norm), INF
    integ = np.zeros(ncol, dtype=np.int32)
    integ[:n] = 1
    col_hi = np.ones(ncol)
    if overflow:
        col_hi[-1] = INF
    res = solve_arrays(dict(cost=cost, col_lo=np.zeros(ncol), col_hi=col_hi, row_lo=lo,
                            row_hi=hi, start=start, index=index, value=value,
                            integrality=integ), relax=False, time_limit=time_limit,
                       threads=1, mip_rel_gap=1e-6, scale=scale)
    return float(res.bound)


@dataclass(frozen=True)
class CoverConfig:
    """Settings of the cover bound.

    Attributes:
        convex: price convex sets only (the exact block structure); False prices any
            set (a weaker relaxation whose pricing MIP is smaller and faster).
        first_step: the first z tried is lo + first_step * (hi - lo).
        polish_share: at most this share of the time per `weighted_bottleneck` solve
            on a test's duals (0: never).
        polish_all: also on the duals of tests that were not refuted.
        smoothing: Wentges dual smoothing in the column generation (0: none).
        local: greedy local-search pricing before the pricing MIP.
        test_share: one z test gets at most this share of the time left.
        rtol: stop when hi - lo <= rtol * hi.
        orders: random topological orders whose maximal segments seed the pool.
        seed: random orders and HiGHS seed.
        pricing: "bnb" (`cover_pricing.ConvexPricer`, branch and bound over convex
            unions of units, no solver), "mip" (the HiGHS pricing MIP) or "hybrid"
            (branch and bound for at most `bnb_time` seconds, then the MIP).
        bnb_time: the branch and bound's share of a hybrid pricing (seconds).
        start: "simple" (the z search starts at the simple bound: the cheap refutations
            low down supply columns) or "ladder" (at the best bound of the rungs
            before it: only a z above it can add anything, and near the top one z
            takes minutes, e.g. 6 on a 79-op REGAL graph at k = 16).
    """

    convex: bool = True
    first_step: float = 0.1
    test_share: float = 0.4
    polish_share: float = 0.25
    polish_all: bool = False
    smoothing: float = 0.5
    local: bool = True
    rtol: float = 1e-3
    orders: int = 4
    seed: int = 0
    pricing: str = "mip"
    bnb_time: float = 1.0
    start: str = "simple"

    def __post_init__(self):
        if self.pricing not in ("mip", "bnb", "hybrid"):
            raise JaxplaceError(f"must be mip, bnb or hybrid, got {self.pricing!r}",
                                field="pricing")
        if self.start not in ("simple", "ladder"):
            raise JaxplaceError(f"must be simple or ladder, got {self.start!r}",
                                field="start")


def _seed_pool(pool: _Pool, problem: Problem, z: float, orders: list) -> None:
    """Maximal segments of `orders` costing at most z (plain graphs only: with
    colocation units, segments of node orders are not blocks)."""
    if problem.graph.units.num_units != problem.n:
        return
    for order in orders:
        pool.add(segment_sets(problem, order, z))


def _orders(problem: Problem, assignment, count: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = [] if assignment is None else [_partition_order(problem, assignment)]
    out += [kahn(problem.graph, rng.random(problem.n)) for _ in range(count)]
    return out


def cover_bound(problem: Problem, lo: float, hi: float, *, assignment=None,
                time_limit: float = 60.0, config: CoverConfig = CoverConfig(),
                progress=None):
    """A lower bound above `lo` from the cover LP within `time_limit`.

    Galloping then bisection on z in (lo, hi): a refuted z raises lo (and doubles the
    step), an unrefutable one lowers hi; a test that runs out of its share of the time
    lowers hi as a search limit only. After each test with duals, `weighted_bottleneck`
    of them (valid for any duals) may raise lo beyond the z tested.

    Returns:
        (bound >= lo, list of ZTest).
    """
    t0 = time.perf_counter()
    end = t0 + time_limit
    pool = _Pool(problem)
    if assignment is not None:
        a = np.asarray(assignment, dtype=np.int64)
        pool.add(np.stack([a == b for b in np.unique(a)]))
    orders = _orders(problem, assignment, config.orders, config.seed)
    pricing = config.pricing if config.convex else "mip"  # the search needs convexity
    if pricing == "bnb":
        pricer = ConvexPricer(problem)
    else:
        pricer = _Pricer(problem, max(throughput_lower_bound(problem), 1e-12), config.seed,
                         config.convex)
        if pricing == "hybrid":
            pricer = _Hybrid(ConvexPricer(problem), pricer, config.bnb_time)
    local = _LocalSearch(problem) if config.local and (
        problem.graph.units.num_units == problem.n) else None
    tests: list[ZTest] = []
    step, hi_proven = config.first_step, hi
    while time.perf_counter() < end and hi - lo > config.rtol * hi:
        z = lo + min(step, 0.5) * (hi - lo)
        _seed_pool(pool, problem, z, orders)
        now = time.perf_counter()
        r = refute_z(problem, z, pool, pricer, now + config.test_share * (end - now),
                     smoothing=config.smoothing, local=local)
        tests.append(r)
        if r.refuted:
            lo, step = z, step * 2
        elif r.refuted is False:
            hi = hi_proven = z
            step = 0.5
        else:  # out of time: try closer to lo (hi is only a search limit, not a bound)
            hi, step = z, 0.25
        polished = _polish(problem, r, end, time_limit, config)
        if polished > lo:  # the threshold is likely near: small steps again
            lo, step = polished, config.first_step
        if lo >= hi:
            hi = hi_proven
        if progress is not None:
            progress(time.perf_counter() - t0, hi, lo)
    return lo, tests


def _polish(problem: Problem, test: ZTest, end: float, time_limit: float,
            config: CoverConfig) -> float:
    """weighted_bottleneck of a test's duals (refuted tests, or all with
    `polish_all`), at most polish_share * time_limit seconds; 0 when skipped."""
    remaining = end - time.perf_counter()
    if test.pi is None or config.polish_share <= 0 or remaining < 0.2 or not (
            test.refuted or config.polish_all):
        return 0.0
    test.polished = weighted_bottleneck(problem, test.pi, convex=config.convex,
                                        time_limit=min(remaining,
                                                       config.polish_share * time_limit))
    return test.polished


@dataclass(frozen=True)
class CoverBound:
    """The cover bound as a ladder method (kind "mip": LPs priced by a MIP).

    Searches z between the simple bound and the best partition's cost; without a
    partition it has nothing to refute up to and reports the simple bound.
    """

    name: str
    config: CoverConfig = CoverConfig()
    kind: str = "mip"

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := unmodelled(problem):
            return skipped(self, why)
        t0 = time.perf_counter()
        # by default the search starts at the simple bound even when the ladder knows
        # more: the columns of the cheap refutations low down speed up the tests near
        # the top (within 60 s); `start="ladder"` is for long limits
        lo = throughput_lower_bound(problem)
        if self.config.start == "ladder" and math.isfinite(context.lower_bound):
            lo = max(lo, float(context.lower_bound))
        hi = context.upper_bound
        if not math.isfinite(hi) or context.assignment is None:
            return MethodResult(self.name, lo, "no partition to refute up to",
                                time.perf_counter() - t0, kind=self.kind)
        try:
            bound, tests = cover_bound(problem, lo, hi, assignment=context.assignment,
                                       time_limit=context.time_limit, config=self.config,
                                       progress=context.report)
        except RuntimeError as e:  # a HiGHS load or LP failure: keep the valid floor
            return MethodResult(self.name, lo, f"failed: {e}", time.perf_counter() - t0,
                                kind=self.kind)
        refuted = sum(1 for t in tests if t.refuted)
        status = f"{refuted}/{len(tests)} z refuted"
        return MethodResult(self.name, float(bound), status, time.perf_counter() - t0,
                            gap=(hi - bound) / hi if hi > 0 else None, kind=self.kind,
                            nodes=sum(t.pricing for t in tests), solves=len(tests))
