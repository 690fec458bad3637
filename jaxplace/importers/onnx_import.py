"""Import an ONNX model as a CompGraph (needs the optional `onnx` package).

Shapes come from `onnx.shape_inference.infer_shapes`; symbolic dimensions (a batch
dimension "N", say) take their value from `dim_values` or else `default_dim` (the
names that were defaulted are listed in `meta["defaulted_dims"]`). Conventions, the
same as `from_jax`:

- one node per ONNX node; a node with several outputs (Split, TopK, LSTM, ...)
  produces several tensors of one producer (hyperedges);
- graph inputs are not nodes (their transfer into the first stage is not charged);
- initializers and the outputs of `Constant` nodes are parameters, not nodes; each
  is charged once, in bytes, to its first consumer in graph order (`size_param`). A
  Reshape/Transpose/Cast/Squeeze/Unsqueeze/Identity/Flatten applied to a parameter
  alone is folded into the parameter;
- Loop/If/Scan are one node each, costed from their outputs like an unknown op
  (their subgraphs are not inspected).

Units: `work` in microseconds, tensor sizes in microseconds of link transfer (use
`bandwidth=1`), `size_param` in bytes; raw `flops`, `bytes_moved`, `out_bytes`,
`param_bytes` in `node_attrs`.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers._builder import GraphBuilder
from jaxplace.importers.devices import DeviceProfile, get_device

_PARAM_FOLD = frozenset({"Reshape", "Transpose", "Cast", "Squeeze", "Unsqueeze",
                         "Identity", "Flatten"})


def _require_onnx():
    try:
        import onnx
    except ImportError as exc:
        raise JaxplaceError("reading ONNX models needs the onnx package: "
                            "pip install 'jaxplace[onnx]' (or pip install onnx)") from exc
    return onnx


def _itemsize(onnx, elem_type: int) -> int:
    try:
        return int(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).itemsize)
    except Exception:  # bfloat16 / float8 / int4 without ml_dtypes: by name
        name = onnx.TensorProto.DataType.Name(elem_type).lower()
        if "float8" in name or "int4" in name:
            return 1
        if "16" in name:
            return 2
        return 4


def _dtype_name(onnx, elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type).lower()
    except ValueError:
        return "float"


def _attr(node, name: str, default: Any = None) -> Any:
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def from_onnx(model, device: str | DeviceProfile = "h100", *, coarsen: bool | str = False,
              dim_values: dict[str, int] | None = None, default_dim: int = 1) -> CompGraph:
    """Build the computation graph of an ONNX model.

    Args:
        model: a path to a .onnx file or an `onnx.ModelProto`.
        device: a profile name (see `device_names()`) or a DeviceProfile.
        coarsen: fuse chains of cheap elementwise ops into their producer; "fusion":
            MOIRAI's fusion-rule coarsening (`jaxplace.importers.fusion`).
        dim_values: values of symbolic dimensions, e.g. {"batch": 8}.
        default_dim: value of any other symbolic or unknown dimension.
    """
    onnx = _require_onnx()
    dev = get_device(device)
    source = None
    if isinstance(model, (str, os.PathLike)):
        source = str(model)
        if not os.path.exists(source):
            raise JaxplaceError("no such file", source=source)
        try:
            model = onnx.load(source, load_external_data=False)
        except Exception as exc:
            raise JaxplaceError(f"not a readable ONNX model: {exc}", source=source) from exc
    if not isinstance(model, onnx.ModelProto):
        raise JaxplaceError(f"expected a path or onnx.ModelProto, got {type(model).__name__}")
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception as exc:
        raise JaxplaceError(f"ONNX shape inference failed: {exc}", source=source) from exc
    try:
        return _convert(onnx, model, dev, coarsen, dict(dim_values or {}), int(default_dim),
                        source)
    except JaxplaceError as exc:
        raise (exc.with_source(source) if source else exc) from None


def _convert(onnx, model, dev, coarsen, dim_values, default_dim, source) -> CompGraph:
    g = model.graph
    defaulted: set[str] = set()

    def dims_of(tensor_type) -> list[int]:
        out = []
        for d in tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                out.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param in dim_values:
                out.append(int(dim_values[d.dim_param]))
            else:
                defaulted.add(d.dim_param or "?")
                out.append(default_dim)
        return out

    info: dict[str, tuple[list[int], int]] = {}  # name -> (shape, elem_type)
    for vi in [*g.input, *g.output, *g.value_info]:
        tt = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and tt.HasField("shape"):
            info[vi.name] = (dims_of(tt), tt.elem_type)
        elif vi.type.HasField("tensor_type"):
            info.setdefault(vi.name, ([], tt.elem_type))
    for init in g.initializer:
        info[init.name] = ([int(d) for d in init.dims], init.data_type)

    def nbytes(name: str) -> float:
        if name not in info:
            return 0.0
        shape, et = info[name]
        return float(rl.numel(shape) * _itemsize(onnx, et))

    b = GraphBuilder(dev)
    env: dict[str, tuple] = {}
    for init in g.initializer:
        env[init.name] = ("p", b.add_param(init.name, nbytes(init.name)))
    for inp in g.input:
        env.setdefault(inp.name, ("x",))

    unknown: set[str] = set()
    for i, node in enumerate(g.node):
        op = node.op_type
        if op == "Constant":
            t = _attr(node, "value")
            if t is not None and hasattr(t, "dims"):
                info[node.output[0]] = ([int(d) for d in t.dims], t.data_type)
            size = nbytes(node.output[0])
            env[node.output[0]] = ("p", b.add_param(node.name or f"Constant_{i}", size)) \
                if size > 8 else ("c",)
            continue
        ins = [s for s in node.input if s]
        src = [env.get(s, ("c",)) for s in ins]
        if (op in _PARAM_FOLD and src and src[0][0] == "p"
                and all(s[0] in "pc" for s in src[1:]) and len(node.output) == 1):
            env[node.output[0]] = src[0]
            continue
        flops, moved, t = _node_cost(onnx, node, ins, info, nbytes, dev, unknown)
        name = node.name or f"{op}_{i}"
        _, tids = b.add_node(
            name, op, flops, moved, t,
            in_tensors=sorted({s[1] for s in src if s[0] == "t"}),
            in_params=[s[1] for s in src if s[0] == "p"],
            out_bytes=[nbytes(o) if o else 0.0 for o in node.output])
        for o, tid in zip(node.output, tids, strict=True):
            if o:
                env[o] = ("t", tid)
    meta = {"source": "onnx", "name": g.name or (os.path.basename(source) if source else
                                                  "onnx"),
            "defaulted_dims": sorted(defaulted), "unknown_ops": sorted(unknown)}
    graph = b.build(meta)
    if coarsen == "fusion":
        from jaxplace.importers.fusion import fuse

        graph = fuse(graph)
    elif coarsen:
        from jaxplace.importers.coarsen import coarsen as _coarsen

        graph = _coarsen(graph)
    return graph


def _node_cost(onnx, node, ins, info, nbytes, dev, unknown) -> tuple[float, float, float]:
    op = node.op_type
    cat = rl.classify(op)
    if cat == "view":
        return 0.0, 0.0, 0.0

    def shape(name):
        return info.get(name, ([], 1))[0]

    outs = [o for o in node.output if o]
    in_elems = sum(rl.numel(shape(s)) for s in ins)
    out_elems = sum(rl.numel(shape(s)) for s in outs)
    moved = sum(nbytes(s) for s in ins) + sum(nbytes(s) for s in outs)
    et = info.get(outs[0], ([], 1))[1] if outs else 1
    matrix = False
    if op in ("MatMul", "MatMulInteger"):
        flops = rl.matmul_flops(shape(ins[0]), shape(ins[1]))
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "QLinearMatMul":
        flops = rl.matmul_flops(shape(ins[0]), shape(ins[3]))
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "Gemm":
        a, bsh = shape(ins[0]), shape(ins[1])
        m, k = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
        n = bsh[0] if _attr(node, "transB", 0) else bsh[1]
        flops = 2.0 * m * n * k + (m * n if len(ins) > 2 else 0)
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op in ("Conv", "ConvInteger", "QLinearConv"):
        w = shape(ins[3] if op == "QLinearConv" else ins[1])
        out = shape(outs[0])
        flops = rl.conv_flops(out, w[1], w[2:]) + (rl.numel(out) if op == "Conv"
                                                   and len(ins) > 2 else 0)
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "ConvTranspose":
        w = shape(ins[1])
        flops = 2.0 * rl.numel(shape(ins[0])) * w[1] * rl.numel(w[2:])
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "Einsum":
        flops = _einsum_flops(_attr(node, "equation", b""), [shape(s) for s in ins])
        matrix, et = len(ins) > 1, info.get(ins[0], ([], et))[1]
    elif op in rl.POOL_OPS:
        k = _attr(node, "kernel_shape", [])
        flops = float(out_elems * rl.numel(k))
    else:
        if cat in ("unknown", "control"):
            unknown.add(op)
        flops = rl.generic_flops(op, in_elems, out_elems)
    t = rl.op_time(flops, moved, dev, _dtype_name(onnx, et), matrix=matrix)
    return float(flops), float(moved), float(t)


def _einsum_flops(equation, shapes) -> float:
    eq = equation.decode() if isinstance(equation, bytes) else str(equation)
    lhs = eq.replace(" ", "").split("->")[0]
    sizes: dict[str, int] = {}
    for term, sh in zip(lhs.split(","), shapes, strict=False):
        term = term.replace("...", "")
        for ch, d in zip(term[::-1], list(sh)[::-1], strict=False):
            sizes[ch] = max(sizes.get(ch, 1), int(d))
    total = float(rl.numel(sizes.values()))
    return 2.0 * total if len(shapes) > 1 else total
