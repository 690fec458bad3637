"""Conservative operator-fusion coarsening: fold chains of cheap ops into their producer.

A cheap op (view, layout or elementwise: `roofline.is_cheap`) whose only predecessor is
`u` joins `u`'s group, in topological order, so an elementwise chain such as
`dot_general -> add -> tanh -> mul` becomes one node. Contracting an edge into a node
whose only incoming edge it is cannot create a cycle, so the coarse graph is a DAG
and every partition of it is a partition of the original graph (the reverse is not
true: coarsening can only lose partitions that cut inside a chain, which a fusing
compiler would not cut either). This is the conservative end of operator-fusion
coarsening (e.g. Tarnawski et al., "Efficient algorithms for device placement of DNN
graph operators", NeurIPS 2020, contract such chains before placement).

Costs add up: work, size_param and numeric node attributes are summed over the
group (no fusion discount is claimed), tensors produced and consumed inside a group
disappear, the others keep their sizes. The mapping back is kept in `meta`:
`coarsen_members[i]` lists the original node indices of coarse node `i` (first one
= the group's head, whose name, id and op type the coarse node keeps), and
`expand_assignment` maps a coarse partition back to the original nodes (an input that
was itself grouped, a runtime-fused ONNX import, has its `coarsen_members` composed:
they reach the ONNX ops).
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.roofline import is_cheap


def coarsen(graph: CompGraph, *, is_fusible=None) -> CompGraph:
    """Fuse cheap single-input ops into their producer; see the module docstring.

    Args:
        graph: a graph with `op_types` (imported graphs have them).
        is_fusible: optional predicate on op types (default `roofline.is_cheap`).
    """
    if graph.op_types is None:
        raise JaxplaceError("coarsening needs op types on the nodes", field="op_type")
    fusible = is_fusible or is_cheap
    n = graph.num_nodes
    group = np.arange(n)
    for v in graph.topo_order:
        preds = graph.predecessors(int(v))
        if len(preds) == 1 and fusible(graph.op_types[v]):
            group[v] = group[preds[0]]
    pos = np.empty(n, dtype=np.int64)
    pos[graph.topo_order] = np.arange(n)
    heads = np.unique(group)
    heads = heads[np.argsort(pos[heads], kind="stable")]
    new_of_head = {int(h): i for i, h in enumerate(heads)}
    new = np.asarray([new_of_head[int(g)] for g in group], dtype=np.int64)  # (n,)
    members: list[list[int]] = [[] for _ in heads]
    for v in graph.topo_order:
        members[new[v]].append(int(v))

    k = len(heads)
    tensors = []
    for t in range(graph.num_tensors):
        p = int(new[graph.tensor_producer[t]])
        cs = sorted({int(new[c]) for c in graph.consumers(t)} - {p})
        if cs:
            tensors.append((p, float(graph.tensor_size[t]), cs))
    work = np.bincount(new, weights=graph.work, minlength=k)
    param = np.bincount(new, weights=graph.size_param, minlength=k)
    out = np.bincount(new, weights=graph.size_out, minlength=k)
    attrs = {}
    for key, arr in graph.node_attrs.items():
        if np.issubdtype(arr.dtype, np.number) and arr.dtype != bool:
            attrs[key] = np.bincount(new, weights=arr.astype(np.float64), minlength=k)
    attrs["fused_count"] = np.asarray([len(m) for m in members], dtype=np.int64)
    names = None
    if graph.names is not None:
        names = [graph.names[m[0]] + (f"(+{len(m) - 1})" if len(m) > 1 else "")
                 for m in members]
    meta = dict(graph.meta)
    if "coarsen_members" in graph.meta:  # a runtime-fused import: compose, so results
        inner = graph.meta["coarsen_members"]  # still name every ONNX op
        meta["coarsen_members"] = [[w for v in m for w in inner[v]] for m in members]
    else:
        meta["coarsen_members"] = members
        meta["coarsen_original_nodes"] = n
        if graph.names is not None:
            meta["coarsen_original_names"] = list(graph.names)
    return CompGraph(work, (), param, out, tensors=tensors, names=names,
                     op_types=[graph.op_types[m[0]] for m in members],
                     node_ids=[graph.node_ids[m[0]] for m in members], node_attrs=attrs,
                     meta=meta)


def expand_assignment(coarse: CompGraph, assignment) -> np.ndarray:
    """Map a block index per coarse node to a block index per original node."""
    return expand_members(coarse, assignment, "coarsen", "coarsened")


def expand_members(graph: CompGraph, assignment, key: str, what: str) -> np.ndarray:
    """A value per original node from one per grouped node, through
    `meta[key + "_members"]` and `meta[key + "_original_nodes"]`."""
    members = graph.meta.get(f"{key}_members")
    if members is None:
        raise JaxplaceError(f"graph was not {what} (no meta['{key}_members'])")
    a = np.asarray(assignment)
    if a.shape != (graph.num_nodes,):
        raise JaxplaceError(f"has shape {a.shape}, expected ({graph.num_nodes},)",
                            field="assignment")
    out = np.empty(int(graph.meta[f"{key}_original_nodes"]), dtype=a.dtype)
    for i, m in enumerate(members):
        out[m] = a[i]
    return out
