"""The same module through two importers, op kind by op kind: `jaxplace.torch` (torch.export's
ATen graph) against an ONNX import of its export, so that a difference in cost is
named, not guessed.

Ops are matched by kind (ATen `linear` and ONNX `Gemm`/`MatMul` are "matmul", `gelu`
and `Gelu` are "gelu", `scaled_dot_product_attention` and the runtime-fused
`Attention` are "attention", ...); only ops that launch a kernel (work > 0) count.
A kind whose counts differ for a reason the exporter, not the importers, sets carries
that reason (`WHY`): torch.onnx.export folds eval-mode BatchNormalization into the
Conv weights and turns a computation on constants alone (the positions
`arange(T)` of a static length and their embedding lookup) into a constant, which
eager PyTorch runs as ops.
"""

from __future__ import annotations

from dataclasses import dataclass

#: op type (ATen name or ONNX op type, runtime-fused ones included) -> kind
KIND = {
    "linear": "matmul", "addmm": "matmul", "mm": "matmul", "bmm": "matmul",
    "matmul": "matmul", "MatMul": "matmul", "Gemm": "matmul",
    "gelu": "gelu", "Gelu": "gelu", "silu": "silu", "Swish": "silu",
    "scaled_dot_product_attention": "attention", "Attention": "attention",
    "layer_norm": "layer_norm", "native_layer_norm": "layer_norm",
    "LayerNormalization": "layer_norm",
    "add": "add", "Add": "add", "mul": "mul", "Mul": "mul",
    "embedding": "gather", "index_select": "gather", "Gather": "gather",
    "conv2d": "conv", "conv1d": "conv", "convolution": "conv", "Conv": "conv",
    "batch_norm": "batch_norm", "_native_batch_norm_legit_no_training": "batch_norm",
    "BatchNormalization": "batch_norm",
    "relu": "relu", "relu_": "relu", "Relu": "relu",
    "max_pool2d": "max_pool", "MaxPool": "max_pool",
    "adaptive_avg_pool2d": "global_pool", "GlobalAveragePool": "global_pool",
    "ReduceMean": "global_pool", "mean": "global_pool",
    "cat": "concat", "Concat": "concat", "arange": "arange", "Range": "arange",
    "softmax": "softmax", "_softmax": "softmax", "Softmax": "softmax",
    # a layout copy: eager PyTorch copies where the code says contiguous() (its
    # transposes are views); the ONNX graph where a Transpose feeds a non-matrix op
    "transpose": "layout copy", "Transpose": "layout copy", "contiguous": "layout copy",
    "clone": "layout copy", "copy": "layout copy", "split": "split", "Split": "split",
    "where": "where", "Where": "where", "masked_fill": "where", "masked_fill_": "where",
}

#: kind -> why its launch count may differ between the importers (the exporter's doing)
WHY = {
    "batch_norm": "eval-mode BatchNorm folded into the Conv weights by torch.onnx.export "
                  "(ORT runs the Conv alone; eager PyTorch runs both)",
    "arange": "positions of a static length: computed from constants alone, folded into "
              "a constant by torch.onnx.export (eager PyTorch runs it)",
    "gather": "the position-embedding lookup of those positions, folded the same way",
}


@dataclass(frozen=True)
class Row:
    kind: str
    torch_ops: int
    torch_us: float
    onnx_ops: int
    onnx_us: float
    why: str = ""

    @property
    def differs(self) -> bool:
        return self.torch_ops != self.onnx_ops or abs(self.torch_us - self.onnx_us) > 0.05 * \
            max(self.torch_us, self.onnx_us, 1e-12)


def kind_of(op_type: str) -> str:
    return KIND.get(op_type, op_type)


def _by_kind(graph) -> dict[str, list]:
    out: dict[str, list] = {}
    for op, w in zip(graph.op_types, graph.work, strict=True):
        if w > 0:
            e = out.setdefault(kind_of(op), [0, 0.0])
            e[0] += 1
            e[1] += float(w)
    return out


def compare(torch_graph, onnx_graph) -> list[Row]:
    """One row per op kind that launches in either graph, heaviest first; `why` set
    where the counts differ for a reason in `WHY`."""
    a, b = _by_kind(torch_graph), _by_kind(onnx_graph)
    rows = []
    for k in sorted(set(a) | set(b), key=lambda k: -max(a.get(k, [0, 0])[1],
                                                        b.get(k, [0, 0])[1])):
        (tn, tw), (on, ow) = a.get(k, (0, 0.0)), b.get(k, (0, 0.0))
        rows.append(Row(k, tn, tw, on, ow, WHY.get(k, "") if tn != on else ""))
    return rows


def explained_us(rows) -> float:
    """Work the named differences account for (sum of |torch - onnx| over rows with a
    reason): what the two totals, or a stage of each, may differ by beyond a tolerance."""
    return sum(abs(r.torch_us - r.onnx_us) for r in rows if r.why)


def table(rows) -> str:
    """The rows as a text table, differing rows marked (`*` unexplained, `=` named)."""
    lines = [f"  {'kind':<14} {'torch ops':>9} {'torch us':>9} {'onnx ops':>9} "
             f"{'onnx us':>9}"]
    for r in rows:
        mark = " " if not r.differs else ("=" if r.why else "*")
        lines.append(f"{mark} {r.kind:<14} {r.torch_ops:>9} {r.torch_us:>9.2f} "
                     f"{r.onnx_ops:>9} {r.onnx_us:>9.2f}" + (f"  {r.why}" if r.why else ""))
    return "\n".join(lines)
