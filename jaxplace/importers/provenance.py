"""Where a result's graph came from: the model file (path and sha256, so that `jaxplace
export` finds the same model) and, for a coarsened or fused import, the grouped node
of every original op. Every result format records these the same way."""

from __future__ import annotations

import os

import numpy as np

from jaxplace.importers.coarsen import expand_members

MODEL_FILE_SUFFIXES = (".onnx",)


def model_provenance(path: str | os.PathLike) -> dict:
    """{"path": absolute path, "sha256": hex digest} of a model file, recorded in a
    result so that `jaxplace export` finds the model and knows it is the same one."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return {"path": os.path.abspath(path), "sha256": digest.hexdigest()}


def source_model(graph, source_file, source) -> dict | None:
    """Provenance of the model file a result came from (`source_file`, else `source`
    when it names a model file on disk), with the symbolic dimensions the import
    used; for a model config's layer graph, the model and the workload it was costed
    for (so that an export can tell a training plan from an inference one); None
    when there is neither."""
    if graph.meta.get("format") == "hf-config" and "workload" in graph.meta:
        return {"format": "hf-config", "model": graph.meta.get("model"),
                "device": (graph.meta.get("device") or {}).get("name"),
                "workload": dict(graph.meta["workload"])}
    path = source_file
    if path is None and isinstance(source, str) and \
            source.lower().endswith(MODEL_FILE_SUFFIXES):
        path = source
    if path is None or not os.path.isfile(path):
        return None
    model = model_provenance(path)
    if graph.meta.get("dim_values"):
        model["dims"] = dict(graph.meta["dim_values"])
    return model


def original_groups(g) -> list | None:
    """[(original op name or index, grouped node)] per op of the graph a coarsened or
    fused graph came from (`meta["coarsen_members"]`, which fusion composes), else
    None."""
    if "coarsen_members" not in g.meta:
        return None
    group = expand_members(g, np.arange(g.num_nodes), "coarsen", "coarsened")
    names = g.meta.get("coarsen_original_names") or list(range(len(group)))
    return [(names[v], int(group[v])) for v in range(len(group))]


__all__ = ["MODEL_FILE_SUFFIXES", "model_provenance", "original_groups", "source_model"]
