"""The ONNX graphs of `bench bounds --suite onnx` (the bound ladder, BB&R
included, on the ONNX models of the test set), built or found without a download.

- `light_<name>`: the "light" models the onnx package ships for its backend tests
  (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
  ZFNet-512: real architectures, weights made by ConstantOfShape), read from the
  installed package; absent when the package has none.
- `cnn<b>`: a VGG/ResNet-like CNN with `b` residual blocks made here with
  `onnx.helper` (the shape of the test set's own CNNs: two convolutions, a max pool,
  residual blocks, batch norm, global pooling, flatten, Gemm, softmax).

Every model is imported with the roofline cost model (`importers.from_onnx`, device
"h100", batch 1).
"""

from __future__ import annotations

import glob
import os

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.importers import from_onnx


def light_model_paths() -> dict[str, str]:
    """{"light_<arch>": path} of the onnx package's light models (empty without onnx
    or without the files)."""
    try:
        import onnx
    except ImportError:
        return {}
    folder = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data",
                          "light")
    return {os.path.basename(p)[:-5]: p
            for p in sorted(glob.glob(os.path.join(folder, "light_*.onnx")))}


def cnn_model(blocks: int, *, width: int = 8, seed: int = 0):
    """An `onnx.ModelProto`: a CNN on [1, 3, 16, 16] with `blocks` residual blocks."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def name(base):
        count[0] += 1
        return f"{base}_{count[0]}"

    def init(arr) -> str:
        nm = name("w")
        inits.append(numpy_helper.from_array(arr.astype(np.float32), nm))
        return nm

    def weight(*shape):
        return init(rng.standard_normal(shape) * 0.1)

    def node(op, ins, **attrs):
        out = name(op.lower())
        nodes.append(helper.make_node(op, ins, [out], name=name(op), **attrs))
        return out

    def conv(x, cin, cout):
        y = node("Conv", [x, weight(cout, cin, 3, 3), weight(cout)], kernel_shape=[3, 3],
                 pads=[1, 1, 1, 1])
        return node("Relu", [y])

    c = width
    x = conv(conv("X", 3, c), c, c)
    x = node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    for _ in range(blocks):
        x = node("Add", [x, conv(conv(x, c, c), c, c)])
    x = node("BatchNormalization", [x, weight(c), weight(c), weight(c), init(np.ones(c))])
    x = node("GlobalAveragePool", [x])
    x = node("Flatten", [x], axis=1)
    x = node("Gemm", [x, weight(c, 10), weight(10)])
    out = node("Softmax", [x])
    graph = helper.make_graph(
        nodes, f"cnn{blocks}",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


#: The in-process CNNs of the suite (residual blocks).
CNN_BLOCKS = (2, 8)


def onnx_names() -> list[str]:
    """Every model of the suite: the CNNs, then the light models present."""
    return [f"cnn{b}" for b in CNN_BLOCKS] + list(light_model_paths())


def onnx_graphs(names=None) -> list[tuple[str, object]]:
    """[(name, CompGraph)] of the suite (all of `onnx_names()` when `names` is None),
    imported with the roofline cost model on "h100"; an unknown name raises
    JaxplaceError (field "models")."""
    light = light_model_paths()
    names = onnx_names() if names is None else list(names)
    out = []
    for nm in names:
        if nm in light:
            source = light[nm]
        elif nm.startswith("cnn") and nm[3:].isdigit():
            source = cnn_model(int(nm[3:]))
        else:
            raise JaxplaceError(f"unknown ONNX model {nm!r}; choose from "
                                f"{', '.join(onnx_names())} or cnn<blocks>",
                                field="models")
        out.append((nm, from_onnx(source, "h100", warn=None)))
    return out
