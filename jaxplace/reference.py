"""Reference decoder in plain NumPy/float64: the oracle for every fast path.

Kahn's topological sort with node priorities, then the SliceGraph dynamic program
(optimal split of an order into at most k contiguous blocks) with the streaming
segment-cost column of ../shared/docs/mtpp.md section 2 (Archer et al., ICML 2024).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.problem import Problem


@dataclass(frozen=True, eq=False)
class Partition:
    """A contiguous split of a topological order.

    Attributes:
        order: (n,) int64 node indices in topological order.
        cuts: positions in `order` where blocks 1, 2, ... start (blocks are
            order[0:cuts[0]], order[cuts[0]:cuts[1]], ...); len(cuts) = blocks - 1.
        assignment: (n,) int64 block of every node, blocks numbered 0.. in DAG order.
        cost: the bottleneck max_b f(block b).
    """

    order: np.ndarray
    cuts: tuple[int, ...]
    assignment: np.ndarray
    cost: float

    @property
    def num_blocks(self) -> int:
        return len(self.cuts) + 1

    @property
    def blocks(self) -> list[np.ndarray]:
        """Node indices of each block, in order."""
        return np.split(self.order, list(self.cuts))


def _check_priorities(graph: CompGraph, priorities) -> np.ndarray:
    x = np.asarray(priorities)
    if x.shape != (graph.num_nodes,):
        raise JaxplaceError(f"has shape {x.shape}, expected ({graph.num_nodes},)",
                            field="priorities")
    if x.dtype.kind not in "fiub" or (x.dtype.kind == "f" and np.isnan(x).any()):
        raise JaxplaceError("must be real numbers without NaN", field="priorities")
    return x


def kahn(graph: CompGraph, priorities) -> np.ndarray:
    """Topological order emitting the ready node of highest priority first.

    Ties go to the smaller node index. Priorities are compared in their own dtype
    (a float32 vector is compared as float32, like the C++ yardstick).

    Returns:
        (n,) int64 order.
    """
    x = _check_priorities(graph, priorities)
    indeg = np.diff(graph.pred_ptr).copy()
    heap = [(-x[v].item(), int(v)) for v in np.flatnonzero(indeg == 0)]
    heapq.heapify(heap)
    order = []
    succ_ptr, succ_idx = graph.succ_ptr, graph.succ_idx
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        for w in succ_idx[succ_ptr[u]:succ_ptr[u + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(heap, (-x[w].item(), int(w)))
    return np.asarray(order, dtype=np.int64)


def check_order(graph: CompGraph, order) -> np.ndarray:
    """Validate that `order` is a topological order of all nodes; returns int64."""
    o = np.asarray(order, dtype=np.int64)
    n = graph.num_nodes
    if o.shape != (n,) or not np.array_equal(np.sort(o), np.arange(n)):
        raise JaxplaceError("must be a permutation of the nodes", field="order")
    pos = np.empty(n, dtype=np.int64)
    pos[o] = np.arange(n)
    bad = np.flatnonzero(pos[graph.edges[:, 0]] > pos[graph.edges[:, 1]])
    if len(bad):
        u, v = graph.edges[bad[0]]
        raise JaxplaceError(f"edge {graph.label(int(u))} -> {graph.label(int(v))} "
                            f"goes backwards", field="order")
    return o


def segment_cost_columns(problem: Problem, order):
    """Yield (r, c) where c[l] = f({order[l..r]}) for l = 0..r, streaming over r.

    O(r + indegree) work per step and O(n) memory: each step is a few range additions
    (difference array, one prefix sum), as in mtpp.md "Segment costs without O(n^2)
    memory". Overflow and capacity are applied to the yielded column.
    """
    g, B = problem.graph, problem.bandwidth
    n = g.num_nodes
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    t_pos = pos[g.tensor_producer]  # (T,) position of each tensor's producer
    last_seen = t_pos.copy()  # latest position of producer or a consumer so far
    cons_pos = pos[g.tensor_consumers] if g.num_tensors else np.zeros(0, dtype=np.int64)
    t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    t_last = np.full(g.num_tensors, -1, dtype=np.int64)
    np.maximum.at(t_last, t_of, cons_pos)
    consumed = g.tensor_size * (t_last >= 0)  # a tensor nobody reads never leaves
    out_size = np.bincount(g.tensor_producer, weights=consumed, minlength=n) / B
    pref_param = np.concatenate([[0.0], np.cumsum(g.size_param[order])])
    cost = np.zeros(n)
    for r in range(n):
        v = int(order[r])
        diff = np.zeros(r + 2)
        # v's work, and v's tensors (consumed later, so they leave every segment ending at r)
        diff[0] += g.work[v] + out_size[v]
        diff[r + 1] -= g.work[v] + out_size[v]
        for t in g.in_tensors[g.in_ptr[v]:g.in_ptr[v + 1]]:
            s = g.tensor_size[t] / B
            a = last_seen[t] + 1  # segments starting after the producer and earlier consumers
            diff[a] += s
            diff[r + 1] -= s
            last_seen[t] = r
            if t_last[t] == r:  # segments holding the producer now hold all its consumers
                diff[0] -= s
                diff[t_pos[t] + 1] += s
        cost[:r + 1] += np.cumsum(diff)[:r + 1]
        col = cost[:r + 1].copy()
        param = pref_param[r + 1] - pref_param[:r + 1]
        if problem.memory is not None:
            col += np.maximum(0.0, param - problem.memory) / B
        if problem.capacity is not None:
            col[param > problem.capacity] = np.inf
        yield r, col


def slice_order(problem: Problem, order) -> Partition:
    """Optimal split of a topological `order` into at most k contiguous blocks.

    Q[j][t] = min(Q[j-1][t], min_{l<t} max(Q[j-1][l], c(l+1, t))), O(n^2 k) time.
    Ties prefer fewer blocks, then the earliest cut.
    """
    g = problem.graph
    order = check_order(g, order)
    n = g.num_nodes
    k = min(problem.k, n)  # more blocks than nodes never help
    Q = np.full((k + 1, n + 1), np.inf)
    Q[:, 0] = 0.0
    choice = np.full((k + 1, n + 1), -1, dtype=np.int64)  # start of last block; -1: fewer
    for r, col in segment_cost_columns(problem, order):
        t = r + 1
        Q[1, t] = col[0]
        choice[1, t] = 0
        for j in range(2, k + 1):
            cand = np.maximum(Q[j - 1, :t], col)
            l_best = int(np.argmin(cand))
            if Q[j - 1, t] <= cand[l_best]:
                Q[j, t] = Q[j - 1, t]
            else:
                Q[j, t] = cand[l_best]
                choice[j, t] = l_best
    starts, j, t = [], k, n
    while t > 0:
        c = choice[j, t]
        if c < 0:
            j -= 1
            continue
        starts.append(int(c))
        t, j = int(c), j - 1
    cuts = tuple(sorted(s for s in starts if s > 0))
    assignment = np.empty(n, dtype=np.int64)
    for b, block in enumerate(np.split(order, list(cuts))):
        assignment[block] = b
    return Partition(order, cuts, assignment, float(Q[k, n]))


def decode_reference(problem: Problem, priorities) -> Partition:
    """SliceGraph(Kahn(x)) for one priority vector."""
    return slice_order(problem, kahn(problem.graph, priorities))


def evaluate_reference(problem: Problem, X) -> np.ndarray:
    """(P,) float64 bottleneck costs of SliceGraph(Kahn(x)) for every row of X."""
    X = np.asarray(X)
    if X.ndim != 2 or X.shape[1] != problem.n:
        raise JaxplaceError(f"has shape {X.shape}, expected (P, {problem.n})", field="X")
    return np.array([decode_reference(problem, x).cost for x in X])
