"""Import an ONNX model as a CompGraph (needs the optional `onnx` package).

The model is first seen as a runtime sees it (`jaxplace.importers.onnx_fold`):
symbolic dimensions take their value from `dim_values` (else `default_dim`; the
names defaulted are listed in `meta["defaulted_dims"]`), shapes come from
`onnx.shape_inference`, and constant subgraphs are folded. Conventions, the same as
`from_jax`:

- one node per compute op (an ONNX node that reads at least one non-constant
  tensor); a node with several outputs (Split, TopK, LSTM, ...) produces several
  tensors of one producer (hyperedges);
- graph inputs are not nodes (their transfer into the first stage is not charged);
- constant tensors (initializers, Constant outputs, anything computed from
  constants alone, Shape of a static shape) are parameters; each is charged once, in
  bytes, to its first compute consumer in graph order (`size_param`);
- Loop/If/Scan are one node each, costed from their outputs like an unknown op
  (their subgraphs are not inspected); the outer tensors they read are their inputs.

By default the graph is then costed as an optimizing runtime launches it
(`jaxplace.importers.runtime_fusion`, `fusion="runtime"`): MatMul + bias Add is one
Gemm, the GELU, LayerNorm (opset < 17) and attention patterns one op each, and
Transpose / Split / Expand that only feed matrix ops (or re-view data) are free, as
in eager PyTorch and ONNX Runtime with its graph optimizations;
`meta["runtime_fusion"]` counts what was fused.
`fusion="none"` costs every op as exported (an upper estimate: a launch and a memory
round trip per op).

An op type with no cost rule is costed by `UNKNOWN_RULE` and named once through
`warn`. Units: `work` in microseconds, tensor sizes in microseconds of link transfer
(use `bandwidth=1`), `size_param` in bytes; raw `flops`, `bytes_moved`, `out_bytes`,
`param_bytes` in `node_attrs`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers import runtime_fusion
from jaxplace.importers.builder import GraphBuilder
from jaxplace.importers.coarsen import coarsen as _coarsen
from jaxplace.importers.devices import DeviceProfile, canonical_dtype, get_device
from jaxplace.importers.fusion import fuse
from jaxplace.importers.onnx_fold import (
    FoldedModel,
    attr,
    fold,
    itemsize,
    load_model,
    require_onnx,
    subgraph_inputs,
)

UNKNOWN_RULE = ("1 FLOP per output element on the vector units, its input and output "
                "bytes at memory bandwidth, plus the launch overhead; an output ONNX "
                "cannot shape takes the first input's shape")


def warn_line(message: str) -> None:
    """The default `warn` of `from_onnx`: one line on stderr."""
    print(f"jaxplace: warning: {message}", file=sys.stderr)


def _dtype_name(onnx, elem_type: int) -> str:
    """The profile key of an ONNX elem type (FLOAT is fp32, not numpy's "float")."""
    try:
        return canonical_dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # bfloat16 / float8 without ml_dtypes: by name
        try:
            return canonical_dtype(onnx.TensorProto.DataType.Name(elem_type).lower())
        except ValueError:
            return "fp32"


def from_onnx(model, device: str | DeviceProfile = "h100", *, coarsen: bool | str = False,
              fusion: str = "runtime", dim_values: dict[str, int] | None = None,
              default_dim: int = 1,
              warn: Callable[[str], None] | None = warn_line) -> CompGraph:
    """Build the computation graph of an ONNX model.

    Args:
        model: a path to a .onnx file (weights in external files are not read) or an
            `onnx.ModelProto`.
        device: a profile name (see `device_names()`) or a DeviceProfile.
        coarsen: fuse chains of cheap elementwise ops into their producer; "fusion":
            MOIRAI's fusion-rule coarsening (`jaxplace.importers.fusion`). Applied
            after `fusion`.
        fusion: "runtime" (default): cost the graph as an optimizing runtime launches
            it (`runtime_fusion`: MatMul+bias -> Gemm, GELU -> Gelu, attention ->
            Attention, Transpose/Split feeding matrix ops free); "none": every ONNX op
            as exported.
        dim_values: values of symbolic dimensions, e.g. {"batch": 8}.
        default_dim: value of any other symbolic or unknown dimension.
        warn: called once with a one-line warning naming the op types that have no
            cost rule (None: silent; they are listed in `meta["unknown_ops"]` anyway).
    """
    if fusion not in runtime_fusion.MODES:
        raise JaxplaceError(f"expected one of {', '.join(runtime_fusion.MODES)}, got "
                            f"{fusion!r}", field="fusion")
    dev = get_device(device)
    proto, source = load_model(model)
    try:
        folded = fold(proto, dim_values, default_dim, source)
        plan = runtime_fusion.find(folded) if fusion == "runtime" else None
        graph = _convert(folded, dev, source, free=plan.free if plan else (),
                         fused=plan.fused() if plan else ())
    except JaxplaceError as exc:
        raise (exc.with_source(source) if source else exc) from None
    unknown, unshaped = graph.meta["unknown_ops"], graph.meta["unshaped_tensors"]
    name = source or graph.meta["name"]
    if unknown and warn is not None:
        warn(f"{name}: no cost rule for op type{'s' if len(unknown) > 1 else ''} "
             f"{', '.join(unknown)}: costed as {UNKNOWN_RULE}")
    if unshaped and warn is not None:
        warn(f"{name}: {len(unshaped)} tensor{'s have' if len(unshaped) > 1 else ' has'} "
             f"no static shape (e.g. {unshaped[0]!r}; a data-dependent op or a "
             "dimension --dim does not fix): counted as 0 bytes")
    if plan is not None:
        graph = runtime_fusion.apply(graph, plan)
    if coarsen == "fusion":
        graph = fuse(graph)
    elif coarsen:
        graph = _coarsen(graph)
    return graph


def _convert(folded: FoldedModel, dev, source, free=(), fused=()) -> CompGraph:
    """The as-exported graph; the compute ops at positions `free` cost nothing, and
    those in `fused` (runtime-fused groups) count a tensor they read twice (x * x)
    once, as the fused kernel reads it."""
    onnx = require_onnx()
    g = folded.model.graph
    info = folded.info

    def nbytes(name: str) -> float:
        shape, et = info.get(name, (None, 1))
        if shape is None:
            return 0.0
        return float(rl.numel(shape) * itemsize(onnx, et))

    b = GraphBuilder(dev)
    env: dict[str, tuple] = {}
    unknown: set[str] = set()
    unshaped: set[str] = set()
    dtype_flops: dict[str, float] = {}
    read = {s for n in g.node for s in [*n.input, *subgraph_inputs(n)]} | {
        o.name for o in g.output}  # an unread output (a Dropout mask) needs no shape
    for pos, i in enumerate(folded.compute):
        node = g.node[i]
        ins = [s for s in node.input if s]
        reads = list(dict.fromkeys([*ins, *sorted(subgraph_inputs(node))]))
        in_tensors, in_params = [], []
        for s in reads:
            if s in folded.const:
                if s not in env:
                    env[s] = ("p", b.add_param(s, nbytes(s)))
                in_params.append(env[s][1])
            elif s in env and env[s][0] == "t":
                in_tensors.append(env[s][1])
        outs = list(node.output)
        unshaped.update(o for o in outs if o in read and info.get(o, (None, 0))[0] is None)
        flops, moved, t, dtype = _node_cost(onnx, node, ins, info, nbytes, dev, unknown,
                                            unique=pos in fused)
        if pos in free:  # a runtime folds it into its consumers: no kernel, no bytes
            flops = moved = t = 0.0
        dtype_flops[dtype] = dtype_flops.get(dtype, 0.0) + flops
        op_type = node.op_type + ("(view)" if pos in free else "")  # a view, by type too
        _, tids = b.add_node(folded.names[i], op_type, flops, moved, t,
                             in_tensors=sorted(set(in_tensors)), in_params=in_params,
                             out_bytes=[nbytes(o) if o else 0.0 for o in outs])
        for o, tid in zip(outs, tids, strict=True):
            if o:
                env[o] = ("t", tid)
    name = g.name or (os.path.basename(source) if source else "onnx")
    meta = {"source": "onnx", "format": "onnx", "name": name,
            "defaulted_dims": folded.defaulted_dims, "dim_values": dict(folded.dim_values),
            "unknown_ops": sorted(unknown),
            "unknown_rule": UNKNOWN_RULE, "opset": folded.opset,
            "onnx_nodes": len(g.node), "folded_nodes": len(g.node) - len(folded.compute),
            "unshaped_tensors": sorted(unshaped),
            # the dtype of most FLOPs: what the latency and unequal-device objectives
            # cost every op at
            "dtype": max(dtype_flops, key=dtype_flops.get) if dtype_flops else "fp32"}
    if not folded.compute:
        raise JaxplaceError("every node is constant: nothing to partition",
                            field="graph.node")
    return b.build(meta)


def _node_cost(onnx, node, ins, info, nbytes, dev, unknown, unique: bool = False
               ) -> tuple[float, float, float, str]:
    """(FLOPs, bytes moved, seconds, dtype key) of one compute op; `unique`: an input
    named twice (x * x) is read once."""
    op = node.op_type
    cat = rl.classify(op)
    if cat == "view":
        return 0.0, 0.0, 0.0, "fp32"

    def shape(name):
        return info.get(name, ([], 1))[0] or []

    outs = [o for o in node.output if o]
    in_elems = sum(rl.numel(shape(s)) for s in ins)
    out_elems = sum(rl.numel(shape(s)) for s in outs)
    moved = sum(nbytes(s) for s in (dict.fromkeys(ins) if unique else ins)) + \
        sum(nbytes(s) for s in outs)
    et = (info.get(outs[0], ([], 1))[1] if outs else 1) or 1
    try:
        flops, matrix, et = node_flops(onnx, node, op, cat, ins, outs, info, shape, et,
                                   in_elems, out_elems, unknown)
    except (IndexError, ValueError, ZeroDivisionError):  # shapes unknown: generic rule
        unknown.add(op)
        flops, matrix = float(out_elems), False
    dtype = _dtype_name(onnx, et)
    t = rl.op_time(flops, moved, dev, dtype, matrix=matrix)
    return float(flops), float(moved), float(t), dtype


_RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def node_flops(onnx, node, op, cat, ins, outs, info, shape, et, in_elems, out_elems,
               unknown):
    """(FLOPs, runs on the matrix units, elem type that sets the rate) of one ONNX
    node; op types without a rule are added to `unknown`. The one FLOP rule of the
    importer and the spatial planner."""
    matrix = False
    if op in ("MatMul", "MatMulInteger"):
        flops = rl.matmul_flops(shape(ins[0]), shape(ins[1]))
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "QLinearMatMul":
        flops = rl.matmul_flops(shape(ins[0]), shape(ins[3]))
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op == "Gemm":
        a, bsh = shape(ins[0]), shape(ins[1])
        m, k = (a[1], a[0]) if attr(node, "transA", 0) else (a[0], a[1])
        n = bsh[0] if attr(node, "transB", 0) else bsh[1]
        flops = 2.0 * m * n * k + (m * n if len(ins) > 2 else 0)
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op in _RNN_GATES:  # the input and recurrent matmuls of every step, + gates
        w, r = shape(ins[1]), shape(ins[2])
        x = shape(ins[0])
        steps_batch = x[0] * x[1]  # seq x batch in either layout
        flops = 2.0 * steps_batch * (rl.numel(w) + rl.numel(r)) + \
            rl.TRANSCENDENTAL_FLOPS * steps_batch * w[0] * w[1]
        matrix, et = True, info.get(ins[0], ([], et))[1]
    elif op in ("Conv", "ConvInteger", "QLinearConv", "DeformConv"):
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
        flops = _einsum_flops(attr(node, "equation", b""), [shape(s) for s in ins])
        matrix, et = len(ins) > 1, info.get(ins[0], ([], et))[1]
    elif op in rl.POOL_OPS:
        k = attr(node, "kernel_shape", [])
        flops = float(out_elems * rl.numel(k))
    else:
        if cat in ("unknown", "control", "matrix"):  # matrix: no rule here (Attention)
            unknown.add(op)
        flops = rl.generic_flops(op, in_elems, out_elems)
    return flops, matrix, et


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
