"""Brute-force oracles for tiny graphs (test helpers, exponential time)."""

from __future__ import annotations

import itertools

import numpy as np

import jaxplace as jp


def direct_block_cost(problem: jp.Problem, S) -> float:
    """f(S) straight from the definition in mtpp.md section 1, with Python sets."""
    g, B = problem.graph, problem.bandwidth
    S = {int(v) for v in S}
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
    """Acyclic quotient, by DFS over block pairs (independent of jaxplace.cost)."""
    g = problem.graph
    succ = {}
    for u, v in g.edges:
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
    n, k = problem.n, problem.k
    best = float("inf")
    for a in itertools.product(range(k), repeat=n):
        if a and a[0] != 0:  # block labels are symmetric: fix the first node's block
            continue
        if not is_valid(problem, a):
            continue
        a = np.asarray(a)
        cost = max(direct_block_cost(problem, np.flatnonzero(a == b)) for b in range(k))
        best = min(best, cost)
    return best


def topological_orders(graph: jp.CompGraph):
    """Every topological order of a tiny graph."""
    n = graph.num_nodes
    preds = [set(graph.predecessors(v).tolist()) for v in range(n)]

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
