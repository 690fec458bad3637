"""networkx node-link JSON: nodes with `work`, `size_param`, `size_out`; edges or links.

Graph-level attributes `k`, `bandwidth`, `memory` and `capacity`, when present, are
used by `load_problem`.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph


def is_nodelink(data: Any) -> bool:
    return isinstance(data, dict) and "nodes" in data and ("edges" in data or "links" in data)


def read_nodelink(data: dict, source: str) -> CompGraph:
    key = "edges" if "edges" in data else "links"
    nodes, edges = data["nodes"], data[key]
    if not isinstance(nodes, list) or not isinstance(edges, list):
        raise JaxplaceError("must be lists", source=source, field=f"nodes/{key}")
    for i, d in enumerate(nodes):
        if not isinstance(d, dict) or "id" not in d:
            raise JaxplaceError("missing field 'id'", source=source, field=f"nodes[{i}]")
        if "work" not in d:
            raise JaxplaceError("missing field 'work'", source=source,
                                field=f"nodes[{i}] (id {d['id']!r})")
    ids = {d["id"] for d in nodes}
    if len(ids) != len(nodes):
        raise JaxplaceError("duplicate node ids", source=source, field="nodes")
    for i, e in enumerate(edges):
        for end in ("source", "target"):
            if not isinstance(e, dict) or end not in e:
                raise JaxplaceError(f"missing field '{end}'", source=source,
                                    field=f"{key}[{i}]")
            if e[end] not in ids:
                raise JaxplaceError(f"unknown node {e[end]!r}", source=source,
                                    field=f"{key}[{i}].{end}")
    G = nx.DiGraph() if data.get("directed", True) else nx.Graph()
    G.graph.update(data.get("graph", {}) or {})
    for d in nodes:
        G.add_node(d["id"], **{k: v for k, v in d.items() if k != "id"})
    G.add_edges_from((e["source"], e["target"]) for e in edges)
    return CompGraph.from_networkx(G, source=source)


def nodelink_data(graph: CompGraph, **graph_attrs) -> dict:
    """The graph as node-link JSON data (graph attributes extended by `graph_attrs`)."""
    G = graph.to_networkx()
    G.graph.update(graph_attrs)
    return nx.node_link_data(G, edges="edges")
