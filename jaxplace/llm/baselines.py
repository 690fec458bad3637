"""How the pipeline frameworks split a layer graph by default, as assignments.

Each rule sees the parts in order, [embedding, layer 0, ..., layer L-1, final norm +
LM head] (the norm and the head count as one item: Megatron-LM and vLLM build them on
the last stage together), and returns a block per node of the graph:

- `split_uniform`: the same number of decoder layers per stage, embedding on the first
  stage and norm + head on the last (Megatron-LM's default, which requires L divisible
  by the stages; the remainder goes one layer each to the stages before the last, from
  the second-to-last backwards, as vLLM's default `get_pp_indices` does).
- `split_by_parameters`: DeepSpeed `PipelineModule(partition_method="parameters")`:
  contiguous parts with the largest parameter count as small as possible
  (`partition_balanced`), here computed exactly.
- `split_by_time`: torchgpipe's `balance_by_time`: per-item times (our forward +
  backward roofline times in place of its profiler) split by the block-partition
  heuristic of Barany and Grinberg, "Block partitions of sequences" (Israel J. Math.
  2015), which torchgpipe's `blockpartition.solve` implements: normalize the times
  to [0, 1], start from equal counts and move single items from a neighbour of a
  lightest block towards it until the heaviest block exceeds the lightest by at most
  one normalized unit.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph


def _items(graph: CompGraph) -> np.ndarray:
    """(n,) item of every node: the color class (norm + head) is one item."""
    n = graph.num_nodes
    color = graph.node_attrs.get("color_class")
    item = np.arange(n)
    if color is not None:
        for c in np.unique(color[color >= 0]):
            members = np.flatnonzero(color == c)
            item[members] = members[0]
    _, item = np.unique(item, return_inverse=True)
    return item


def _assign(graph: CompGraph, counts) -> np.ndarray:
    """Block per node from the number of items per stage (zeros allowed)."""
    item = _items(graph)
    stage_of_item = np.repeat(np.arange(len(counts)), counts)
    if len(stage_of_item) != item.max() + 1:
        raise JaxplaceError(f"split covers {len(stage_of_item)} of {item.max() + 1} items")
    return stage_of_item[item].astype(np.int64)


def split_uniform(graph: CompGraph, k: int) -> np.ndarray:
    """Megatron-LM / vLLM default: equal decoder-layer counts per stage."""
    L = int(graph.meta.get("num_layers", graph.num_nodes - 3))
    per = [L // k] * k
    for i in range(2, L % k + 2):
        per[-i] += 1
    counts = list(per)
    counts[0] += 1  # embedding
    counts[-1] += 1  # final norm + head
    return _assign(graph, counts)


def _item_sums(graph: CompGraph, values: np.ndarray) -> np.ndarray:
    item = _items(graph)
    return np.bincount(item, weights=np.asarray(values, np.float64))


def minmax_counts(weights, k: int) -> list[int]:
    """Items per part of a contiguous split of `weights` into k parts (some possibly
    empty) minimizing the largest part sum: exact dynamic program, O(n^2 k)."""
    w = np.asarray(weights, np.float64)
    n = len(w)
    pre = np.concatenate([[0.0], np.cumsum(w)])
    best = np.full((k + 1, n + 1), np.inf)
    cut = np.zeros((k + 1, n + 1), np.int64)
    best[0, 0] = 0.0
    for j in range(1, k + 1):
        for i in range(n + 1):
            cand = np.maximum(best[j - 1, :i + 1], pre[i] - pre[:i + 1])
            c = int(np.argmin(cand))
            best[j, i], cut[j, i] = cand[c], c
    counts, i = [], n
    for j in range(k, 0, -1):
        c = int(cut[j, i])
        counts.append(i - c)
        i = c
    return counts[::-1]


def split_by_parameters(graph: CompGraph, k: int) -> np.ndarray:
    """DeepSpeed `partition_method="parameters"`: balance parameter counts."""
    params = graph.node_attrs.get("params", graph.size_param)
    return _assign(graph, minmax_counts(_item_sums(graph, params), k))


def block_partition(times, k: int, max_moves: int = 100_000) -> list[int]:
    """Items per block of the Barany-Grinberg heuristic (as torchgpipe runs it)."""
    x = np.asarray(times, np.float64)
    n = len(x)
    if n < k:
        raise JaxplaceError(f"{n} items cannot fill {k} blocks", field="k")
    span = x.max() - x.min()
    x = (x - x.min()) / span if span > 0 else np.zeros(n)
    splits = [n // k * (j + 1) for j in range(k - 1)] + [n]

    def sizes():
        starts = [0, *splits[:-1]]
        return [float(x[a:b].sum()) for a, b in zip(starts, splits, strict=True)]

    for _ in range(max_moves):
        s = sizes()
        p = max(range(k), key=lambda j: (s[j], j))
        while True:
            s = sizes()
            q = min(range(k), key=lambda j: (s[j], j))
            if s[p] <= s[q] + 1:
                starts = [0, *splits[:-1]]
                return [b - a for a, b in zip(starts, splits, strict=True)]
            if p < q:  # the block before q gives q its last item
                h = q - 1
                splits[h] -= 1
            else:  # the block after q gives q its first item
                h = q + 1
                splits[q] += 1
            if p == h:
                break
    raise JaxplaceError("block partition did not converge")


def split_by_time(graph: CompGraph, k: int) -> np.ndarray:
    """torchgpipe `balance_by_time`: the block-partition heuristic on item times."""
    return _assign(graph, block_partition(_item_sums(graph, graph.work), k))


#: name -> (label, rule); every rule is called rule(graph, k) -> (n,) block per node.
BASELINES = {
    "uniform": ("uniform layers (Megatron-LM default)", split_uniform),
    "parameters": ("DeepSpeed parameters", split_by_parameters),
    "time": ("balance by time (torchgpipe)", split_by_time),
}
