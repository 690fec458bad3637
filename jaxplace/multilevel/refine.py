"""Refinement on one level: boundary moves evaluated exactly, and re-slicing.

Blocks are numbered in pipeline order and every edge goes to the same or a later
block, which keeps the quotient acyclic. A cluster of the bottleneck block may move to
the previous block when none of its predecessors stays behind, or to the next one when
none of its successors does. A move changes the costs of those two blocks only; they
are updated from the tensors the cluster produces or consumes (exact arithmetic of
`objectives.throughput.cost`, up to the order of float64 additions). A move is taken when it lowers
the larger of the two blocks' costs below the bottleneck. Between rounds of moves the
level's order (blocks contiguous) is sliced again by the exact DP, which can only
lower the cost. The best partition seen, by its exact cost, is kept.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.multilevel.coarsen import Level
from jaxplace.multilevel.project import consistent_order, pipeline_blocks
from jaxplace.multilevel.slicing import slice_units
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import kahn_csr
from jaxplace.problem import Problem

#: Rounds (boundary moves, then a re-slicing) of one level's refinement at most; it
#: also stops at the first round that does not improve.
REFINE_ROUNDS = 100


@dataclass
class RefineStats:
    """What one level's refinement did."""

    moves: int = 0  # moves taken
    evaluations: int = 0  # candidate moves scored, plus DP slicings
    slicings: int = 0
    seconds: float = 0.0
    start_cost: float = math.inf
    cost: float = math.inf
    stopped: str | None = None  # "time limit" or "cancelled" when cut short


class BlockState:
    """Block costs of a partition of one level, updated move by move.

    Per tensor it keeps how many of its consumers sit in each block, so that a move's
    transfer change costs O(tensors the cluster touches), not O(their consumers): on
    a dense graph (a 5,000-op stochastic-block graph, ~100 consumers per tensor) that
    is the difference between milliseconds and tens of milliseconds per move."""

    def __init__(self, problem: Problem, assignment: np.ndarray):
        g = problem.graph
        self.problem = problem
        self.a = pipeline_blocks(problem, assignment).copy()
        pc = evaluate_partition(problem, self.a)
        self.work = pc.work.copy()
        self.param = pc.param.copy()
        self.io = pc.io_in + pc.io_out
        self.B = problem.bandwidth
        self.mem = problem.memory
        self.cap = problem.capacity_limit if problem.capacity is not None else math.inf
        self.cost = pc.total.copy()
        self.gw = g.work.tolist()
        self.gp = g.size_param.tolist()
        self.size = (g.tensor_size / problem.bandwidth).tolist()
        self.prod = g.tensor_producer.tolist()
        ptr = g.tensor_ptr
        self.ncons = np.diff(ptr).tolist()
        # (T, blocks) consumers of each tensor per block
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(ptr))
        cnt = np.zeros((g.num_tensors, len(self.cost)), np.int64)
        np.add.at(cnt, (t_of, self.a[g.tensor_consumers]), 1)
        self.cnt = cnt.tolist()
        self.outs = [[] for _ in range(g.num_nodes)]
        for t, p in enumerate(self.prod):
            self.outs[p].append(t)
        iptr, itens = g.in_ptr.tolist(), g.in_tensors.tolist()
        self.ins = [itens[iptr[v]:iptr[v + 1]] for v in range(g.num_nodes)]
        sp, si = g.succ_ptr.tolist(), g.succ_idx.tolist()
        pp, pi = g.pred_ptr.tolist(), g.pred_idx.tolist()
        self.succ = [si[sp[v]:sp[v + 1]] for v in range(g.num_nodes)]
        self.pred = [pi[pp[v]:pp[v + 1]] for v in range(g.num_nodes)]

    def _block_cost(self, work, param, io):
        c = work + io
        if self.mem is not None:
            c += max(0.0, param - self.mem) / self.B
        return math.inf if param > self.cap else c

    def _io_change(self, v: int, to: int) -> tuple[int, float, float]:
        """(v's block, change of its transfers, change of block `to`'s) if v moved.
        A tensor costs a block its size when the block holds its producer and some
        consumer lies outside, or holds a consumer but not the producer."""
        a = self.a
        A = int(a[v])
        dA = dT = 0.0
        for t in self.outs[v]:  # produced by v: the producer leaves A for `to`
            c, n, s = self.cnt[t], self.ncons[t], self.size[t]
            dA += (s if c[A] else 0.0) - (s if n > c[A] else 0.0)
            dT += (s if n > c[to] else 0.0) - (s if c[to] else 0.0)
        for t in self.ins[v]:  # consumed by v: one consumer leaves A for `to`
            c, n, s = self.cnt[t], self.ncons[t], self.size[t]
            pb = a[self.prod[t]]
            ca, ct = c[A], c[to]
            if pb == A:
                dA += (s if n > ca - 1 else 0.0) - (s if n > ca else 0.0)
            else:
                dA += (s if ca > 1 else 0.0) - s  # ca >= 1: v itself
            if pb == to:
                dT += (s if n > ct + 1 else 0.0) - (s if n > ct else 0.0)
            else:
                dT += s - (s if ct else 0.0)
        return A, dA, dT

    def score(self, v: int, to: int) -> tuple[float, float]:
        """New costs of v's block and of block `to` if v moved there."""
        A, dA, dT = self._io_change(v, to)
        w, p = self.gw[v], self.gp[v]
        ca = self._block_cost(self.work[A] - w, self.param[A] - p, self.io[A] + dA)
        ct = self._block_cost(self.work[to] + w, self.param[to] + p, self.io[to] + dT)
        return ca, ct

    def apply(self, v: int, to: int) -> None:
        A, dA, dT = self._io_change(v, to)
        w, p = self.gw[v], self.gp[v]
        self.work[A] -= w
        self.param[A] -= p
        self.io[A] += dA
        self.work[to] += w
        self.param[to] += p
        self.io[to] += dT
        self.a[v] = to
        for t in self.ins[v]:
            c = self.cnt[t]
            c[A] -= 1
            c[to] += 1
        for b in (A, to):
            self.cost[b] = self._block_cost(self.work[b], self.param[b], self.io[b])

    def movable(self, v: int, to: int) -> bool:
        """Does moving v to the neighbouring block `to` keep edges non-decreasing?"""
        a, b = self.a, self.a[v]
        if to == b - 1:
            return all(a[u] != b for u in self.pred[v])
        if to == b + 1:
            return all(a[w] != b for w in self.succ[v])
        return False

    def moves_of(self, b: int):
        """(cluster, target) moves out of block b that keep edges non-decreasing."""
        a, k = self.a, len(self.cost)
        out = []
        for v in np.flatnonzero(a == b).tolist():
            if b > 0 and all(a[u] != b for u in self.pred[v]):
                out.append((v, b - 1))
            if b + 1 < k and all(a[w] != b for w in self.succ[v]):
                out.append((v, b + 1))
        return out


