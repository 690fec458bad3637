"""Roofline cost model: FLOP and byte counts per op, and their time on a device.

Per op, time = max(FLOPs / peak FLOP rate, bytes moved / memory bandwidth) + launch
overhead (Williams, Waterman and Patterson, "Roofline: an insightful visual performance
model for multicore architectures", CACM 2009). Bytes moved are the op's input bytes
(parameters included) plus its output bytes: each op is assumed to stream its operands
from device memory once, i.e. no fusion and no cache reuse across ops. A tensor that
crosses from one pipeline stage to the next costs bytes / link bandwidth.

FLOP conventions (a multiply-add is 2 FLOPs):

- matrix products (JAX `dot_general`, ONNX MatMul/Gemm/Einsum): 2*M*N*K per batch
  element, i.e. 2 * output elements * contracted size;
- convolutions: 2 * output elements * (C_in / groups) * prod(kernel window);
- recurrent cells (ONNX LSTM, GRU, RNN): 2 * steps * batch * (weight elements of W
  and R), plus `TRANSCENDENTAL_FLOPS` per gate element per step;
- elementwise ops: 1 FLOP per output element, transcendental ones (exp, tanh, erf,
  rsqrt, ...) `TRANSCENDENTAL_FLOPS` per element;
- reductions: 1 FLOP per input element; normalisation ops given as one op (ONNX
  Softmax, LayerNormalization, ...): `NORMALIZE_FLOPS[op]` per input element;
- pooling: output elements * window size;
- "view" ops (reshape, squeeze, Identity, ...) cost nothing and have no launch
  overhead: XLA and ONNX runtimes turn them into metadata changes; "layout" ops
  (transpose, concatenate, slice, gather, ...) do no FLOPs but move their bytes. A
  layout op the ONNX importer's runtime-fusion pass found free is typed
  "<op>(view)" (e.g. "Transpose(view)") and is a view.

Op names of both frameworks (JAX primitives, lower case, and ONNX operators,
CamelCase) live in the same tables; `classify(op_type)` returns the category.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from jaxplace.importers.devices import DeviceProfile

TRANSCENDENTAL_FLOPS = 4.0

VIEW_OPS = frozenset({
    # JAX
    "reshape", "squeeze", "expand_dims", "stop_gradient", "bitcast_convert_type",
    "optimization_barrier", "name", "pvary", "sharding_constraint",
    # ONNX
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant",
    "Dropout", "ConstantOfShape", "EyeLike", "BitCast", "Optional", "OptionalGetElement",
    "OptionalHasElement",
})

LAYOUT_OPS = frozenset({
    # JAX
    "broadcast_in_dim", "transpose", "concatenate", "slice", "dynamic_slice",
    "dynamic_update_slice", "gather", "pad", "rev", "split", "iota", "copy", "copy_p",
    "select_and_gather_add", "squeeze_p", "device_put", "random_bits", "random_seed",
    "random_wrap", "random_unwrap", "threefry2x32", "sort", "top_k",
    # ONNX
    "Transpose", "Concat", "Slice", "Gather", "GatherElements", "GatherND", "Split",
    "Pad", "Expand", "Tile", "ScatterND", "ScatterElements", "DepthToSpace",
    "SpaceToDepth", "Resize", "Upsample", "Range", "NonZero", "OneHot", "TopK",
    "Compress", "ReverseSequence", "Trilu", "Scatter", "GridSample", "RoiAlign",
    "CenterCropPad", "Col2Im", "MaxUnpool", "AffineGrid", "Unique",
})

SCATTER_OPS = frozenset({"scatter", "scatter_add", "scatter-add", "scatter_mul",
                         "scatter_min", "scatter_max"})

ELEMENTWISE_OPS = frozenset({
    # JAX
    "add", "add_any", "sub", "mul", "div", "max", "min", "neg", "abs", "sign",
    "select_n", "and", "or", "not", "xor", "eq", "ne", "gt", "ge", "lt", "le", "square",
    "integer_pow", "convert_element_type", "clamp", "rem", "floor", "ceil", "round",
    "is_finite", "nextafter", "reduce_precision", "shift_left", "shift_right_logical",
    "shift_right_arithmetic", "population_count", "real", "imag", "conj", "complex",
    "copysign",
    # ONNX
    "Add", "Sub", "Mul", "Div", "Relu", "Neg", "Abs", "Max", "Min", "Where", "Equal",
    "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Cast",
    "CastLike", "Floor", "Ceil", "Round", "Sign", "Mod", "BitShift", "Clip", "LeakyRelu",
    "PRelu", "Sum", "Mean", "IsNaN", "IsInf", "ThresholdedRelu", "Shrink", "BitwiseAnd",
    "BitwiseOr", "BitwiseXor", "BitwiseNot", "QuantizeLinear", "DequantizeLinear",
    "DynamicQuantizeLinear", "RandomNormal", "RandomUniform", "RandomNormalLike",
    "RandomUniformLike", "Bernoulli",
})

TRANSCENDENTAL_OPS = frozenset({
    # JAX
    "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "erf", "erfc", "erf_inv",
    "sin", "cos", "tan", "rsqrt", "sqrt", "cbrt", "pow", "atan2", "asin", "acos", "atan",
    "sinh", "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma", "igamma",
    "bessel_i0e", "bessel_i1e",
    # ONNX
    "Exp", "Log", "Tanh", "Sigmoid", "Erf", "Sin", "Cos", "Tan", "Sqrt", "Reciprocal",
    "Pow", "Softplus", "Softsign", "Elu", "Selu", "Celu", "Gelu", "HardSigmoid",
    "HardSwish", "Mish", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    "Swish", "SwiGLU",
})

REDUCE_OPS = frozenset({
    # JAX
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax", "cummin",
    "cumlogsumexp", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
    "reduce_window", "psum", "pmax", "pmin",
    # ONNX
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
    "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin",
    "CumSum", "CumProd", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
})

# Normalisation-like ops given as one op, FLOPs per input element: softmax = max,
# subtract, exp, sum, divide; layer norm = mean, subtract, square, mean, rsqrt,
# multiply, scale, shift.
NORMALIZE_FLOPS = {
    "Softmax": 5.0, "LogSoftmax": 5.0, "Hardmax": 2.0, "LayerNormalization": 8.0,
    "SimplifiedLayerNormalization": 6.0, "RMSNormalization": 6.0,
    "BatchNormalization": 4.0, "InstanceNormalization": 8.0, "GroupNormalization": 8.0,
    "LpNormalization": 3.0, "MeanVarianceNormalization": 8.0, "LRN": 8.0,
    "softmax": 5.0, "log_softmax": 5.0,
}

MATRIX_OPS = frozenset({
    "dot_general", "conv_general_dilated", "ragged_dot_general",
    "MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "QLinearMatMul",
    "QLinearConv", "ConvInteger", "Einsum", "DeformConv", "LSTM", "GRU", "RNN",
    # the ONNX importer's fused attention (importers.runtime_fusion): mostly Q K^T, P V
    "Attention",
})

POOL_OPS = frozenset({"MaxPool", "AveragePool", "LpPool", "MaxRoiPool"})

CONTROL_OPS = frozenset({"scan", "while", "cond", "Loop", "If", "Scan"})


def classify(op_type: str) -> str:
    """Category of an op: view, layout, scatter, elementwise, transcendental, reduce,
    normalize, matrix, pool, control, or unknown. `op_type` may be a fused name like
    "dot_general+add" (the first op decides)."""
    op = op_type.split("+")[0]
    if op.endswith("(view)"):  # a layout op found free (importers.runtime_fusion)
        return "view"
    for cat, table in (("view", VIEW_OPS), ("layout", LAYOUT_OPS),
                       ("scatter", SCATTER_OPS), ("elementwise", ELEMENTWISE_OPS),
                       ("transcendental", TRANSCENDENTAL_OPS), ("reduce", REDUCE_OPS),
                       ("normalize", NORMALIZE_FLOPS), ("matrix", MATRIX_OPS),
                       ("pool", POOL_OPS), ("control", CONTROL_OPS)):
        if op in table:
            return cat
    return "unknown"


def is_cheap(op_type: str) -> bool:
    """True for ops that a fusing compiler folds into their producer: views, layout
    ops and elementwise ops (the coarsening candidates)."""
    return classify(op_type) in ("view", "layout", "elementwise", "transcendental")


def numel(shape: Iterable[int]) -> int:
    return int(math.prod(int(d) for d in shape))


def dot_flops(lhs_shape: Sequence[int], out_shape: Sequence[int],
              lhs_contracting: Sequence[int]) -> float:
    """2 * output elements * contracted size (a general dot_general / einsum)."""
    k = math.prod(int(lhs_shape[d]) for d in lhs_contracting)
    return 2.0 * numel(out_shape) * k


def matmul_flops(a_shape: Sequence[int], b_shape: Sequence[int]) -> float:
    """FLOPs of numpy-semantics matmul (ONNX MatMul): batch dims broadcast, 1-D
    operands promoted. 2 * prod(batch) * M * N * K."""
    a, b = list(a_shape), list(b_shape)
    if len(a) == 1:
        a = [1, *a]
    if len(b) == 1:
        b = [*b, 1]
    m, k, n = a[-2], a[-1], b[-1]
    batch = _broadcast(a[:-2], b[:-2])
    return 2.0 * numel(batch) * m * n * k


def conv_flops(out_shape: Sequence[int], cin_per_group: int,
               kernel_spatial: Sequence[int]) -> float:
    """2 * output elements * (C_in / groups) * prod(kernel window)."""
    return 2.0 * numel(out_shape) * int(cin_per_group) * numel(kernel_spatial)


def _broadcast(a: Sequence[int], b: Sequence[int]) -> list[int]:
    n = max(len(a), len(b))
    a = [1] * (n - len(a)) + list(a)
    b = [1] * (n - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b, strict=True)]


def generic_flops(op_type: str, in_elems: int, out_elems: int) -> float:
    """FLOPs of a non-matrix op from its category: elementwise ops per output element,
    reductions and normalisations per input element, layout/view ops none."""
    cat = classify(op_type)
    if cat in ("view", "layout"):
        return 0.0
    if cat == "elementwise":
        return float(out_elems)
    if cat == "transcendental":
        return TRANSCENDENTAL_FLOPS * out_elems
    if cat == "reduce":
        return float(in_elems)
    if cat == "normalize":
        return NORMALIZE_FLOPS[op_type] * in_elems
    if cat == "scatter":
        return float(out_elems)
    return float(out_elems)  # unknown: one FLOP per output element


def op_time(flops: float, bytes_moved: float, device: DeviceProfile, dtype="fp32", *,
            matrix: bool = False, launch: bool = True) -> float:
    """Roofline time in seconds: max(flops / peak, bytes / mem_bw) + launch overhead."""
    t = max(flops / device.peak(dtype, matrix=matrix), bytes_moved / device.mem_bw)
    return t + (device.launch_s if launch else 0.0)
