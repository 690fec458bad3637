"""Brute-force oracles for tiny graphs (test helpers, exponential time)."""

from __future__ import annotations

import itertools

import numpy as np

import jaxplace as jp


def direct_block_cost(problem: jp.Problem, S, device: str = "accel") -> float:
    """f(S) straight from the definition in mtpp.md sections 1 and 5, with Python sets."""
    g, B = problem.graph, problem.bandwidth
    S = {int(v) for v in S}
    if device == "cpu":
        return float(sum(problem.cpu_latency[v] for v in S))
    if any(not problem.supported[v] for v in S):
        return float("inf")
    work = sum(g.work[v] for v in S)
    param = sum(g.size_param[v] for v in S)
    io_out = io_in = 0.0
    for t in range(g.num_tensors):
        p, cons = int(g.tensor_producer[t]), {int(c) for c in g.consumers(t)}
        if p in S and cons - S:
            io_out += g.tensor_size[t] / B
        if p not in S and cons & S:
            io_in += g.tensor_size[t] / B
    over = max(0.0, param - problem.memory) / B if problem.memory is not None else 0.0
    if problem.capacity is not None and param > problem.capacity:
        return float("inf")
    return work + io_in + io_out + over


def is_valid(problem: jp.Problem, assignment) -> bool:
    """Colocation classes together and an acyclic quotient of the forward edges, by DFS
    over block pairs (independent of jaxplace.objectives.throughput.cost)."""
    g = problem.graph
    color = g.node_attrs.get("color_class")
    if color is not None:
        seen = {}
        for v, c in enumerate(color):
            if c >= 0 and seen.setdefault(int(c), assignment[v]) != assignment[v]:
                return False
    bwd = g.node_attrs.get("is_backward")
    succ = {}
    for u, v in g.edges:
        if bwd is not None and (bwd[u] or bwd[v]):
            continue
        a, b = int(assignment[u]), int(assignment[v])
        if a != b:
            succ.setdefault(a, set()).add(b)
    state = {}

    def cyclic(x):
        state[x] = 1
        for y in succ.get(x, ()):
            if state.get(y) == 1 or (y not in state and cyclic(y)):
                return True
        state[x] = 2
        return False

    return not any(x not in state and cyclic(x) for x in list(succ))


def brute_force_optimum(problem: jp.Problem) -> float:
    """min over all valid partitions of the max block cost (k^n assignments)."""
    n, k, nb = problem.n, problem.k, problem.k + problem.cpus
    best = float("inf")
    for a in itertools.product(range(nb), repeat=n):
        if problem.cpus == 0 and a and a[0] != 0:  # labels are symmetric: fix node 0's
            continue
        if not is_valid(problem, a):
            continue
        a = np.asarray(a)
        cost = max(direct_block_cost(problem, np.flatnonzero(a == b),
                                     "accel" if b < k else "cpu") for b in range(nb))
        best = min(best, cost)
    return best


def topological_orders(graph: jp.CompGraph):
    """Every order of the placement units of a tiny graph, as node orders."""
    units = graph.units
    for uo in _orders(units.num_units, [set(units.pred_idx[units.pred_ptr[u]:
                                                           units.pred_ptr[u + 1]].tolist())
                                        for u in range(units.num_units)]):
        yield [int(v) for u in uo for v in units.unit_members(u)]


def _orders(n, preds):
    def rec(prefix, placed):
        if len(prefix) == n:
            yield list(prefix)
            return
        for v in range(n):
            if v not in placed and preds[v] <= placed:
                prefix.append(v)
                placed.add(v)
                yield from rec(prefix, placed)
                prefix.pop()
                placed.discard(v)

    yield from rec([], set())


def brute_force_noncontiguous(problem: jp.Problem) -> tuple[float, np.ndarray | None]:
    """(min over ALL assignments keeping colocation of the max block cost, one optimal
    assignment): the non-contiguous optimum, no acyclicity required."""
    n, k, nb = problem.n, problem.k, problem.k + problem.cpus
    color = problem.graph.node_attrs.get("color_class")
    best, arg = float("inf"), None
    for a in itertools.product(range(nb), repeat=n):
        if color is not None:
            seen = {}
            if any(c >= 0 and seen.setdefault(int(c), a[v]) != a[v]
                   for v, c in enumerate(color)):
                continue
        a = np.asarray(a)
        cost = max(direct_block_cost(problem, np.flatnonzero(a == b),
                                     "accel" if b < k else "cpu") for b in range(nb))
        if cost < best:
            best, arg = cost, a
    return best, arg


def min_runs(problem: jp.Problem, assignment) -> int:
    """Fewest runs of one block over every order of the forward nodes that respects the
    ordering edges (nodes off them, backward ones, are left out)."""
    from jaxplace.units import ordering_edges

    g = problem.graph
    e = ordering_edges(g)
    bwd = g.node_attrs.get("is_backward")
    nodes = [v for v in range(g.num_nodes) if bwd is None or not bwd[v]]
    pos = {v: i for i, v in enumerate(nodes)}
    preds = [set() for _ in nodes]
    for u, v in e:
        preds[pos[int(v)]].add(pos[int(u)])
    best = len(nodes)
    for order in _orders(len(nodes), preds):
        seq = [int(assignment[nodes[i]]) for i in order]
        best = min(best, sum(1 for i, d in enumerate(seq) if i == 0 or seq[i - 1] != d))
    return best


def brute_force_slice(problem, order):
    """Best bottleneck over every contiguous slicing of `order` into at most k blocks."""
    n, best = problem.n, np.inf
    for nb in range(1, min(problem.k, n) + 1):
        for cuts in itertools.combinations(range(1, n), nb - 1):
            a = np.empty(n, dtype=np.int64)
            for b, blk in enumerate(np.split(order, list(cuts))):
                a[blk] = b
            best = min(best, jp.evaluate_partition(problem, a).bottleneck)
    return best
