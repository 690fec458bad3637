"""Small ONNX CNNs built with onnx.helper whose weights come out of constant-making
subgraphs, as in models exported with constant folding off: Constant nodes,
ConstantOfShape of a constant shape, Identity, Cast, Unsqueeze / Reshape / Transpose /
Concat / Gather on constants, and Shape arithmetic on a static shape (a flatten).

`cnn(opset, blocks)` returns a `Built`: the model and, counted here from the design
(not from the ONNX graph), the float32 weight elements every compute op reads and
the number of compute ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass
class Built:
    model: onnx.ModelProto
    weight_elems: int = 0  # float32 weight elements read by compute ops
    compute_ops: int = 0
    names: list[str] = field(default_factory=list)


class _B:
    def __init__(self, opset: int, seed: int):
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.n = 0
        self.built = Built(None)

    def name(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def node(self, op, ins, n_out=1, compute=False, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        nm = self.name(op)
        self.nodes.append(helper.make_node(op, ins, outs, name=nm, **attrs))
        if compute:
            self.built.compute_ops += 1
            self.built.names.append(nm)
        return outs[0] if n_out == 1 else outs

    def init(self, arr, base="w"):
        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), nm))
        return nm

    def rand(self, *shape):
        return (self.rng.standard_normal(shape) * 0.1).astype(np.float32)

    def const(self, arr):
        nm = self.name("c")
        self.nodes.append(helper.make_node("Constant", [], [nm], name=self.name("Constant"),
                                           value=numpy_helper.from_array(np.asarray(arr))))
        return nm

    def unsqueeze(self, x, axes):
        if self.opset >= 13:
            return self.node("Unsqueeze", [x, self.const(np.array(axes, np.int64))])
        return self.node("Unsqueeze", [x], axes=axes)

    def weight(self, shape, how: str):
        """A float32 weight of `shape` made by constant pattern `how`."""
        self.built.weight_elems += int(np.prod(shape))
        if how == "const_of_shape" and self.opset >= 9:
            shp = self.const(np.array(shape, np.int64))
            return self.node("ConstantOfShape", [shp],
                             value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.02]))
        if how in ("const_of_shape", "constant"):
            return self.const(self.rand(*shape))
        if how == "reshape":
            flat = self.init(self.rand(int(np.prod(shape))))
            return self.node("Reshape", [flat, self.const(np.array(shape, np.int64))])
        if how == "cast":
            return self.node("Cast", [self.init(self.rand(*shape).astype(np.float16))],
                             to=TensorProto.FLOAT)
        if how == "identity":
            return self.node("Identity", [self.init(self.rand(*shape))])
        if how == "transpose":
            return self.node("Transpose", [self.init(self.rand(*shape[::-1]))],
                             perm=list(range(len(shape)))[::-1])
        if how == "concat":
            half = [shape[0] // 2, *shape[1:]]
            rest = [shape[0] - half[0], *shape[1:]]
            return self.node("Concat", [self.init(self.rand(*half)), self.init(self.rand(*rest))],
                             axis=0)
        if how == "gather":
            table = self.init(self.rand(3, *shape))
            return self.node("Gather", [table, self.const(np.array(1, np.int64))], axis=0)
        if how == "unsqueeze":  # a per-channel bias (C,) made (C, 1, 1)
            return self.unsqueeze(self.init(self.rand(shape[0])), [1, 2])
        return self.init(self.rand(*shape))

    def conv(self, x, cin, cout, wpat, bpat, k=3):
        w = self.weight([cout, cin, k, k], wpat)
        b = self.weight([cout], bpat)
        y = self.node("Conv", [x, w, b], compute=True, kernel_shape=[k, k],
                      pads=[k // 2] * 4)
        return self.node("Relu", [y], compute=True)


PATTERNS = ("const_of_shape", "reshape", "concat", "transpose", "constant", "init")
BIAS_PATTERNS = ("init", "cast", "identity", "gather")


def cnn(opset: int = 17, blocks: int = 2, *, width: int = 8, batch="N",
        seed: int = 0) -> Built:
    """A VGG/ResNet-like CNN on [batch, 3, 16, 16] (batch symbolic by default)."""
    b = _B(opset, seed)
    c = width
    x = b.conv("X", 3, c, "const_of_shape", "init")
    x = b.conv(x, c, c, "reshape", "cast")
    x = b.node("MaxPool", [x], compute=True, kernel_shape=[2, 2], strides=[2, 2])
    for i in range(blocks):  # residual blocks
        y = b.conv(x, c, c, PATTERNS[(i + 2) % len(PATTERNS)],
                   BIAS_PATTERNS[i % len(BIAS_PATTERNS)])
        y = b.conv(y, c, c, PATTERNS[(i + 3) % len(PATTERNS)], "init")
        x = b.node("Add", [x, y], compute=True)
    bn = [b.weight([c], "init") for _ in range(2)]
    bn += [b.init(np.zeros(c, np.float32)), b.init(np.ones(c, np.float32))]
    b.built.weight_elems += 2 * c
    x = b.node("BatchNormalization", [x, *bn], compute=True)
    x = b.node("Add", [x, b.weight([c, 1, 1], "unsqueeze")], compute=True)
    x = b.node("GlobalAveragePool", [x], compute=True)
    # flatten by Shape arithmetic: Reshape(x, Concat(Unsqueeze(Shape(x)[0]), [-1]))
    n = b.node("Gather", [b.node("Shape", [x]), b.const(np.array(0, np.int64))], axis=0)
    shape = b.node("Concat", [b.unsqueeze(n, [0]), b.const(np.array([-1], np.int64))], axis=0)
    x = b.node("Reshape", [x, shape], compute=True)
    w = b.weight([c, 10], "transpose")
    x = b.node("Gemm", [x, w, b.weight([10], "gather")], compute=True)
    b.node("Softmax", [x], compute=True)
    out = b.nodes[-1].output[0]
    graph = helper.make_graph(
        b.nodes, f"cnn_opset{opset}",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [batch, 3, 16, 16])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [batch, 10])], b.inits)
    ops = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=ops)
    model.ir_version = helper.find_min_ir_version_for(ops)
    if model.ir_version < 4:  # old models list their initializers as graph inputs too
        graph = model.graph
        graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                           for t in graph.initializer)
    b.built.model = model
    return b.built


def single(pattern: str, opset: int = 17, *, cin: int = 4, cout: int = 6) -> Built:
    """X[N, cin, 8, 8] -> Conv(weight made by `pattern`, bias by "cast") -> Relu."""
    b = _B(opset, seed=1)
    b.conv("X", cin, cout, pattern, "cast" if pattern != "cast" else "init")
    out = b.nodes[-1].output[0]
    graph = helper.make_graph(
        b.nodes, f"single_{pattern}",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", cin, 8, 8])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["N", cout, 8, 8])], b.inits)
    ops = [helper.make_opsetid("", opset)]
    b.built.model = helper.make_model(graph, opset_imports=ops)
    b.built.model.ir_version = max(helper.find_min_ir_version_for(ops), 4)
    return b.built


# -- a CNN then an MLP, for the fusion rules ----------------------------------------

def _value_info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _half_filled(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.5, np.float32), name)


def cnn_mlp_onnx():
    """Conv-BN-Relu, a residual Conv-BN-Add-Relu, then Reshape-MatMul-Add-Gelu."""
    C, HW = 4, 8
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s1", "b1", "m1", "v1"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Conv", ["r1", "W2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "s2", "b2", "m2", "v2"], ["n2"]),
        helper.make_node("Add", ["n2", "r1"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node("Reshape", ["r2", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "Wd"], ["h"]),
        helper.make_node("Add", ["h", "Bd"], ["h2"]),
        helper.make_node("Gelu", ["h2"], ["Y"]),
    ]
    inits = [_half_filled("W1", (C, 3, 3, 3)), _half_filled("B1", (C,)), _half_filled("W2", (C, C, 3, 3)),
             _half_filled("Wd", (C * HW * HW, 10)), _half_filled("Bd", (10,)),
             numpy_helper.from_array(np.array([1, -1], np.int64), "shape")]
    for i in (1, 2):
        inits += [_half_filled(f"{k}{i}", (C,)) for k in "sbmv"]
    graph = helper.make_graph(nodes, "cnn_mlp", [_value_info("X", [1, 3, HW, HW])],
                              [_value_info("Y", None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
