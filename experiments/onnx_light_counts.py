"""A figure of experiments/onnx.md: the onnx package's light models,
weights and compute ops as imported against independent counts."""

import glob
import os
import time

import numpy as np
import onnx
from onnx import numpy_helper

from jaxplace.importers import from_onnx

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")

for p in sorted(glob.glob(os.path.join(LIGHT, "*.onnx"))):
    m = onnx.load(p)
    vals = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant":
            vals[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    cos = [n for n in m.graph.node if n.op_type == "ConstantOfShape"]
    shape_in = {n.input[0] for n in cos}
    weights = sum(int(np.prod(vals[n.input[0]])) for n in cos)
    weights += sum(int(v.size) for k, v in vals.items()
                   if k not in shape_in and v.dtype.kind == "f")
    live = {i.name for i in m.graph.input} - {t.name for t in m.graph.initializer}
    compute = 0
    for n in m.graph.node:
        if any(s in live for s in n.input):
            live.update(n.output)
            compute += 1
    t = time.perf_counter()
    g = from_onnx(p)
    print(os.path.basename(p), "nodes", len(m.graph.node), "compute", compute, "units",
          g.num_nodes, "weights", int(g.size_param.sum() / 4), "independent", weights,
          "unknown", g.meta["unknown_ops"], f"{time.perf_counter() - t:.2f} s")
