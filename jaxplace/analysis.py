"""Graph statistics that are not costs of a partition (used by `jaxplace info`)."""

from __future__ import annotations

import numpy as np

from jaxplace.graph import CompGraph


def critical_path(graph: CompGraph) -> float:
    """Largest total work along a directed path: a latency floor of one sample through
    the whole pipeline, not a bound on the bottleneck (throughput). 0 for no nodes."""
    if graph.num_nodes == 0:
        return 0.0
    best = np.array(graph.work, dtype=np.float64)  # (n,) heaviest path ending at v
    for v in graph.topo_order:
        preds = graph.predecessors(v)
        if len(preds):
            best[v] = graph.work[v] + best[preds].max()
    return float(best.max())
