"""Full-size ONNX models for the import / export fidelity record (onnx_fidelity.md):
VGG-16 and ResNet-50 whose weights come out of ConstantOfShape (opset 9, as exported
with constant folding off or with weights stripped), the same with random
initializers (opset 17, VGG-16 with its weights in an external file), and a BERT-like
encoder with symbolic batch and sequence dimensions whose head reshapes are Shape
arithmetic. The weight counts are computed from the designs, not from the graphs.

    python experiments/onnx_fidelity_models.py OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from onnx_models import _B  # noqa: E402


class Net(_B):
    def __init__(self, opset, how, seed=0):
        super().__init__(opset, seed)
        self.how = how  # "const_of_shape" or "init"

    def w(self, shape, fan_in):
        if self.how == "const_of_shape":
            self.built.weight_elems += int(np.prod(shape))
            shp = self.const(np.array(shape, np.int64))
            return self.node("ConstantOfShape", [shp], value=helper.make_tensor(
                "v", TensorProto.FLOAT, [1], [1.0 / fan_in]))
        self.built.weight_elems += int(np.prod(shape))
        return self.init((self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(
            np.float32))

    def conv(self, x, cin, cout, k=3, stride=1, relu=True, bias=True):
        ins = [x, self.w([cout, cin, k, k], cin * k * k)]
        if bias:
            ins.append(self.w([cout], 1.0))
        y = self.node("Conv", ins, compute=True, kernel_shape=[k, k], strides=[stride] * 2,
                      pads=[k // 2] * 4)
        return self.node("Relu", [y], compute=True) if relu else y

    def bn(self, x, c, relu=True):
        ins = [x] + [self.w([c], 1.0) for _ in range(3)]
        if self.how == "init":  # a running variance is positive
            self.built.weight_elems += c
            ins.append(self.init((np.abs(self.rng.standard_normal(c)) + 0.5).astype(
                np.float32)))
        else:
            ins.append(self.w([c], 1.0))
        y = self.node("BatchNormalization", ins, compute=True)
        return self.node("Relu", [y], compute=True) if relu else y

    def fc(self, x, cin, cout, relu=True):
        y = self.node("Gemm", [x, self.w([cin, cout], cin), self.w([cout], 1.0)],
                      compute=True)
        return self.node("Relu", [y], compute=True) if relu else y

    def flatten(self, x):
        n = self.node("Gather", [self.node("Shape", [x]), self.const(np.array(0, np.int64))],
                      axis=0)
        s = self.node("Concat", [self.unsqueeze(n, [0]), self.const(np.array([-1], np.int64))],
                      axis=0)
        return self.node("Reshape", [x, s], compute=True)

    def model(self, name, inputs, out, out_shape):
        graph = helper.make_graph(self.nodes, name, inputs, [helper.make_tensor_value_info(
            out, TensorProto.FLOAT, out_shape)], self.inits)
        ops = [helper.make_opsetid("", self.opset)]
        m = helper.make_model(graph, opset_imports=ops)
        m.ir_version = max(helper.find_min_ir_version_for(ops), 4)
        self.built.model = m
        return self.built


def vgg16(opset, how):
    b = Net(opset, how)
    x, c = "X", 3
    for width, reps in ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3)):
        for _ in range(reps):
            x, c = b.conv(x, c, width), width
        x = b.node("MaxPool", [x], compute=True, kernel_shape=[2, 2], strides=[2, 2])
    x = b.flatten(x)
    x = b.fc(x, 512 * 7 * 7, 4096)
    x = b.fc(x, 4096, 4096)
    x = b.node("Softmax", [b.fc(x, 4096, 1000, relu=False)], compute=True)
    return b.model("vgg16", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                           ["N", 3, 224, 224])], x, ["N", 1000])


def resnet50(opset, how):
    b = Net(opset, how)
    x = b.bn(b.conv("X", 3, 64, k=7, stride=2, relu=False, bias=False), 64)
    x = b.node("MaxPool", [x], compute=True, kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1])
    cin = 64
    for width, reps, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for r in range(reps):
            s = stride if r == 0 else 1
            y = b.bn(b.conv(x, cin, width, k=1, relu=False, bias=False), width)
            y = b.bn(b.conv(y, width, width, k=3, stride=s, relu=False, bias=False), width)
            y = b.bn(b.conv(y, width, 4 * width, k=1, relu=False, bias=False), 4 * width,
                     relu=False)
            if r == 0:
                x = b.bn(b.conv(x, cin, 4 * width, k=1, stride=s, relu=False, bias=False),
                         4 * width, relu=False)
            x = b.node("Relu", [b.node("Add", [x, y], compute=True)], compute=True)
            cin = 4 * width
    x = b.flatten(b.node("GlobalAveragePool", [x], compute=True))
    x = b.node("Softmax", [b.fc(x, 2048, 1000, relu=False)], compute=True)
    return b.model("resnet50", [helper.make_tensor_value_info("X", TensorProto.FLOAT,
                                                              ["N", 3, 224, 224])], x, ["N", 1000])


def encoder(opset=17, layers=2, d=256, heads=4, ff=1024):
    b = Net(opset, "init")
    dh = d // heads
    x = "X"  # [batch, seq, d]
    for _ in range(layers):
        shp = b.node("Shape", [x])
        bs = [b.unsqueeze(b.node("Gather", [shp, b.const(np.array(i, np.int64))], axis=0), [0])
              for i in (0, 1)]
        split = b.node("Concat", [*bs, b.const(np.array([heads, dh], np.int64))], axis=0)
        merge = b.node("Concat", [*bs, b.const(np.array([d], np.int64))], axis=0)
        qkv = []
        for _ in range(3):
            h = b.node("Add", [b.node("MatMul", [x, b.w([d, d], d)], compute=True),
                               b.w([d], 1.0)], compute=True)
            h = b.node("Reshape", [h, split], compute=True)
            qkv.append(b.node("Transpose", [h], compute=True, perm=[0, 2, 1, 3]))
        kt = b.node("Transpose", [qkv[1]], compute=True, perm=[0, 1, 3, 2])
        s = b.node("MatMul", [qkv[0], kt], compute=True)
        s = b.node("Mul", [s, b.const(np.array(1.0 / np.sqrt(dh), np.float32))], compute=True)
        a = b.node("MatMul", [b.node("Softmax", [s], compute=True, axis=-1), qkv[2]],
                   compute=True)
        a = b.node("Reshape", [b.node("Transpose", [a], compute=True, perm=[0, 2, 1, 3]),
                               merge], compute=True)
        o = b.node("Add", [b.node("MatMul", [a, b.w([d, d], d)], compute=True),
                           b.w([d], 1.0)], compute=True)
        x = b.node("LayerNormalization", [b.node("Add", [x, o], compute=True), b.w([d], 1.0),
                                          b.w([d], 1.0)], compute=True, axis=-1)
        h = b.node("Add", [b.node("MatMul", [x, b.w([d, ff], d)], compute=True),
                           b.w([ff], 1.0)], compute=True)
        h = b.node("Relu", [h], compute=True)
        h = b.node("Add", [b.node("MatMul", [h, b.w([ff, d], ff)], compute=True),
                           b.w([d], 1.0)], compute=True)
        x = b.node("LayerNormalization", [b.node("Add", [x, h], compute=True), b.w([d], 1.0),
                                          b.w([d], 1.0)], compute=True, axis=-1)
    return b.model("encoder", [helper.make_tensor_value_info(
        "X", TensorProto.FLOAT, ["batch", "seq", d])], x, ["batch", "seq", d])


def run(out_dir):
    import onnxruntime as ort

    from jaxplace.cli.main import main
    from jaxplace.export.onnx_stages import run_stages
    from jaxplace.importers import from_onnx

    os.makedirs(out_dir, exist_ok=True)
    cases = [("vgg16_opset9_cos", lambda: vgg16(9, "const_of_shape"), {"N": 1}, False),
             ("vgg16_opset17_ext", lambda: vgg16(17, "init"), {"N": 1}, True),
             ("resnet50_opset9_cos", lambda: resnet50(9, "const_of_shape"), {"N": 1}, False),
             ("resnet50_opset17", lambda: resnet50(17, "init"), {"N": 1}, False),
             ("encoder_opset17", lambda: encoder(), {"batch": 2, "seq": 16}, False)]
    rows = []
    for name, make, dims, external in cases:
        built = make()
        path = os.path.join(out_dir, name + ".onnx")
        if external:
            onnx.save(built.model, path, save_as_external_data=True,
                      location=name + ".bin")
        else:
            onnx.save(built.model, path)
        t0 = time.perf_counter()
        g = from_onnx(path, dim_values=dims)
        t_import = time.perf_counter() - t0
        row = {"model": name, "file_mb": os.path.getsize(path) / 1e6,
               "onnx_nodes": g.meta["onnx_nodes"], "compute_ops_design": built.compute_ops,
               "placement_units": g.num_nodes,
               "param_bytes_imported": float(g.size_param.sum()),
               "param_bytes_design": 4.0 * built.weight_elems,
               "import_s": t_import, "unknown_ops": g.meta["unknown_ops"]}
        row["param_rel_err"] = row["param_bytes_imported"] / row["param_bytes_design"] - 1
        x = np.random.default_rng(0).standard_normal(
            [dims.get(d.dim_param, d.dim_value) for d in
             built.model.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
        whole = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = whole.run(None, {"X": x})[0]
        dim_args = [a for k, v in dims.items() for a in ("--dim", f"{k}={v}")]
        for k in (2, 4, 8):
            res = os.path.join(out_dir, f"{name}_k{k}.json")
            assert main(["partition", path, *dim_args, "-k", str(k), "--method", "dfs",
                         "-q", "-o", res]) == 0
            sdir = os.path.join(out_dir, f"{name}_k{k}")
            assert main(["export", res, "--to", "onnx", "-o", sdir, *dim_args]) == 0
            got = list(run_stages(sdir, {"X": x}).values())[0]
            err = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
            plan = json.load(open(os.path.join(sdir, "plan.json")))
            row[f"k{k}"] = {"stages": plan["num_stages"], "max_rel_err": err,
                            "cut_bytes": [sum(i["bytes"] for i in st["inputs"])
                                          for st in plan["stages"][1:]]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


if __name__ == "__main__":
    run(sys.argv[1] if len(sys.argv) > 1 else "/tmp/onnx_fidelity")
