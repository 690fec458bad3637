"""Zero-shot topological orders of a graph and the priorities that reproduce them.

- `dfs_order`: one depth-first topological order (reverse DFS postorder from the
  sources), the "linearization" heuristic of Tarnawski et al. (NeurIPS 2020), which
  is then sliced optimally once.
- `level_orders`: as-soon-as-possible and as-late-as-possible layerings.
- `order_to_priorities`: a priority vector under which Kahn reproduces an order.
- `topo_rank`: each node's position in the smallest-ready-first topological order of a
  DAG given as predecessor lists (the exact methods' and bounds' atom numbering).
- `seed_priorities`: DFS, ASAP and ALAP orders of the placement units, free units next
  to their heaviest tensor partner: the heuristic seeds of the searches, the GNN
  policy's features and the exact methods' first incumbents.

Only the graph is needed (numpy): the searches, the policy and the exact methods all
build on these.
"""

from __future__ import annotations

import heapq

import numpy as np

from jaxplace.graph import CompGraph


def topo_rank(n: int, pred_ptr: np.ndarray, pred_idx: np.ndarray) -> np.ndarray:
    """(n,) position of each node in a topological order, the smallest ready node
    first; `pred_ptr`/`pred_idx`: CSR of each node's predecessors. RuntimeError on a
    cycle."""
    indeg = np.diff(pred_ptr).astype(np.int64)
    succ: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for u in pred_idx[pred_ptr[v]:pred_ptr[v + 1]].tolist():
            succ[u].append(v)
    ready = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(ready)
    rank = np.empty(n, dtype=np.int64)
    pos = 0
    while ready:
        v = heapq.heappop(ready)
        rank[v] = pos
        pos += 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                heapq.heappush(ready, w)
    if pos != n:
        raise RuntimeError("the DAG has a cycle")
    return rank


def order_to_priorities(order, n: int | None = None) -> np.ndarray:
    """(n,) float32 priorities x with kahn(graph, x) == order for a topological order."""
    order = np.asarray(order, dtype=np.int64)
    n = len(order) if n is None else n
    x = np.zeros(n, np.float32)
    x[order] = (n - np.arange(len(order))) / n
    return x


def dfs_order(graph: CompGraph) -> np.ndarray:
    """(n,) int64 reverse postorder of a DFS from the sources (smaller index first)."""
    n = graph.num_nodes
    ptr, idx = graph.succ_ptr, graph.succ_idx
    seen = np.zeros(n, bool)
    post = []
    indeg = np.diff(graph.pred_ptr)
    for s in list(np.flatnonzero(indeg == 0)[::-1]):
        if seen[s]:
            continue
        seen[s] = True
        stack = [(int(s), int(ptr[s]))]
        while stack:
            v, i = stack[-1]
            if i < ptr[v + 1]:
                stack[-1] = (v, i + 1)
                w = int(idx[i])
                if not seen[w]:
                    seen[w] = True
                    stack.append((w, int(ptr[w])))
            else:
                stack.pop()
                post.append(v)
    return np.asarray(post[::-1], dtype=np.int64)


def level_orders(graph: CompGraph) -> list[np.ndarray]:
    """Priority vectors for ASAP (by depth) and ALAP (by height) layer orders."""
    n = graph.num_nodes
    depth = np.zeros(n)
    for v in graph.topo_order:
        preds = graph.pred_idx[graph.pred_ptr[v]:graph.pred_ptr[v + 1]]
        depth[v] = depth[preds].max() + 1 if len(preds) else 0
    height = np.zeros(n)
    for v in graph.topo_order[::-1]:
        succs = graph.succ_idx[graph.succ_ptr[v]:graph.succ_ptr[v + 1]]
        height[v] = height[succs].max() + 1 if len(succs) else 0
    return [(-depth).astype(np.float32), height.astype(np.float32)]


def _unit_dag(graph: CompGraph) -> CompGraph:
    """The placement-unit DAG as a CompGraph (for DFS / level orders over units)."""
    u = graph.units
    src = np.repeat(np.arange(u.num_units), np.diff(u.succ_ptr))
    edges = np.stack([src, u.succ_idx], axis=1).reshape(-1, 2)
    return CompGraph(np.ones(u.num_units), edges)


def tensor_partners(graph: CompGraph) -> np.ndarray:
    """(U,) int64: for every placement unit, the other unit it shares the most tensor
    volume with (as producer or consumer); -1 when it shares none."""
    units = graph.units
    uo = units.unit_of
    U = units.num_units
    w: dict = {}
    for t in range(graph.num_tensors):
        a = int(uo[graph.tensor_producer[t]])
        cons = {int(uo[c]) for c in graph.tensor_consumers[graph.tensor_ptr[t]:
                                                             graph.tensor_ptr[t + 1]]}
        for b in cons - {a}:
            for key in ((a, b), (b, a)):
                w[key] = w.get(key, 0.0) + float(graph.tensor_size[t])
    best = np.full(U, -1, np.int64)
    bw = np.full(U, -1.0)
    for (a, b), x in sorted(w.items()):
        if x > bw[a]:
            best[a], bw[a] = b, x
    return best


def place_free_units(graph: CompGraph, up: np.ndarray) -> np.ndarray:
    """Unit priorities `up` (higher first) with every *free* unit (no ordering edge in
    or out, e.g. a training graph's backward-only colour classes) put just below the
    unit it shares its heaviest tensor with, so Kahn emits it right after that unit
    (random or level priorities would put it anywhere, usually far from its data)."""
    units = graph.units
    U = units.num_units
    free = units.free_units()
    if U < 2 or not len(free):
        return up
    # canonical form first: distinct values, one step apart
    rank = np.empty(U, np.int64)
    rank[np.lexsort((np.arange(U), -up))] = np.arange(U)
    up = ((U - rank) / U).astype(np.float64)
    partner = tensor_partners(graph)
    isfree = np.zeros(U, bool)
    isfree[free] = True
    out = up.copy()
    for f in free:
        p, depth = int(partner[f]), 1
        while p >= 0 and isfree[p] and depth < U:  # chains of free units
            p, depth = int(partner[p]), depth + 1
        if p >= 0 and p != f:
            out[f] = up[p] - 0.5 / U * (1 - 1 / (depth + 1))
    return out


def seed_priorities(graph: CompGraph) -> np.ndarray:
    """(S, n) float32 heuristic node-priority vectors: DFS, ASAP and ALAP orders of
    the placement units (`graph.units`), each with its free units placed next to
    their heaviest tensor partner (`place_free_units`); every node of a unit gets the
    unit's priority."""
    units = graph.units
    if units.trivial:
        ug = graph
        up = [order_to_priorities(dfs_order(graph)), *level_orders(graph)]
    else:
        ug = _unit_dag(graph)
        up = [order_to_priorities(dfs_order(ug)), *level_orders(ug)]
    rows = []
    for x in up:
        y = place_free_units(graph, np.asarray(x, np.float64))
        rows.append(np.asarray(y, np.float32)[units.unit_of])
    return np.stack(rows)


__all__ = ["dfs_order", "level_orders", "order_to_priorities", "place_free_units",
           "seed_priorities", "tensor_partners"]
