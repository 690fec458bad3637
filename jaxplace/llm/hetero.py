"""Exact splits of a layer chain over ranks with different memory (a mixed cluster).

A `Problem` has one capacity for every block; a cluster whose GPUs have different
free memory (vLLM #6824) needs one per rank. For a chain (every layer graph from a
config), the valid partitions are exactly the contiguous splits, so a dynamic program
over (rank, prefix of items) is exhaustive: it returns the minimum bottleneck over all
splits that put stage s on rank s within its memory, with the same stage costs as
`jaxplace.objectives.throughput.cost.evaluate_partition` (work + the activation
entering + the one leaving).
The final norm and LM head stay one item (their colocation class).
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.llm.baselines import _items


def _item_arrays(graph: CompGraph):
    item = _items(graph)
    m = int(item.max()) + 1
    if np.any(np.diff(item) < 0) or graph.num_edges != graph.num_nodes - 1:
        raise JaxplaceError("not a layer chain", field="graph")
    work = np.bincount(item, weights=graph.work, minlength=m)
    mem = np.bincount(item, weights=graph.size_param, minlength=m)
    ws = np.zeros(m)
    np.maximum.at(ws, item, graph.node_attrs["workspace_bytes"])
    out = np.zeros(m)  # tensor leaving item t towards item t + 1
    for p, size in zip(graph.tensor_producer, graph.tensor_size, strict=True):
        if item[p] + 1 < m and item[p + 1] == item[p] + 1:
            out[item[p]] += size
    return item, work, mem, ws, out


def chain_split(graph: CompGraph, caps, bandwidth: float = 1.0):
    """(assignment, bottleneck) of the best split with stage s on rank s, each stage's
    memory (resident bytes plus its largest working set) within caps[s]; every rank
    gets at least one item. (None, inf) when no split fits."""
    item, work, mem, ws, out = _item_arrays(graph)
    caps = np.asarray(caps, np.float64)
    k, m = len(caps), len(work)
    if m < k:
        raise JaxplaceError(f"{m} items cannot fill {k} ranks", field="k")
    pw, pm = np.concatenate([[0.0], np.cumsum(work)]), np.concatenate([[0.0], np.cumsum(mem)])
    best = np.full((k + 1, m + 1), np.inf)
    arg = np.zeros((k + 1, m + 1), np.int64)
    best[0, 0] = 0.0
    for s in range(1, k + 1):
        for j in range(s, m + 1):
            i = np.arange(s - 1, j)  # segment [i, j) on rank s - 1
            cost = pw[j] - pw[i] + np.where(i > 0, out[np.maximum(i - 1, 0)], 0.0) / \
                bandwidth + (out[j - 1] / bandwidth if j < m else 0.0)
            peak = np.array([ws[a:j].max() for a in i])
            fits = pm[j] - pm[i] + peak <= caps[s - 1]
            cand = np.where(fits, np.maximum(best[s - 1, i], cost), np.inf)
            c = int(np.argmin(cand))
            best[s, j], arg[s, j] = cand[c], i[c]
    if not np.isfinite(best[k, m]):
        return None, float("inf")
    stage_of_item, j = np.zeros(m, np.int64), m
    for s in range(k, 0, -1):
        i = arg[s, j]
        stage_of_item[i:j] = s - 1
        j = i
    return stage_of_item[item], float(best[k, m])
