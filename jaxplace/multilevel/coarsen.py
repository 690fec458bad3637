"""Coarsening: quotient problems of clusters that keep every block cost exact.

Level 0 contracts the placement units (`jaxplace.units`: colocation classes and the
cycles they close), so colocation holds on every level. Each further level is a
heavy-edge matching restricted to pairs that are consecutive in a topological (DFS)
order of the level graph: merging neighbours of a topological order cannot close a
cycle, so every quotient stays acyclic and a topological order of a coarse level
expands to one of every finer level. A cluster's work stays under a share of the
total work / k, its parameters under a share of the memory budget and capacity, and
ops that an accelerator cannot run are never merged with ones it can.

A cluster's tensors are the tensors of its members that leave it (each consumed by
the clusters holding its consumers), so any partition of a level costs exactly what
its projection to the original graph costs (`objectives.throughput.cost.evaluate_partition`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.orders import dfs_order
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges, sorted_unique

#: Stop coarsening at this many clusters (the coarse search's size).
COARSEST_UNITS = 1000
#: A cluster's work stays at most total work / (k * WORK_SHARE).
WORK_SHARE = 4.0
#: A cluster's parameters stay at most this share of the memory budget and capacity.
MEMORY_SHARE = 0.5
#: Stop when a round shrinks the level by less than this fraction.
MIN_SHRINK = 0.1


@dataclass(frozen=True, eq=False)
class Level:
    """One level of the hierarchy.

    Attributes:
        problem: the quotient problem; its nodes are this level's clusters.
        node_cluster: (n,) int64 cluster of every original node.
        parent: (clusters,) int64 cluster of the next coarser level holding each of
            this level's clusters (None on the coarsest level).
        order: (clusters,) int64 DFS order of the level graph (topological).
    """

    problem: Problem
    node_cluster: np.ndarray
    order: np.ndarray
    parent: np.ndarray | None = None

    @property
    def size(self) -> int:
        return self.problem.n


def check_supported(problem: Problem) -> None:
    """Refuse what the multilevel path does not model, naming the field."""
    problem.objective_impl.require("multilevel")
    if problem.cpus:
        raise JaxplaceError("the multilevel search has no CPU blocks; use a flat method",
                            field="cpus")
    g = problem.graph
    if len(ordering_edges(g)) != g.num_edges:
        raise JaxplaceError("the multilevel search does not handle backward ops "
                            "(is_backward): their tensors run against the forward order",
                            field="is_backward")


def applies(problem: Problem) -> bool:
    """Does the multilevel search model `problem` (see `check_supported`)? For a
    planner's routing: False on CPU blocks, backward ops, other objectives."""
    try:
        check_supported(problem)
    except JaxplaceError:
        return False
    return True


