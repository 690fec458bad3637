"""Atoms: the placement units (`jaxplace.units`) with cost-free satellites merged in.

The DP over ideals (Tarnawski et al., NeurIPS 2020, section 5.1.1) runs over the DAG of
placement units: colocation classes contracted, contiguity taken on forward edges only.
Before enumerating ideals we merge, exactly, every *trivial* unit into its only
neighbour, as their implementation does for zero-latency nodes: a unit with no work, no
CPU latency, no parameters, supported on accelerators, whose ordering edges and tensors
all lead to one other unit x (parameters count only when they can matter: with an
overflow budget, or when the whole graph exceeds the capacity). Moving it next to x in
any partition keeps the partition valid (its only ordering edges become internal) and
costs nothing (every tensor it touches is then inside x's block), so the optimum is
unchanged, while the number of ideals can drop by orders of magnitude (GNMT: 223,018
-> 17,914). A trivial unit with no neighbour at all is merged into atom 0 likewise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.problem import Problem
from jaxplace.units import ordering_edges


@dataclass(frozen=True, eq=False)
class Atoms:
    """The reduced DAG. Arrays are read-only numpy.

    - `atom_of`: (n,) int64 atom of every node; atoms numbered 0..A-1.
    - `pred_ptr` (A+1,), `pred_idx`: CSR of each atom's predecessor atoms (ordering
      edges, deduplicated).
    - `work`, `cpu`, `param`: (A,) float64 sums over the atom's nodes.
    - `bad`: (A,) int64 nodes of the atom not supported on accelerators.
    - `tensor_ends`: per tensor group, the sorted atoms touched by its producer and
      consumers (only groups touching two atoms or more, of positive size).
    - `tensor_size`: (T,) float64 size / bandwidth of every group (tensors with the
      same atoms are summed: they always cross together).
    """

    atom_of: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    work: np.ndarray
    cpu: np.ndarray
    param: np.ndarray
    bad: np.ndarray
    tensor_ends: tuple[np.ndarray, ...]
    tensor_size: np.ndarray

    @property
    def num_atoms(self) -> int:
        return len(self.work)

    def preds(self, a: int) -> np.ndarray:
        return self.pred_idx[self.pred_ptr[a]:self.pred_ptr[a + 1]]


def _find(parent: list[int], x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _neighbours(problem: Problem, group: np.ndarray) -> list[set[int]]:
    """Per group: the other groups it shares an ordering edge or a tensor with."""
    g = problem.graph
    G = int(group.max()) + 1
    nb: list[set[int]] = [set() for _ in range(G)]
    e = ordering_edges(g)
    pairs = [group[e[:, 0]], group[e[:, 1]]]
    if g.num_tensors:
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
        pairs[0] = np.concatenate([pairs[0], group[g.tensor_producer[t_of]]])
        pairs[1] = np.concatenate([pairs[1], group[g.tensor_consumers]])
    a, b = pairs
    keep = a != b
    for x, y in zip(a[keep].tolist(), b[keep].tolist(), strict=True):
        nb[x].add(y)
        nb[y].add(x)
    return nb


def _param_matters(problem: Problem) -> bool:
    """Can parameters change a block's cost or feasibility? Not without an overflow
    budget when the whole graph fits the capacity."""
    total = float(problem.graph.size_param.sum())
    return problem.memory is not None or total > problem.capacity_limit


def _merge_trivial(problem: Problem, unit_of: np.ndarray) -> np.ndarray:
    """(n,) group of every node after merging trivial units until none is left."""
    g = problem.graph
    weight = g.work + problem.cpu_latency + (~problem.supported)
    if _param_matters(problem):
        weight = weight + g.size_param
    group = unit_of.copy()
    while True:
        G = int(group.max()) + 1
        if G == 1:
            return group
        heavy = np.bincount(group, weights=weight, minlength=G) > 0
        nb = _neighbours(problem, group)
        parent = list(range(G))
        merged = False
        for x in range(G):
            if heavy[x] or len(nb[x]) > 1:
                continue
            y = next(iter(nb[x])) if nb[x] else (0 if x else 1)
            a, b = _find(parent, x), _find(parent, y)
            if a != b:
                parent[max(a, b)] = min(a, b)
                merged = True
        if not merged:
            return group
        roots = np.array([_find(parent, x) for x in range(G)])
        _, group = np.unique(roots[group], return_inverse=True)


def build_atoms(problem: Problem, merge: bool = True) -> Atoms:
    """The atoms of `problem` (see the module doc); `merge=False` keeps the units."""
    g = problem.graph
    group = np.asarray(g.units.unit_of, dtype=np.int64)
    if merge:
        group = _merge_trivial(problem, group)
    # renumber by smallest member so that atoms follow node order
    first = np.full(int(group.max()) + 1, g.num_nodes)
    np.minimum.at(first, group, np.arange(g.num_nodes))
    rank = np.empty_like(first)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    atom_of = rank[group]
    A = len(first)
    e = ordering_edges(g)
    au, av = atom_of[e[:, 0]], atom_of[e[:, 1]]
    keep = au != av
    pairs = np.unique(np.stack([av[keep], au[keep]], axis=1), axis=0) if keep.any() \
        else np.zeros((0, 2), dtype=np.int64)
    ptr = np.zeros(A + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs[:, 0], minlength=A), out=ptr[1:])
    sums = [np.bincount(atom_of, weights=w, minlength=A)
            for w in (g.work, problem.cpu_latency, g.size_param)]
    bad = np.bincount(atom_of, weights=~problem.supported, minlength=A).astype(np.int64)
    ends, sizes = _tensor_groups(problem, atom_of)
    arrays = [atom_of, ptr, pairs[:, 1].copy(), *sums, bad, sizes]
    for a in arrays:
        a.setflags(write=False)
    return Atoms(atom_of, ptr, arrays[2], *sums, bad, ends, sizes)


def _tensor_groups(problem: Problem, atom_of: np.ndarray):
    """Tensors grouped by the set of atoms they touch (see `Atoms.tensor_ends`)."""
    g, B = problem.graph, problem.bandwidth
    total: dict[tuple[int, ...], float] = {}
    for t in range(g.num_tensors):
        s = float(g.tensor_size[t])
        if s <= 0:
            continue
        ends = {int(atom_of[g.tensor_producer[t]])}
        ends.update(atom_of[g.consumers(t)].tolist())
        if len(ends) > 1:
            key = tuple(sorted(ends))
            total[key] = total.get(key, 0.0) + s / B
    keys = list(total)
    return (tuple(np.asarray(k, dtype=np.int64) for k in keys),
            np.asarray([total[k] for k in keys], dtype=np.float64))
