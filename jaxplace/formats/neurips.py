"""The JSON format of msr-fiddle/dnn-partitioning (Tarnawski et al., NeurIPS 2020).

Mapping: `fpgaLatency` -> work, `size` ->
size_param, the producer's edge `cost` -> size_out (bandwidth 1), `maxFPGAs` -> k,
`maxSizePerFPGA` -> hard capacity. `cpuLatency`, `supportedOnFpga`, `colorClass`
(-1 when absent), `isBackwardNode` are kept in `node_attrs` as `cpu_latency`,
`supported_on_accel`, `color_class`, `is_backward`; `maxCPUs` and friends in `meta`.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.objectives.throughput.cost import evaluate_partition

_GRAPH_FIELDS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs")


def is_neurips(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    if any(f in data for f in _GRAPH_FIELDS):
        return True
    nodes = data.get("nodes")
    return bool(nodes) and isinstance(nodes[0], dict) and "fpgaLatency" in nodes[0]


def _number(d, field, source, where, default=None):
    if field not in d:
        if default is None:
            raise JaxplaceError(f"missing field '{field}'", source=source, field=where)
        return default
    x = d[field]
    if isinstance(x, bool):
        return float(x)
    if not isinstance(x, int | float):
        raise JaxplaceError(f"'{field}' is {json.dumps(x, default=repr)}, expected a number",
                            source=source, field=where)
    return float(x)


def read_neurips(data: dict, source: str) -> CompGraph:
    nodes, edges = data.get("nodes"), data.get("edges")
    if not isinstance(nodes, list):
        raise JaxplaceError("missing list 'nodes'", source=source, field="nodes")
    if not isinstance(edges, list):
        raise JaxplaceError("missing list 'edges'", source=source, field="edges")
    n = len(nodes)
    ids, index = [], {}
    work, param = np.zeros(n), np.zeros(n)
    # flags and classes as read: CompGraph refuses NaN, fractions and non-flags
    cpu, supported = np.zeros(n), np.ones(n)
    color, backward = np.full(n, -1.0), np.zeros(n)
    names = []
    for i, d in enumerate(nodes):
        where = f"nodes[{i}]"
        if not isinstance(d, dict) or "id" not in d:
            raise JaxplaceError("missing field 'id'", source=source, field=where)
        if d["id"] in index:
            raise JaxplaceError(f"duplicate node id {d['id']!r}", source=source, field=where)
        index[d["id"]] = i
        ids.append(d["id"])
        where = f"nodes[{i}] (id {d['id']!r})"
        work[i] = _number(d, "fpgaLatency", source, where)
        param[i] = _number(d, "size", source, where, 0.0)
        cpu[i] = _number(d, "cpuLatency", source, where, 0.0)
        supported[i] = _number(d, "supportedOnFpga", source, where, 1.0)
        backward[i] = _number(d, "isBackwardNode", source, where, 0.0)
        if "colorClass" in d and d["colorClass"] is not None:
            color[i] = _number(d, "colorClass", source, where)
        names.append(str(d.get("name", d["id"])))
    out = np.zeros(n)
    pairs = []
    for j, e in enumerate(edges):
        where = f"edges[{j}]"
        for end in ("sourceId", "destId"):
            if not isinstance(e, dict) or end not in e:
                raise JaxplaceError(f"missing field '{end}'", source=source, field=where)
            if e[end] not in index:
                raise JaxplaceError(f"'{end}' {e[end]!r} is not a node id", source=source,
                                    field=where)
        u, v = index[e["sourceId"]], index[e["destId"]]
        c = _number(e, "cost", source, where, 0.0)
        if c < 0 or not np.isfinite(c):
            raise JaxplaceError(f"negative or non-finite cost {c}", source=source,
                                field=where)
        # The format promises equal costs on all out-edges of a node; take the max if not.
        out[u] = max(out[u], c)
        pairs.append((u, v))
    meta = {f: data[f] for f in _GRAPH_FIELDS if f in data}
    meta["format"] = "neurips2020"
    attrs = {"cpu_latency": cpu, "supported_on_accel": supported, "color_class": color,
             "is_backward": backward}
    try:
        return CompGraph(work, pairs, param, out, names=names, node_ids=ids,
                         node_attrs=attrs, meta=meta)
    except JaxplaceError as exc:
        raise exc.with_source(source) from None


def neurips_result(problem, assignment) -> dict:
    """A partition in the split format of msr-fiddle/dnn-partitioning:
    {"maxLoad": x, "fpgas": [{"load", "nodes"}...], "cpus": [{"load", "nodes"}...]}
    with one entry per device (k accelerators, problem.cpus CPUs), node ids as in the
    input file."""
    cost = evaluate_partition(problem, assignment)
    ids = problem.graph.node_ids
    acc = [b for b in cost.block_order if b < problem.k]
    cpu = [b for b in cost.block_order if b >= problem.k]

    def entry(b):
        return {"load": float(cost.total[b]),
                "nodes": [ids[v] for v in np.flatnonzero(cost.assignment == b)]}

    return {"maxLoad": cost.bottleneck, "fpgas": [entry(b) for b in acc],
            "cpus": [entry(b) for b in cpu]}


def is_neurips_result(data: Any) -> bool:
    return isinstance(data, dict) and "fpgas" in data


def read_neurips_result(data: dict, problem, source: str) -> np.ndarray:
    """The block of every node from a dnn-partitioning split. Nodes the split omits
    follow their color class (their repository infers backward nodes that way)."""
    g = problem.graph
    index = {v: i for i, v in enumerate(g.node_ids)}
    a = np.full(g.num_nodes, -1, dtype=np.int64)
    for kind, base, limit in (("fpgas", 0, problem.k), ("cpus", problem.k, problem.cpus)):
        devices = data.get(kind, [])
        if not isinstance(devices, list):
            raise JaxplaceError("must be a list", source=source, field=kind)
        if len(devices) > limit:
            raise JaxplaceError(f"has {len(devices)} devices, the problem allows {limit}",
                                source=source, field=kind)
        for d, dev in enumerate(devices):
            nodes = dev.get("nodes") if isinstance(dev, dict) else None
            if not isinstance(nodes, list):
                raise JaxplaceError("missing list 'nodes'", source=source,
                                    field=f"{kind}[{d}]")
            for v in nodes:
                if v not in index:
                    raise JaxplaceError(f"unknown node id {v!r}", source=source,
                                        field=f"{kind}[{d}].nodes")
                a[index[v]] = base + d
    color = g.node_attrs.get("color_class")
    if color is not None:
        placed = {int(c): a[i] for i, c in enumerate(color) if c >= 0 and a[i] >= 0}
        for i in np.flatnonzero(a < 0):
            a[i] = placed.get(int(color[i]), -1)
    missing = np.flatnonzero(a < 0)
    if len(missing):
        raise JaxplaceError(f"node {g.label(int(missing[0]))} is on no device",
                            source=source, field="fpgas/cpus")
    return a
