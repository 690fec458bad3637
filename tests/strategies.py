"""Hypothesis strategies for tiny random problems."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import jaxplace as jp

# One-decimal weights keep sums exact enough that ties are real ties.
weight = st.integers(0, 50).map(lambda x: x / 10)


@st.composite
def tiny_graphs(draw, max_nodes: int = 6, multi_tensor: bool = False):
    n = draw(st.integers(1, max_nodes))
    perm = draw(st.permutations(range(n)))
    pairs = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n)]
    edges = [e for e in pairs if draw(st.booleans())] if pairs else []
    work = [draw(weight) for _ in range(n)]
    param = [draw(weight) for _ in range(n)]
    out = [draw(weight) for _ in range(n)]
    if multi_tensor and edges:
        tensors = []
        for u in range(n):
            cons = sorted({v for a, v in edges if a == u})
            if not cons:
                continue
            # split the consumers of u over one or two tensors, possibly overlapping
            cut = draw(st.integers(0, len(cons)))
            for part in (cons[:cut], cons[max(0, cut - 1):]):
                if part:
                    tensors.append((u, draw(weight), part))
        return jp.CompGraph(work, edges, param, tensors=tensors)
    return jp.CompGraph(work, edges, param, out)


@st.composite
def tiny_problems(draw, max_nodes: int = 6, max_k: int = 3, multi_tensor: bool = False):
    g = draw(tiny_graphs(max_nodes, multi_tensor))
    k = draw(st.integers(1, max_k))
    bandwidth = draw(st.sampled_from([0.5, 1.0, 2.0]))
    memory = draw(st.one_of(st.none(), weight))
    capacity = draw(st.one_of(st.none(), st.integers(2, 12).map(float)))
    return jp.Problem(g, k, bandwidth=bandwidth, memory=memory, capacity=capacity)


def same_cost(a: float, b: float, rtol: float = 1e-9) -> bool:
    """Equal within float64 rounding of sums of a few terms, treating inf == inf."""
    if np.isinf(a) or np.isinf(b):
        return a == b
    return bool(np.isclose(a, b, rtol=rtol, atol=1e-9))


def cpu_blocks(attrs: dict, most: int):
    """How many CPU blocks to draw: at least one when an op may only run on a CPU (a
    problem without one is refused)."""
    return st.integers(0 if np.all(attrs["supported_on_accel"]) else 1, most)


@st.composite
def tiny_cpu_block_problems(draw, max_nodes: int = 5, training: bool = False):
    """Tiny problems with CPU blocks, unsupported nodes, colocation classes and, with
    `training`, backward nodes (edges among them may point 'back' in the forward order)."""
    n = draw(st.integers(1, max_nodes))
    perm = draw(st.permutations(range(n)))
    bwd = [draw(st.booleans()) if training else False for _ in range(n)]
    pairs = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n)]
    edges = [e for e in pairs if draw(st.booleans())] if pairs else []
    work = [draw(weight) for _ in range(n)]
    attrs = {
        "cpu_latency": np.array([draw(weight) * 3 for _ in range(n)]),
        "supported_on_accel": np.array([draw(st.integers(0, 4)) > 0 for _ in range(n)]),
        "color_class": np.array([draw(st.integers(-1, 3)) for _ in range(n)]),
        "is_backward": np.array(bwd),
    }
    g = jp.CompGraph(work, edges, [draw(weight) for _ in range(n)],
                     [draw(weight) for _ in range(n)], node_attrs=attrs)
    return jp.Problem(g, draw(st.integers(1, 2)), cpus=draw(cpu_blocks(attrs, 2)),
                      capacity=draw(st.one_of(st.none(), st.integers(2, 12).map(float))))


#: The former name ("hetero" now means unequal devices only); test_bbr.py still uses it.


@st.composite
def tiny_training_problems(draw, max_forward: int = 3, max_backward: int = 3):
    """Tiny training graphs with orphans: forward nodes (a random DAG), backward nodes
    that are either colocated with a forward node or orphans (no colour class, or a
    class of backward nodes only), edges forward -> backward and among backward nodes."""
    f = draw(st.integers(1, max_forward))
    b = draw(st.integers(1, max_backward))
    n = f + b
    edges = [(u, v) for u in range(f) for v in range(u + 1, f) if draw(st.booleans())]
    edges += [(u, v) for u in range(f) for v in range(f, n) if draw(st.booleans())]
    edges += [(u, v) for u in range(f, n) for v in range(u + 1, n) if draw(st.booleans())]
    # colour: forward node i has class i; a backward node joins one or is an orphan
    color = list(range(f)) + [draw(st.sampled_from([-1, f, *range(f)])) for _ in range(b)]
    attrs = {
        "cpu_latency": np.array([draw(weight) * 3 for _ in range(n)]),
        "supported_on_accel": np.array([draw(st.integers(0, 5)) > 0 for _ in range(n)]),
        "color_class": np.array(color),
        "is_backward": np.array([False] * f + [True] * b),
    }
    g = jp.CompGraph([draw(weight) for _ in range(n)], edges,
                     [draw(weight) for _ in range(n)], [draw(weight) for _ in range(n)],
                     node_attrs=attrs)
    return jp.Problem(g, draw(st.integers(1, 2)), cpus=draw(cpu_blocks(attrs, 1)),
                      capacity=draw(st.one_of(st.none(), st.integers(3, 12).map(float))))


def small_graph(seed: int, n: int = 24) -> jp.CompGraph:
    """A seeded random DAG of n nodes, edges to the next three nodes of a permutation."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, min(n, i + 4))
             if rng.random() < 0.5]
    return jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                        rng.uniform(0, 4, n))


