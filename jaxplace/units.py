"""Placement units: colocation classes contracted, cycles merged, training graphs ordered
by their forward part.

The NeurIPS 2020 model (Tarnawski et al.): nodes that
share a `color_class` go to the same device, backward nodes follow their class, and
contiguity (the acyclic-quotient rule) applies to the forward graph only. We contract
every class into one unit, keep only forward edges (both ends forward) for ordering,
and merge the strongly connected components that contraction creates (a path leaving a
class and coming back forces the nodes on it into the class's block). Orders and slices
are then taken over units; costs still count every original tensor, forward or backward.

For a plain MTPP graph (no classes, no backward nodes) every node is its own unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """`np.unique(x)` of a 1-d integer array, through one sort (numpy's hash-based
    unique took 15x as long at half a million entries)."""
    x = np.sort(np.asarray(x).ravel())
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


def unique_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(m, 2) int64: the unique (first, second) rows in lexicographic order, as
    `np.unique(np.stack([first, second], 1), axis=0)` (one integer key per row)."""
    first, second = np.asarray(first, np.int64), np.asarray(second, np.int64)
    if not len(first):
        return np.zeros((0, 2), np.int64)
    f0, s0 = int(first.min()), int(second.min())
    span = int(second.max()) - s0 + 1
    if (int(first.max()) - f0 + 1) * span >= 2 ** 62:  # keys would overflow
        return np.unique(np.stack([first, second], axis=1), axis=0)
    key = sorted_unique((first - f0) * span + (second - s0))
    return np.stack([key // span + f0, key % span + s0], axis=1)


class GraphLike(Protocol):
    """What units read of a graph. Units sit below `jaxplace.graph.CompGraph`, which
    builds them (`CompGraph.units`), so they name its fields rather than import it."""

    num_nodes: int
    num_edges: int
    edges: np.ndarray  # (m, 2) int64
    node_attrs: Mapping[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class Units:
    """Arrays (read-only numpy):

    - `unit_of`: (n,) int64 unit of every node. Units are numbered by their smallest
      member, so unit order follows node order.
    - `members_ptr` (U+1,), `members` (n,): CSR of each unit's nodes, ascending.
    - `succ_ptr` (U+1,), `succ_idx`: the unit DAG (from forward edges), deduplicated.
    - `trivial`: True when every node is its own unit and every edge orders them.
    """

    unit_of: np.ndarray
    members_ptr: np.ndarray
    members: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    trivial: bool

    @property
    def num_units(self) -> int:
        return len(self.members_ptr) - 1

    def unit_members(self, u: int) -> np.ndarray:
        return self.members[self.members_ptr[u]:self.members_ptr[u + 1]]

    def free_units(self) -> np.ndarray:
        """Units with no ordering edge in or out (a training graph's backward ops in
        colour classes of their own): Kahn's order may put them anywhere."""
        return np.flatnonzero((np.diff(self.pred_ptr) == 0) & (np.diff(self.succ_ptr) == 0))

    @property
    def has_free_units(self) -> bool:
        """Colocation classes with at least one free unit (orphan backward ops): the
        graphs that get the orphan policy and lean on the DFS order in the policy
        searches. A plain graph's isolated node does not count."""
        return not self.trivial and len(self.free_units()) > 0


def ordering_edges(graph: GraphLike) -> np.ndarray:
    """(m', 2) edges that constrain contiguity: all of them, or forward-only ones."""
    bwd = graph.node_attrs.get("is_backward")
    if bwd is None or not np.any(bwd):
        return graph.edges
    bwd = np.asarray(bwd, dtype=bool)
    keep = ~bwd[graph.edges[:, 0]] & ~bwd[graph.edges[:, 1]]
    return graph.edges[keep]


def _find(parent: np.ndarray, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _csr(rows, cols, n_rows):
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=ptr[1:])
    return ptr, np.asarray(cols, dtype=np.int64)[order]


def build_units(graph: GraphLike) -> Units:
    """Contract colocation classes and the cycles they create; see the module doc."""
    n = graph.num_nodes
    edges = ordering_edges(graph)
    color = graph.node_attrs.get("color_class")
    parent = np.arange(n)
    if color is not None:
        color = np.asarray(color, dtype=np.int64)
        first = {}
        for v in range(n):
            c = int(color[v])
            if c < 0:
                continue
            if c in first:
                a, b = _find(parent, v), _find(parent, first[c])
                parent[max(a, b)] = min(a, b)
            else:
                first[c] = v
    root = np.array([_find(parent, v) for v in range(n)])
    # Strongly connected components of the contracted ordering graph (iterative Tarjan).
    cu, cv = root[edges[:, 0]], root[edges[:, 1]]
    keep = cu != cv
    ptr, idx = _csr(cu[keep], cv[keep], n)
    comp = _scc(ptr, idx, n, alive=(root == np.arange(n)))
    label = comp[root]
    # Renumber components by their smallest member.
    firsts = {}
    for v in range(n):
        firsts.setdefault(int(label[v]), len(firsts))
    unit_of = np.array([firsts[int(label[v])] for v in range(n)], dtype=np.int64)
    U = len(firsts)
    m_ptr, m_idx = _csr(unit_of, np.arange(n), U)
    uu, uv = unit_of[edges[:, 0]], unit_of[edges[:, 1]]
    keep = uu != uv
    pairs = unique_pairs(uu[keep], uv[keep])
    s_ptr, s_idx = _csr(pairs[:, 0], pairs[:, 1], U)
    p_ptr, p_idx = _csr(pairs[:, 1], pairs[:, 0], U)
    trivial = U == n and len(edges) == graph.num_edges
    arrays = [unit_of, m_ptr, m_idx, s_ptr, s_idx, p_ptr, p_idx]
    for a in arrays:
        a.setflags(write=False)
    return Units(*arrays, trivial=trivial)


def _scc(ptr: np.ndarray, idx: np.ndarray, n: int, alive: np.ndarray) -> np.ndarray:
    """Component id per node (Tarjan, iterative); nodes not alive keep their own id."""
    index = np.full(n, -1)
    low = np.zeros(n, dtype=np.int64)
    on_stack = np.zeros(n, dtype=bool)
    comp = np.arange(n)
    stack, counter = [], 0
    for s in range(n):
        if not alive[s] or index[s] >= 0:
            continue
        work = [(s, ptr[s])]
        index[s] = low[s] = counter
        counter += 1
        stack.append(s)
        on_stack[s] = True
        while work:
            v, i = work[-1]
            if i < ptr[v + 1]:
                work[-1] = (v, i + 1)
                w = int(idx[i])
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, ptr[w]))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp[w] = v
                        if w == v:
                            break
    return comp
