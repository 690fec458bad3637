"""A framework-neutral stage plan of any result: stages in pipeline order, the ops of
each, the tensors crossing each cut with their sizes, and the device of each stage.

Tensors are named when the result's model file is at hand (ONNX: tensor names and
bytes, as in `onnx_stages`); for a graph file they are the graph's tensors by
producer, sized in the graph's own unit; otherwise the plan says that it has none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from jaxplace.errors import JaxplaceError
from jaxplace.export.onnx_stages import (
    cut_stages,
    find_model,
    pipeline_order,
    result_devices,
    result_op_blocks,
    tensor_bytes,
)
from jaxplace.formats import load_graph
from jaxplace.importers.onnx_fold import fold, load_model, require_onnx

FORMAT = "jaxplace-plan/1"


def neutral_plan(result: Mapping, result_path: str = "result", *,
                 model: str | None = None,
                 dim_values: Mapping[str, int] | None = None) -> dict:
    """The neutral plan of a result dict (see the module docstring)."""
    try:
        model_path = find_model(result, result_path, model)[0] \
            if "node_ids" not in result else None
    except JaxplaceError:
        model_path = None
    op_block = result_op_blocks(result, result_path, model_path)
    devices = result_devices(result)
    stats = {int(b["block"]): b for b in result.get("blocks", ())}
    blocks = sorted(set(op_block.values()))
    plan = {"format": FORMAT, "source": result.get("source"),
            "objective": result.get("objective", "throughput"),
            "k": result.get("k"), "num_stages": len(blocks)}
    dims = {**((result.get("source_model") or {}).get("dims") or {}), **(dim_values or {})}
    tensors = _model_tensors(result, result_path, model, dims, op_block)
    if tensors is None:
        tensors = _graph_tensors(result, op_block, result_path)
    order = tensors.pop("order", None) if tensors else None
    order = order or blocks
    stages = []
    for s, b in enumerate(order):
        entry = {"stage": s, "block": b, "device": devices.get(b, "accel"),
                 "ops": [n for n, x in op_block.items() if x == b]}
        if b in stats:
            entry.update({key: stats[b][key] for key in
                          ("work", "io_in", "io_out", "param", "total") if key in stats[b]})
        if tensors:
            entry["inputs"] = tensors["inputs"].get(b, [])
            entry["outputs"] = tensors["outputs"].get(b, [])
        stages.append(entry)
    plan["stages"] = stages
    if tensors:
        plan["tensor_unit"] = tensors["unit"]
    else:
        plan["tensors"] = ("not listed: the result's model or graph file is not at hand "
                           "(give --model)")
    return plan


def _model_tensors(result, result_path, model, dim_values, op_block):
    try:
        path, _ = find_model(result, result_path, model)
    except JaxplaceError:
        if model is not None or (result.get("source_model") or {}).get("path"):
            raise
        return None
    onnx = require_onnx()
    proto, _ = load_model(path)
    cuts = cut_stages(proto, op_block, result_path)
    folded = fold(proto, dict(dim_values or {}), 1, path)

    def nbytes(t):
        return tensor_bytes(onnx, folded, t)

    made_in = {t: c.block for c in cuts for t in c.outputs}
    ins = {c.block: [{"name": t, "bytes": nbytes(t), "from_block": made_in.get(t)}
                     for t in c.inputs] for c in cuts}
    outs = {c.block: [{"name": t, "bytes": nbytes(t),
                       "to_blocks": [d.block for d in cuts if t in d.inputs]}
                      for t in c.outputs] for c in cuts}
    return {"inputs": ins, "outputs": outs, "order": [c.block for c in cuts],
            "unit": "bytes"}


def _graph_tensors(result, op_block, result_path="result"):
    src = result.get("source")
    if not isinstance(src, str) or not os.path.isfile(src) or \
            src.lower().endswith(".onnx") or "original_ops" in result:
        return None
    try:
        g = load_graph(src)
    except JaxplaceError:
        return None
    ids = [str(v) for v in g.node_ids]
    if set(ids) != set(op_block):
        return None
    block = [op_block[v] for v in ids]
    ins: dict[int, list] = {}
    outs: dict[int, list] = {}
    for t in range(g.num_tensors):
        p = int(g.tensor_producer[t])
        to = sorted({block[int(c)] for c in g.consumers(t)} - {block[p]})
        if not to:
            continue
        size = float(g.tensor_size[t])
        outs.setdefault(block[p], []).append({"tensor": t, "producer": ids[p], "size": size,
                                              "to_blocks": to})
        for b in to:
            ins.setdefault(b, []).append({"tensor": t, "producer": ids[p], "size": size,
                                          "from_block": block[p]})
    unit = g.meta.get("size_out_unit") or "the graph's size unit"
    out = {"inputs": ins, "outputs": outs, "unit": unit}
    if "transfers" not in result:  # pipeline stages (not a schedule's devices): in order
        deps = {b: {e["from_block"] for e in ins.get(b, ())} for b in set(block)}
        out["order"] = pipeline_order(deps, result_path)
    return out
