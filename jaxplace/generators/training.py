"""Training graphs: a forward graph plus its backward pass, with colocation classes.

The NeurIPS 2020 training workloads (resnet50_training, bert_l-3_training;
Tarnawski et al.) hold a forward graph and a backward graph whose
nodes share a `color_class` with the forward op they differentiate, so each backward
op runs on the device of its forward op (it needs that op's weights). This module
builds graphs of that shape from any forward graph, so policies and searches can be
trained and tested on colocation without the two real files:

- one backward node v' per forward node v, colored like v, with `work` a seeded
  `backward_work` factor (log-uniform) times v's (a backward op costs about twice its
  forward op) and v's parameters (gradients are as large as the weights);
- backward edges: the reverse of every forward edge, (v', u') for u -> v, carrying
  the gradient (sized like u's output);
- activation edges u -> v' for a seeded fraction `stash` of the forward edges u -> v:
  the backward op of v reads v's input activation (bert_l-3_training has them for
  three in four forward edges, the layer-level resnet50_training for none);
- class merges: with probability `merge`, a forward node whose one predecessor has it
  as its one successor joins that predecessor's class (fused chains, as the many-op
  classes of bert_l-3_training);
- orphans: with probability `orphan`, a backward op gets a class of its own instead
  of its forward op's (bert_l-3_training has 14 such backward-only units): it has no
  ordering edge, so any order may put it anywhere, usually far from its data.

Orders and contiguity then follow the forward graph (`jaxplace.units`), and costs
count every tensor, forward and backward.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph


def _fraction(field: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
        raise JaxplaceError(f"must be a number in [0, 1], got {v!r}", field=field)
    return float(v)


def training_graph(graph: CompGraph, seed: int = 0, *, stash: float = 0.75,
                   merge: float = 0.0, backward_work: tuple[float, float] = (1.5, 2.5),
                   orphan: float = 0.0) -> CompGraph:
    """The training graph (forward then backward nodes, 2n in all) of forward `graph`.

    Node v < n is the forward op v; node n + v is its backward op. Node attributes
    `color_class` and `is_backward` follow the NeurIPS 2020 format; other node
    attributes of `graph` are dropped (they describe forward ops only).
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JaxplaceError(f"must be a non-negative integer, got {seed!r}", field="seed")
    stash, merge = _fraction("stash", stash), _fraction("merge", merge)
    orphan = _fraction("orphan", orphan)
    lo, hi = (float(x) for x in backward_work)
    if not 0.0 < lo <= hi:
        raise JaxplaceError(f"must be a range 0 < lo <= hi, got {backward_work!r}",
                            field="backward_work")
    if graph.node_attrs.get("is_backward") is not None and np.any(
            graph.node_attrs["is_backward"]):
        raise JaxplaceError("already has backward nodes", field="graph")
    rng = np.random.default_rng(int(seed))
    n, e = graph.num_nodes, np.asarray(graph.edges, np.int64).reshape(-1, 2)
    factor = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    keep = rng.random(len(e)) < stash
    joins = rng.random(n) < merge

    cls = np.arange(n)
    indeg, outdeg = np.diff(graph.pred_ptr), np.diff(graph.succ_ptr)
    for v in graph.topo_order:
        if joins[v] and indeg[v] == 1:
            (u,) = graph.predecessors(v)
            if outdeg[u] == 1:
                cls[v] = cls[u]
    out = np.asarray(graph.size_out, np.float64)
    grad = np.zeros(n)  # the gradient v' sends to its predecessors' backward ops
    np.maximum.at(grad, e[:, 1], out[e[:, 0]])
    grad = np.where(indeg > 0, grad, out)
    edges = np.concatenate([e, e[:, ::-1] + n, np.stack([e[keep, 0], e[keep, 1] + n], 1)])
    names = None if graph.names is None else (
        *graph.names, *(f"{s}.grad" for s in graph.names))
    ops = None if graph.op_types is None else (
        *graph.op_types, *(f"{s}_grad" for s in graph.op_types))
    bcls = cls.copy()
    if orphan > 0:  # drawn last, so graphs without orphans stay as they were
        lone = np.flatnonzero(rng.random(n) < orphan)
        bcls[lone] = n + np.arange(len(lone))
    attrs = {"color_class": np.concatenate([cls, bcls]),
             "is_backward": np.repeat([False, True], n)}
    meta = {**graph.meta, "training": {"seed": int(seed), "stash": stash, "merge": merge,
                                       "backward_work": [lo, hi], "orphan": orphan}}
    return CompGraph(np.concatenate([graph.work, graph.work * factor]), edges,
                     np.concatenate([graph.size_param, graph.size_param]),
                     np.concatenate([out, grad]), names=names, op_types=ops,
                     node_attrs=attrs, meta=meta)


__all__ = ["training_graph"]
