"""Reading graphs and problems, writing results.

`load_graph` dispatches on content: networkx node-link JSON, the NeurIPS 2020 JSON of
msr-fiddle/dnn-partitioning, or a model file (`.onnx`) through `jaxplace.importers`.
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxplace.errors import JaxplaceError
from jaxplace.formats._json import read_json, write_json
from jaxplace.formats.neurips import is_neurips, read_neurips
from jaxplace.formats.nodelink import is_nodelink, nodelink_data, read_nodelink
from jaxplace.formats.results import load_assignment, result_dict, save_result
from jaxplace.graph import CompGraph
from jaxplace.problem import Problem

MODEL_SUFFIXES = (".onnx",)


def load_graph(path: str | os.PathLike, **import_options) -> CompGraph:
    """Read a graph file; `import_options` (device, coarsen) apply to model files."""
    source = str(path)
    if Path(source).suffix.lower() in MODEL_SUFFIXES:
        if not Path(source).exists():
            raise JaxplaceError("no such file", source=source)
        from jaxplace.importers import load_model_file

        return load_model_file(source, **import_options)
    data = read_json(source)
    if is_neurips(data):
        return read_neurips(data, source)
    if is_nodelink(data):
        return read_nodelink(data, source)
    raise JaxplaceError("unrecognized format: expected networkx node-link JSON (nodes, "
                        "edges) or NeurIPS 2020 JSON (maxFPGAs, nodes, edges)", source=source)


def problem_from_graph(graph: CompGraph, k: int | None = None, *, source: str = "graph",
                       **overrides) -> Problem:
    """A Problem with k and cost parameters from the graph's metadata unless given."""
    meta = graph.meta
    if k is None:
        k = meta.get("k", meta.get("maxFPGAs"))
    if k is None:
        raise JaxplaceError("the file gives no number of blocks; pass k (-k K)",
                            source=source, field="k")
    fields = {"bandwidth": meta.get("bandwidth", 1.0), "memory": meta.get("memory"),
              "capacity": meta.get("capacity", meta.get("maxSizePerFPGA")),
              "cpus": meta.get("cpus", meta.get("maxCPUs", 0))}
    fields.update({key: v for key, v in overrides.items() if v is not None})
    try:
        return Problem(graph, k, **fields)
    except JaxplaceError as exc:
        raise exc.with_source(source) from None


def load_problem(path: str | os.PathLike, k: int | None = None, **overrides) -> Problem:
    """Read a graph file into a Problem; k, bandwidth, memory, capacity and cpus come
    from the file when it has them (node-link graph attributes, NeurIPS `maxFPGAs`,
    `maxSizePerFPGA` and `maxCPUs`); arguments override."""
    import_options = {o: overrides.pop(o) for o in ("device", "coarsen") if o in overrides}
    graph = load_graph(path, **import_options)
    return problem_from_graph(graph, k, source=str(path), **overrides)


__all__ = ["load_graph", "load_problem", "problem_from_graph", "save_result",
           "load_assignment", "result_dict", "nodelink_data", "read_json", "write_json"]
