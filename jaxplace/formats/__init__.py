"""Reading graphs and problems, writing results.

`load_graph` dispatches on content: networkx node-link JSON, the NeurIPS 2020 JSON of
msr-fiddle/dnn-partitioning, or a model file (`.onnx`) through `jaxplace.importers`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.formats.neurips import is_neurips, read_neurips
from jaxplace.formats.nodelink import is_nodelink, nodelink_data, read_nodelink
from jaxplace.formats.results import load_assignment, result_dict, save_result
from jaxplace.graph import CompGraph
from jaxplace.importers import MODEL_SUFFIXES, load_model_file
from jaxplace.jsonio import read_json, write_json
from jaxplace.llm.config import is_hf_config
from jaxplace.llm.graph import graph_from_config
from jaxplace.problem import Problem


def load_graph(path: str | os.PathLike, **import_options) -> CompGraph:
    """Read a graph file; `import_options` (device, coarsen) apply to model files."""
    source = str(path)
    if Path(source).suffix.lower() in MODEL_SUFFIXES:
        if not Path(source).exists():
            raise JaxplaceError("no such file", source=source)
        return load_model_file(source, **import_options)
    data = read_json(source)
    if is_neurips(data):
        return read_neurips(data, source)
    if is_nodelink(data):
        return read_nodelink(data, source)
    if is_hf_config(data):  # a Hugging Face-style decoder config.json
        return graph_from_config(data, source, **import_options)
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
        problem = Problem(graph, k, **fields)
    except JaxplaceError as exc:
        raise exc.with_source(source) from None
    check_range(problem, source)
    return problem


_FLOAT32_MAX = float(np.finfo(np.float32).max)
# The fields of each file format that hold a CompGraph array, for error messages.
_FIELD_NAMES = {"neurips2020": {"work": "fpgaLatency", "size_param": "size",
                                "size_out": "cost", "cpu_latency": "cpuLatency"}}


def check_range(problem: Problem, source: str = "graph") -> None:
    """Refuse values whose sums overflow: block costs add up work, tensor sizes and
    parameters (over the bandwidth), and the decoder does it in float32. A JaxplaceError
    names the file and the field, e.g. for a node whose work is 1e308."""
    g, B = problem.graph, problem.bandwidth
    names = _FIELD_NAMES.get(g.meta.get("format"), {})
    terms = [("work", g.work, 1.0), ("size_out", g.tensor_size, B / 2),  # in + out
             ("size_param", g.size_param, B)]
    if "cpu_latency" in g.node_attrs:
        terms.append(("cpu_latency", np.asarray(g.node_attrs["cpu_latency"], float), 1.0))
    totals = []
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for name, values, scale in terms:
            total = float(np.sum(values / scale)) if len(values) else 0.0
            totals.append(total)
            if not total <= _FLOAT32_MAX:
                big = float(np.max(values))
                raise JaxplaceError(
                    f"values too large: the total over the graph is {total:g} (largest "
                    f"value {big:g}), beyond the float32 range ({_FLOAT32_MAX:.3g}) in "
                    "which block costs are computed", source=source,
                    field=names.get(name, name))
        grand = float(np.sum(totals[:3]))
    if not grand <= _FLOAT32_MAX:
        name = terms[int(np.argmax(totals[:3]))][0]
        raise JaxplaceError(
            f"values too large: work, transfers and parameters add up to {grand:g}, beyond "
            f"the float32 range ({_FLOAT32_MAX:.3g}) in which block costs are computed",
            source=source, field=names.get(name, name))


def load_problem(path: str | os.PathLike, k: int | None = None, **overrides) -> Problem:
    """Read a graph file into a Problem; k, bandwidth, memory, capacity and cpus come
    from the file when it has them (node-link graph attributes, NeurIPS `maxFPGAs`,
    `maxSizePerFPGA` and `maxCPUs`); arguments override."""
    import_options = {o: overrides.pop(o) for o in ("device", "coarsen") if o in overrides}
    graph = load_graph(path, **import_options)
    return problem_from_graph(graph, k, source=str(path), **overrides)


__all__ = ["load_graph", "load_problem", "problem_from_graph", "save_result",
           "load_assignment", "result_dict", "nodelink_data", "read_json", "write_json"]
