"""Roofline costs of torch.export (ATen) ops, with the importers' one cost model.

Each ATen op is costed like its ONNX counterpart (`ATEN_AS`: "layer_norm" ->
"LayerNormalization", "relu" -> "Relu", ...) through `jaxplace.importers.roofline`;
matrix ops (linear, mm, bmm, addmm, matmul, convolutions, scaled-dot-product attention)
count 2 FLOPs per multiply-add as the roofline module states. ATen views (view,
permute, expand, slice, ...) are metadata changes in eager PyTorch and cost nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from jaxplace.importers import roofline as rl
from jaxplace.importers.devices import DeviceProfile, canonical_dtype

#: ATen ops that only change tensor metadata (no kernel, no launch).
ATEN_VIEWS = frozenset({
    "view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand",
    "expand_as", "unsqueeze", "squeeze", "flatten", "unflatten", "select", "slice",
    "split", "split_with_sizes", "chunk", "unbind", "narrow", "alias", "detach",
    "dropout", "view_as", "as_strided", "lift_fresh_copy", "_assert_tensor_metadata",
    "sym_size", "sym_numel", "sym_stride", "_assert_scalar", "lift_fresh",
})

#: ATen op -> the op of the roofline tables it is costed as.
ATEN_AS = {
    "add": "Add", "sub": "Sub", "rsub": "Sub", "mul": "Mul", "div": "Div",
    "relu": "Relu", "relu_": "Relu", "gelu": "Gelu", "silu": "Swish", "sigmoid": "Sigmoid",
    "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "rsqrt": "rsqrt",
    "pow": "Pow", "neg": "Neg", "abs": "Abs", "where": "Where", "clamp": "Clip",
    "hardtanh": "Clip", "masked_fill": "Where", "masked_fill_": "Where",
    "maximum": "Max", "minimum": "Min",
    "eq": "Equal", "ne": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual",
    "ge": "GreaterOrEqual", "to": "Cast", "_to_copy": "Cast", "type_as": "Cast",
    "erf": "Erf", "softmax": "Softmax", "_softmax": "Softmax", "log_softmax": "LogSoftmax",
    "layer_norm": "LayerNormalization", "native_layer_norm": "LayerNormalization",
    "rms_norm": "RMSNormalization", "group_norm": "GroupNormalization",
    "batch_norm": "BatchNormalization", "_native_batch_norm_legit_no_training":
    "BatchNormalization", "instance_norm": "InstanceNormalization",
    "mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin",
    "max": "ReduceMax", "min": "ReduceMin", "argmax": "ArgMax", "cumsum": "CumSum",
    "adaptive_avg_pool2d": "GlobalAveragePool", "adaptive_avg_pool1d": "GlobalAveragePool",
    "max_pool2d": "MaxPool", "max_pool2d_with_indices": "MaxPool", "avg_pool2d":
    "AveragePool", "max_pool1d": "MaxPool", "avg_pool1d": "AveragePool",
    "embedding": "Gather", "index_select": "Gather", "index": "Gather", "gather": "Gather",
    "cat": "Concat", "stack": "Concat", "contiguous": "copy", "clone": "copy",
    "copy": "copy", "pad": "Pad", "constant_pad_nd": "Pad", "repeat": "Tile",
    "arange": "Range", "zeros": "ConstantOfShape", "ones": "ConstantOfShape",
    "full": "ConstantOfShape", "zeros_like": "ConstantOfShape", "ones_like":
    "ConstantOfShape", "full_like": "ConstantOfShape", "tril": "Trilu", "triu": "Trilu",
    "scaled_dot_product_attention": "MatMul",
}

MATRIX_OPS = frozenset({"linear", "mm", "bmm", "addmm", "matmul", "baddbmm", "conv1d",
                       "conv2d", "conv3d", "convolution", "scaled_dot_product_attention"})


def aten_name(target) -> str:
    """"linear" for aten.linear.default; the callable's name for other targets."""
    packet = getattr(target, "_overloadpacket", None)
    name = getattr(packet, "__name__", None) or getattr(target, "__name__", str(target))
    return name.split(".")[-1]


def roofline_op(name: str) -> str:
    """The roofline table's op an ATen op is costed as (unknown ops keep their name)."""
    if name in ATEN_VIEWS:
        return "Identity"
    return ATEN_AS.get(name, name)


def _shape(t) -> tuple[int, ...]:
    return tuple(int(d) for d in getattr(t, "shape", ()))


def matrix_flops(name: str, ins: Sequence, out_shape: Sequence[int]) -> float:
    """FLOPs of an ATen matrix op from its tensor operands (`ins`, in argument order,
    tensors only) and its output shape."""
    out = list(out_shape)
    if name == "linear":
        return 2.0 * rl.numel(out) * _shape(ins[1])[-1]
    if name in ("mm", "bmm", "matmul"):
        return rl.matmul_flops(_shape(ins[0]), _shape(ins[1]))
    if name in ("addmm", "baddbmm"):
        return rl.matmul_flops(_shape(ins[1]), _shape(ins[2])) + rl.numel(out)
    if name in ("conv1d", "conv2d", "conv3d", "convolution"):
        w = _shape(ins[1])
        return rl.conv_flops(out, w[1], w[2:])
    if name == "scaled_dot_product_attention":
        q, k = _shape(ins[0]), _shape(ins[1])
        scores = rl.numel(q[:-1]) * k[-2]  # batch * heads * L * S
        # Q K^T and (softmax) V: 2 * 2 * L * S * E, plus the softmax's 5 per score
        return 4.0 * scores * q[-1] + rl.NORMALIZE_FLOPS["Softmax"] * scores
    raise KeyError(name)


def op_cost(name: str, ins: Sequence, outs: Sequence, device: DeviceProfile,
            window: int = 1) -> tuple[float, float, float, bool]:
    """(flops, bytes moved, roofline seconds, known) of one ATen op; `ins`/`outs` are
    the tensors (or fake tensors) it reads and writes, `window` a pooling window size."""
    op = roofline_op(name)
    cat = rl.classify(op)
    if cat == "view" or not outs:
        return 0.0, 0.0, 0.0, True
    in_elems = sum(rl.numel(_shape(t)) for t in ins)
    out_elems = sum(rl.numel(_shape(t)) for t in outs)
    nbytes = float(sum(_nbytes(t) for t in (*ins, *outs)))
    dtype = canonical_dtype(str(outs[0].dtype).replace("torch.", ""))
    matrix = name in MATRIX_OPS
    if matrix:
        flops = matrix_flops(name, ins, _shape(outs[0]))
    elif cat == "pool" and op != "GlobalAveragePool":
        flops = float(out_elems * window)
    else:
        flops = rl.generic_flops(op, in_elems, out_elems)
    t = rl.op_time(flops, nbytes, device, dtype, matrix=matrix)
    # known: a matrix op has its FLOP rule here (matrix_flops), whatever its table name
    return float(flops), nbytes, float(t), matrix or cat != "unknown"


def _nbytes(t) -> int:
    return int(math.prod(_shape(t))) * int(t.element_size())