def _over(deadline: float, cancel, stats: RefineStats) -> bool:
    """Cut short? (and why, in `stats.stopped`). `deadline` is math.inf without a
    time limit: then only counts end a phase, so its result does not depend on load."""
    if cancel is not None and cancel.is_set():
        stats.stopped = "cancelled"
    elif time.perf_counter() >= deadline:
        stats.stopped = "time limit"
    return stats.stopped is not None


def boundary_moves(state: BlockState, deadline: float, stats: RefineStats,
                   max_passes: int = 50, slack: float = 0.0, cancel=None,
                   max_evals: float = math.inf) -> None:
    """Passes over every block's movable clusters, taking each move that lowers the
    potential (bottleneck, then the sum of block costs): either the bottleneck drops,
    or it does not rise and the blocks' transfers shrink (a smaller cut, which the next
    slicing turns into a lower bottleneck). Stops when a pass moves nothing, after
    `max_passes`, once `stats.evaluations` reaches `max_evals`, or at `deadline`
    (perf_counter)."""
    k = len(state.cost)
    cap = float(state.cost.max()) * (1 + slack)  # fixed: the slack must not compound
    for _ in range(max_passes):
        moved = 0
        for b in range(k):
            for v, to in state.moves_of(b):
                if stats.evaluations >= max_evals or _over(deadline, cancel, stats):
                    return
                A = int(state.a[v])
                if A != b or not state.movable(v, to):
                    continue
                ca, ct = state.score(v, to)
                stats.evaluations += 1
                cost = state.cost
                top = float(cost.max())
                rest = max((float(c) for i, c in enumerate(cost) if i != A and i != to),
                           default=0.0)
                new_top = max(ca, ct, rest)
                d_sum = (ca + ct) - (cost[A] + cost[to])
                eps = 1e-12 * top
                if new_top < top - eps or (new_top <= max(top, cap) and d_sum < -eps):
                    state.apply(v, to)
                    stats.moves += 1
                    moved += 1
        if not moved:
            return


