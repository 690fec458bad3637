"""Zero-shot orders and slow oracles: DFS linearization, level orders, random reference.

- `dfs_order`: one depth-first topological order (reverse DFS postorder from the
  sources), the "linearization" heuristic of Tarnawski et al. (NeurIPS 2020), which
  is then sliced optimally once.
- `level_orders`: as-soon-as-possible and as-late-as-possible layerings, used with the
  DFS order to seed the default search.
- `order_to_priorities`: a priority vector under which Kahn reproduces an order.
- `random_reference`: best of T uniform vectors through the NumPy float64 reference
  (slow; the oracle the compiled random search is tested against).

MLA and MLA-weighted (BRKGA over the linear-arrangement cost) run through the
compiled driver; see `jaxplace.search.search(method="mla")`.
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.graph import CompGraph
from jaxplace.problem import Problem
from jaxplace.progress import bar
from jaxplace.reference import decode_reference


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


def seed_priorities(graph: CompGraph) -> np.ndarray:
    """(S, n) float32 heuristic priority vectors: DFS, ASAP and ALAP orders."""
    return np.stack([order_to_priorities(dfs_order(graph)), *level_orders(graph)])


def random_reference(problem: Problem, budget: int, seed: int, time_limit: float | None,
                     progress: bool | None = None):
    """Best of `budget` uniform priority vectors through the NumPy reference decoder.

    Returns (best Partition, evaluations, best priorities). Ctrl-C stops early and
    keeps the best partition found so far.
    """
    rng = np.random.default_rng(seed)
    best, best_x, start, done = None, None, time.perf_counter(), 0
    with bar(budget, "random-reference", enabled=progress) as pb:
        try:
            for _ in range(budget):
                x = rng.random(problem.n)
                part = decode_reference(problem, x)
                done += 1
                if best is None or part.cost < best.cost:
                    best, best_x = part, x
                    pb.set_postfix(best=f"{best.cost:.6g}")
                pb.update(1)
                if time_limit is not None and time.perf_counter() - start > time_limit:
                    break
        except KeyboardInterrupt:
            if best is None:
                raise
    return best, done, best_x


__all__ = ["dfs_order", "level_orders", "order_to_priorities", "random_reference",
           "seed_priorities"]
