"""Import real models: JAX/Flax programs (`from_jax`) and ONNX files (`from_onnx`, costed
as an optimizing runtime launches them: `runtime_fusion`), costed with a roofline
model on a named device profile (`get_device`); `agreement` compares an ONNX import
with `jaxplace.torch`'s graph of the same module, op kind by op kind.

    import jaxplace as jp
    graph = jp.importers.from_jax(model.apply, x, params=params, device="h100")
    problem = jp.Problem(graph, k=4)          # bandwidth 1: sizes are link times

Units of imported graphs: `work` and tensor sizes in microseconds, `size_param` in
bytes (see `jax_trace` for the conventions). What the importers share: `builder` (nodes,
tensors and parameters assembled into a `CompGraph` with roofline costs), `onnx_fold`
(an ONNX model as a runtime sees it: constants folded, shapes static), `provenance`
(where a result's graph came from: model file and sha256, grouped ops).
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import agreement, runtime_fusion
from jaxplace.importers.coarsen import coarsen, expand_assignment
from jaxplace.importers.devices import DeviceProfile, canonical_dtype, device_names, get_device
from jaxplace.importers.fusion import DEFAULT_RULES, FusionRule, fuse
from jaxplace.importers.jax_trace import from_jax
from jaxplace.importers.onnx_import import from_onnx
from jaxplace.importers.roofline import classify, is_cheap
from jaxplace.importers.runtime_fusion import summary_line as fusion_summary_line

MODEL_SUFFIXES = (".onnx",)

__all__ = [
    "DEFAULT_RULES",
    "MODEL_SUFFIXES",
    "DeviceProfile",
    "FusionRule",
    "agreement",
    "canonical_dtype",
    "classify",
    "coarsen",
    "device_names",
    "expand_assignment",
    "from_jax",
    "from_onnx",
    "fuse",
    "fusion_summary_line",
    "get_device",
    "is_cheap",
    "runtime_fusion",
    "load_model_file",
    "summarize",
]


def load_model_file(path, device: str | DeviceProfile = "h100", coarsen: bool | str = False,
                    **kwargs) -> CompGraph:
    """Import a model file by suffix (.onnx) with the roofline cost model of `device`.
    Extra keyword arguments go to the importer (e.g. `dim_values` for ONNX).
    `coarsen`: True for `coarsen.coarsen`, "fusion" for `fusion.fuse`."""
    path = os.fspath(path)
    if path.lower().endswith(".onnx"):
        return from_onnx(path, device=device, coarsen=coarsen, **kwargs)
    raise JaxplaceError(f"not a model file this version imports (known: "
                        f"{', '.join(MODEL_SUFFIXES)})", source=path)


def _fmt_bytes(b: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024
    return f"{b:.2f} TiB"


def summarize(graph: CompGraph, top: int = 10) -> str:
    """A text summary: totals, an op-type histogram (count and share of work), and the
    `top` heaviest ops by work. Works on any graph; FLOP columns appear when the graph
    has a `flops` node attribute (imported graphs)."""
    unit = graph.meta.get("time_unit", "")
    u = f" {unit}" if unit else ""
    flops = graph.node_attrs.get("flops")
    total = float(graph.work.sum())
    lines = [f"{graph.num_nodes} ops, {graph.num_edges} edges, {graph.num_tensors} tensors; "
             f"work {total:.6g}{u}, params {_fmt_bytes(float(graph.size_param.sum()))}"
             + (f", {float(flops.sum()):.4g} FLOPs" if flops is not None else "")]
    if "onnx_nodes" in graph.meta:
        lines.append(f"ONNX: {graph.meta['onnx_nodes']} nodes, "
                     f"{graph.meta.get('folded_nodes', 0)} constant ones folded into "
                     f"parameters (opset {graph.meta.get('opset', '?')})"
                     + (f"; symbolic dims set to 1: {', '.join(graph.meta['defaulted_dims'])}"
                        if graph.meta.get("defaulted_dims") else ""))
        fused = fusion_summary_line(graph.meta)
        if fused:
            lines.append(fused)
    dev = graph.meta.get("device")
    if isinstance(dev, dict) and "name" in dev:
        lines.append(f"device profile: {dev['name']} ({dev.get('description', '')})")
    ops = graph.op_types or tuple("?" for _ in range(graph.num_nodes))
    count = Counter(ops)
    work_by: dict[str, float] = {}
    for op, w in zip(ops, graph.work, strict=True):
        work_by[op] = work_by.get(op, 0.0) + float(w)
    width = max(len(o) for o in count) if count else 4
    lines.append("")
    lines.append(f"{'op type':<{width}}  {'count':>6}  {'work' + u:>14}  {'share':>6}")
    for op in sorted(count, key=lambda o: (-work_by[o], o)):
        share = work_by[op] / total if total > 0 else 0.0
        lines.append(f"{op:<{width}}  {count[op]:>6}  {work_by[op]:>14.6g}  {share:>6.1%}")
    heavy = np.argsort(-graph.work, kind="stable")[:top]
    lines.append("")
    lines.append(f"heaviest {len(heavy)} ops:")
    for v in heavy:
        v = int(v)
        name = graph.names[v] if graph.names is not None else str(graph.node_ids[v])
        extra = f"  {float(flops[v]):.4g} FLOPs" if flops is not None else ""
        lines.append(f"  {name}  [{ops[v]}]  work {graph.work[v]:.6g}{u}  "
                     f"params {_fmt_bytes(float(graph.size_param[v]))}{extra}")
    return "\n".join(lines)