def refine(level: Level, assignment: np.ndarray, deadline: float = math.inf,
           stats: RefineStats | None = None, slack: float = 0.0, cancel=None,
           max_rounds: int = REFINE_ROUNDS, max_evals: float = math.inf
           ) -> tuple[np.ndarray, float]:
    """(assignment, exact cost) at least as good as `assignment` on this level: rounds
    of boundary moves and a re-slicing while a round improves, at most `max_rounds`
    and until about `max_evals` evaluations (moves scored and slicings);
    cut short at `deadline` (perf_counter) or once `cancel` (a threading.Event) is
    set (`stats.stopped` says which)."""
    stats = stats or RefineStats()
    t0 = time.perf_counter()
    p = level.problem
    best_a = pipeline_blocks(p, assignment)
    best = evaluate_partition(p, best_a).bottleneck
    stats.start_cost = best
    cur = best_a
    rounds = 0
    while rounds < max_rounds and stats.evaluations < max_evals and \
            not _over(deadline, cancel, stats):
        rounds += 1
        state = BlockState(p, cur)
        boundary_moves(state, deadline, stats, slack=slack, cancel=cancel,
                       max_evals=max_evals)
        cands = [state.a.copy()]
        part = slice_units(p, consistent_order(p, state.a, level.order), bound=best)
        stats.slicings += 1
        stats.evaluations += 1
        if part.cost < best:
            cands.append(pipeline_blocks(p, part.assignment))
        improved = False
        for cand in cands:
            c = evaluate_partition(p, cand).bottleneck
            if c < best:
                best_a, best, improved = cand, c, True
        if not improved:
            break
        cur = best_a
    stats.cost = best
    stats.seconds += time.perf_counter() - t0
    return best_a, best


def perturb_reslice(level: Level, assignment: np.ndarray, deadline: float,
                    rng: np.random.Generator, stats: RefineStats | None = None,
                    noise: float = 0.1, cancel=None, max_evals: int | None = None
                    ) -> tuple[np.ndarray, float]:
    """Iterated re-slicing: reorder the clusters inside their blocks (blocks stay in
    pipeline order, so the order is topological) by a perturbed key, slice the new
    order by the exact DP under the incumbent's cost, keep improvements. Keys cycle
    through: clusters fed from earlier blocks first and feeding later blocks last,
    the level's DFS order, and random; each with Gaussian noise. Stops after
    `max_evals` re-slicings (None: no count), or cut short like `refine`."""
    stats = stats or RefineStats()
    t0 = time.perf_counter()
    p = level.problem
    g = p.graph
    n = g.num_nodes
    a = pipeline_blocks(p, assignment)
    best = evaluate_partition(p, a).bottleneck
    stats.start_cost = best
    pos = np.empty(n)
    pos[level.order] = np.arange(n) / max(n, 1)
    e = g.edges
    it = 0
    while (max_evals is None or it < max_evals) and not _over(deadline, cancel, stats):
        mode = it % 3
        it += 1
        if mode == 0:
            later = np.bincount(e[:, 0], weights=a[e[:, 1]] > a[e[:, 0]], minlength=n)
            earlier = np.bincount(e[:, 1], weights=a[e[:, 0]] < a[e[:, 1]], minlength=n)
            sec = earlier - later
        elif mode == 1:
            sec = -pos
        else:
            sec = rng.random(n)
        sec = sec + rng.normal(0.0, noise * (np.ptp(sec) + 1e-12), n)
        sec = (sec - sec.min()) / (np.ptp(sec) + 1e-12)
        order = kahn_csr(-2.0 * a + sec, g.succ_ptr, g.succ_idx, g.pred_ptr)
        part = slice_units(p, order, bound=best)
        stats.evaluations += 1
        stats.slicings += 1
        if part.cost < best:
            cand = pipeline_blocks(p, part.assignment)
            c = evaluate_partition(p, cand).bottleneck
            if c < best:
                a, best = cand, c
                pos[order] = np.arange(n) / max(n, 1)
                stats.moves += 1
    stats.cost = best
    stats.seconds += time.perf_counter() - t0
    return a, best


__all__ = ["BlockState", "RefineStats", "boundary_moves", "perturb_reslice", "refine"]