def quotient(problem: Problem, cluster: np.ndarray, m: int) -> Problem:
    """The problem over `m` clusters (`cluster[v]` for every node v of `problem`), with
    the same k, bandwidth, memory and capacity; block costs are preserved exactly."""
    g = problem.graph
    cluster = np.asarray(cluster, np.int64)
    work = np.bincount(cluster, weights=g.work, minlength=m)
    param = np.bincount(cluster, weights=g.size_param, minlength=m)
    t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    pc = cluster[g.tensor_producer]
    cc = cluster[g.tensor_consumers]
    away = cc != pc[t_of]
    # (tensor, consumer cluster) pairs, sorted and unique: one integer key each (a
    # row-wise unique sorts ~10x slower at half a million edges)
    key = sorted_unique(t_of[away] * m + cc[away])
    pairs = np.stack([key // m, key % m], axis=1)
    tensors = []
    if len(pairs):
        starts = np.flatnonzero(np.r_[True, pairs[1:, 0] != pairs[:-1, 0]])
        for s0, s1 in zip(starts, np.r_[starts[1:], len(pairs)], strict=True):
            t = int(pairs[s0, 0])
            tensors.append((int(pc[t]), float(g.tensor_size[t]), pairs[s0:s1, 1].tolist()))
    e = ordering_edges(g)
    qe = np.stack([cluster[e[:, 0]], cluster[e[:, 1]]], axis=1)
    qe = qe[qe[:, 0] != qe[:, 1]]
    attrs = {}
    sup = problem.supported
    if not sup.all():
        attrs["supported_on_accel"] = np.bincount(cluster, weights=~sup, minlength=m) == 0
    qg = CompGraph(work, qe, param, tensors=tensors, node_attrs=attrs)
    return Problem(qg, k=problem.k, bandwidth=problem.bandwidth, memory=problem.memory,
                   capacity=problem.capacity)


def unit_level(problem: Problem) -> Level:
    """Level 0: the placement units (the problem itself when they are trivial)."""
    check_supported(problem)
    g = problem.graph
    units = g.units
    if units.trivial:
        return Level(problem, np.arange(g.num_nodes), dfs_order(g))
    qp = quotient(problem, units.unit_of, units.num_units)
    return Level(qp, np.asarray(units.unit_of, np.int64), dfs_order(qp.graph))


def match_consecutive(problem: Problem, order: np.ndarray, work_cap: float,
                      param_cap: float, block: np.ndarray | None = None,
                      rng: np.random.Generator | None = None) -> tuple[np.ndarray, int]:
    """(cluster per node, clusters): heavy-edge matching of pairs consecutive in
    `order`, heaviest shared tensors first, within the caps; with `block` (a block per
    node) only pairs in one block merge, so that partition survives on the coarse
    level. `rng` breaks ties between equally heavy pairs at random."""
    g = problem.graph
    n = g.num_nodes
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    weight = np.zeros(max(n - 1, 0))
    t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    pp = pos[g.tensor_producer[t_of]]
    cp = pos[g.tensor_consumers]
    nxt = cp == pp + 1
    np.add.at(weight, pp[nxt], g.tensor_size[t_of[nxt]])
    w = g.work[order]
    p = g.size_param[order]
    sup = problem.supported[order]
    pair_work = w[:-1] + w[1:]
    ok = (pair_work <= work_cap) & (p[:-1] + p[1:] <= param_cap) & (sup[:-1] == sup[1:])
    if block is not None:
        bo = np.asarray(block)[order]
        ok &= bo[:-1] == bo[1:]
    cand = np.flatnonzero(ok)
    tie = pair_work[cand] if rng is None else rng.random(len(cand))
    cand = cand[np.lexsort((tie, -weight[cand]))]
    taken = np.zeros(n, bool)
    head = np.zeros(n, bool)  # position i merged with i + 1
    for i in cand.tolist():
        if not taken[i] and not taken[i + 1]:
            taken[i] = taken[i + 1] = True
            head[i] = True
    # positions starting a new cluster: all but the second member of each pair
    new = np.ones(n, bool)
    new[1:][head[:-1]] = False
    cid = np.cumsum(new) - 1
    cluster = np.empty(n, np.int64)
    cluster[order] = cid
    return cluster, int(cid[-1]) + 1


def coarsen(problem: Problem, *, coarsest: int = COARSEST_UNITS,
            work_share: float = WORK_SHARE, memory_share: float = MEMORY_SHARE,
            block: np.ndarray | None = None, base: Level | None = None, rng=None,
            should_stop=None) -> list[Level]:
    """Levels from the placement units (index 0) down to at most about `coarsest`
    clusters (the last); stops early when a round barely shrinks the graph or
    `should_stop()` says so. `block`: a block per original node that no cluster may
    straddle (a V-cycle keeps the incumbent); `base`: level 0 when already built."""
    levels = [base if base is not None else unit_level(problem)]
    if block is not None:
        block = np.asarray(block, np.int64)
        first = np.empty(levels[0].size, np.int64)
        first[levels[0].node_cluster] = block  # members of a unit share a block
        block = first
    total = float(problem.graph.work.sum())
    work_cap = total / (problem.k * work_share)
    caps = [np.inf]
    if problem.memory is not None:
        caps.append(problem.memory * memory_share)
    if problem.capacity is not None:
        caps.append(problem.capacity * memory_share)
    param_cap = min(caps)
    while levels[-1].size > coarsest:
        if should_stop is not None and should_stop():
            break
        top = levels[-1]
        cluster, m = match_consecutive(top.problem, top.order, work_cap, param_cap,
                                       block, rng)
        if m > (1 - MIN_SHRINK) * top.size:
            break
        if block is not None:
            coarse_block = np.empty(m, np.int64)
            coarse_block[cluster] = block
            block = coarse_block
        qp = quotient(top.problem, cluster, m)
        levels[-1] = Level(top.problem, top.node_cluster, top.order, cluster)
        levels.append(Level(qp, cluster[top.node_cluster], dfs_order(qp.graph)))
    return levels


__all__ = ["COARSEST_UNITS", "Level", "applies", "check_supported", "coarsen", "match_consecutive",
           "quotient", "unit_level"]