def tiny_problem(seed: int, base: int = 1000) -> jp.Problem:
    """A tiny random problem (3-7 nodes, k 2-3; overflow, bandwidth, capacity by seed)."""
    rng = np.random.default_rng(base + seed)
    n = int(rng.integers(3, 8))
    perm = rng.permutation(n)
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n)
             if rng.random() < 0.4]
    g = jp.CompGraph(rng.integers(1, 30, n) / 10, edges, rng.integers(0, 30, n) / 10,
                     rng.integers(0, 30, n) / 10)
    memory = [None, 2.0][seed % 2]
    capacity = [None, None, 6.0][seed % 3]
    return jp.Problem(g, int(rng.integers(2, 4)), bandwidth=[1.0, 0.5][seed % 2],
                      memory=memory, capacity=capacity)


def dfs_work_cut(problem):
    """(n,) blocks: the DFS order cut into k runs of about equal work (the toy
    objectives' first partition)."""
    from jaxplace.search.baselines import dfs_order

    order = dfs_order(problem.graph)
    csum = np.cumsum(problem.graph.work[order])
    blocks = np.minimum((csum * problem.k / csum[-1] - 1e-9).astype(int), problem.k - 1)
    a = np.empty(problem.n, np.int64)
    a[order] = blocks
    return a


def one_partition_result(objective, req, assignment):
    """The search Result of a toy objective that evaluates one partition."""
    from jaxplace.partition import Partition
    from jaxplace.search.result import History, Result

    cost = objective.evaluate_partition(req.problem, assignment).cost
    part = Partition(np.arange(req.problem.n), (), assignment, cost)
    return Result(cost, part, np.zeros(req.problem.n, np.float32), 1, 0.0,
                  History.empty(), "default", req.lower_bound)


@st.composite
def tiny_all_options_problems(draw, max_nodes: int = 5):
    """Every option of an identical-device problem at once: several (overlapping)
    tensors per op, overflow, hard capacity, bandwidth, CPU blocks and CPU-only ops,
    colocation classes and backward nodes (forward-only contiguity, orphans
    included)."""
    n = draw(st.integers(1, max_nodes))
    perm = draw(st.permutations(range(n)))
    pairs = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n)]
    edges = [e for e in pairs if draw(st.booleans())] if pairs else []
    tensors = []
    for u in range(n):
        cons = sorted({v for a, v in edges if a == u})
        cut = draw(st.integers(0, len(cons)))
        for part in (cons[:cut], cons[max(0, cut - 1):]):
            if part:
                tensors.append((u, draw(weight), part))
    attrs = {
        "cpu_latency": np.array([draw(weight) * 3 for _ in range(n)]),
        "supported_on_accel": np.array([draw(st.integers(0, 4)) > 0 for _ in range(n)]),
        "color_class": np.array([draw(st.integers(-1, 3)) for _ in range(n)]),
        "is_backward": np.array([draw(st.integers(0, 2)) == 0 for _ in range(n)]),
    }
    g = jp.CompGraph([draw(weight) for _ in range(n)], edges,
                     [draw(weight) for _ in range(n)], tensors=tensors, node_attrs=attrs)
    k = draw(st.integers(1, 3))
    cpus = draw(cpu_blocks(attrs, 1))
    common = dict(bandwidth=draw(st.sampled_from([0.5, 1.0, 2.0])),
                  memory=draw(st.one_of(st.none(), weight)),
                  capacity=draw(st.one_of(st.none(), st.integers(2, 12).map(float))),
                  cpus=cpus)
    # (no uniform cluster here: a cluster's costs are the cluster's own, throughput_unequal/)
    return jp.Problem(g, k, **common)
