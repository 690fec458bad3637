"""Figures of experiments/latency_milp.md.

    python experiments/latency_milp_bench.py milp [--time-limit 20]   # MOIRAI MILP, contiguous IP
    python experiments/latency_milp_bench.py fusion                   # op counts before/after fuse()
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time

import numpy as np

GRAPHS = [  # generated DNN-like graphs of 13-59 ops
    ("unet", {"depth": 2, "convs": 1}),
    ("transformer", {"layers": 1}),
    ("inception", {"modules": 1}),
    ("resnet", {"stages": (1, 1)}),
    ("transformer", {"layers": 2}),
    ("resnet", {"stages": (1, 1, 1, 1)}),
    ("inception", {"modules": 3}),
    ("transformer", {"layers": 4}),
]


def milp(time_limit: float, contiguous_limit: float) -> None:
    from jaxplace.cluster import load_cluster
    from jaxplace.generators import generate
    from jaxplace.latency._events import greedy_schedule
    from jaxplace.latency.contiguous import solve_contiguous
    from jaxplace.latency.milp import latency_lower_bound, solve_moirai
    from jaxplace.latency.times import instance_from

    cl = load_cluster("moirai_inter")
    print("| graph | n | memory | lower bd (ms) | greedy (ms) | MILP (ms) | MILP bound (ms) "
          "| gap | status | time (s) | devices used | contiguous IP (ms) | time (s) "
          "| MILP from contiguous (ms) | its bound (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, kw in GRAPHS:
        g = generate(name, seed=0, **kw)
        base = instance_from(g, cl)
        for label in ("as is", "tight"):
            inst = base
            if label == "tight":  # no device holds more than 40% of the ops' memory
                cap = np.full(base.num_devices, 0.4 * base.memory.sum())
                inst = dataclasses.replace(base, capacity=np.minimum(base.capacity, cap))
            lb = latency_lower_bound(inst)
            gr = greedy_schedule(inst)
            r = solve_moirai(inst, time_limit=time_limit)
            c = solve_contiguous(inst, time_limit=contiguous_limit)
            used = len(set(r.schedule.device.tolist())) if r.schedule is not None else 0
            w = solve_moirai(inst, time_limit=time_limit, warm_start=c.schedule) \
                if c.schedule is not None else r
            gms = gr.makespan * 1e3 if gr is not None else math.inf
            print(f"| {name} {kw} | {g.num_nodes} | {label} | {lb * 1e3:.4f} | {gms:.4f} "
                  f"| {r.makespan * 1e3:.4f} | {r.bound * 1e3:.4f} | {r.gap:.1%} | {r.status} "
                  f"| {r.time:.1f} | {used} | {c.makespan * 1e3:.4f} | {c.time:.1f} "
                  f"| {w.makespan * 1e3:.4f} | {w.bound * 1e3:.4f} |",
                  flush=True)


def fusion() -> None:
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jaxplace.importers import from_jax
    from jaxplace.importers.coarsen import coarsen
    from jaxplace.importers.fusion import fuse

    class Block(nnx.Module):
        def __init__(self, d, h, f, rngs):
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=h, in_features=d, decode=False,
                                               rngs=rngs)
            self.fc1 = nnx.Linear(d, f, rngs=rngs)
            self.fc2 = nnx.Linear(f, d, rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

    class GPT(nnx.Module):
        def __init__(self, layers, d, h, rngs):
            self.blocks = nnx.List([Block(d, h, 4 * d, rngs) for _ in range(layers)]) \
                if hasattr(nnx, "List") else [Block(d, h, 4 * d, rngs) for _ in range(layers)]
            self.ln = nnx.LayerNorm(d, rngs=rngs)
            self.head = nnx.Linear(d, 1000, rngs=rngs)

        def __call__(self, x):
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln(x))

    class ConvBN(nnx.Module):
        def __init__(self, cin, cout, rngs, stride=1):
            self.conv = nnx.Conv(cin, cout, (3, 3), strides=stride, use_bias=False,
                                 rngs=rngs)
            self.bn = nnx.BatchNorm(cout, use_running_average=True, rngs=rngs)

        def __call__(self, x):
            return self.bn(self.conv(x))

    class ResBlock(nnx.Module):
        def __init__(self, c, rngs):
            self.a = ConvBN(c, c, rngs)
            self.b = ConvBN(c, c, rngs)

        def __call__(self, x):
            return nnx.relu(self.b(nnx.relu(self.a(x))) + x)

    class ResNet(nnx.Module):
        def __init__(self, blocks, c, rngs):
            self.stem = ConvBN(3, c, rngs)
            self.blocks = nnx.List([ResBlock(c, rngs) for _ in range(blocks)]) \
                if hasattr(nnx, "List") else [ResBlock(c, rngs) for _ in range(blocks)]
            self.fc = nnx.Linear(c, 10, rngs=rngs)

        def __call__(self, x):
            x = nnx.relu(self.stem(x))
            for b in self.blocks:
                x = b(x)
            return self.fc(x.mean(axis=(1, 2)))

    models = [
        ("GPT-like, 2 layers, d=256", GPT(2, 256, 8, nnx.Rngs(0)), jnp.ones((1, 128, 256))),
        ("GPT-like, 8 layers, d=256", GPT(8, 256, 8, nnx.Rngs(0)), jnp.ones((1, 128, 256))),
        ("ResNet-like, 8 blocks, c=64", ResNet(8, 64, nnx.Rngs(0)),
         jnp.ones((1, 32, 32, 3))),
    ]
    print("| model | ops | fuse() | ratio | coarsen() | coarsen+fuse | work (us) raw -> fused "
          "| rules fired | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, model, x in models:
        g = from_jax(model, x)
        t0 = time.perf_counter()
        f = fuse(g)
        dt = time.perf_counter() - t0
        c = coarsen(g)
        cf = fuse(c)
        print(f"| {label} | {g.num_nodes} | {f.num_nodes} | {f.num_nodes / g.num_nodes:.2f} "
              f"| {c.num_nodes} | {cf.num_nodes} | {g.work.sum():.1f} -> {f.work.sum():.1f} "
              f"| {f.meta['fusion_rules']} | {dt:.2f} |", flush=True)
    del jax


def onnx_models():
    """A BERT-like encoder (opset 20, one ONNX op per PyTorch-level op, as MOIRAI's
    graphs) and a ResNet-like CNN, built with onnx.helper."""
    from onnx import TensorProto, helper, numpy_helper

    def init(name, shape, dtype=np.float32):
        return numpy_helper.from_array(np.full(shape, 0.5, dtype), name)

    def transformer(layers, d=256, h=8, seq=128):
        nodes, inits, x = [], [], "X"
        inits.append(numpy_helper.from_array(np.array([1, seq, h, d // h], np.int64), "hs"))
        inits.append(numpy_helper.from_array(np.array([1, seq, d], np.int64), "ds"))
        inits.append(init("scale", ()))
        for i in range(layers):
            def n(op, ins, out, i=i, **kw):
                nodes.append(helper.make_node(op, ins, [f"{out}{i}"], **kw))
                return f"{out}{i}"
            for w in ("g1", "b1", "g2", "b2"):
                inits.append(init(f"{w}{i}", (d,)))
            for w, shape in (("Wq", (d, d)), ("Wk", (d, d)), ("Wv", (d, d)), ("Wo", (d, d)),
                             ("W1", (d, 4 * d)), ("W2", (4 * d, d))):
                inits.append(init(f"{w}{i}", shape))
                inits.append(init(f"B{w}{i}", (shape[1],)))
            ln = n("LayerNormalization", [x, f"g1{i}", f"b1{i}"], "ln1_")
            heads = []
            for w in ("Wq", "Wk", "Wv"):
                y = n("Add", [n("MatMul", [ln, f"{w}{i}"], f"mm{w}"), f"B{w}{i}"], f"ba{w}")
                y = n("Reshape", [y, "hs"], f"rs{w}")
                heads.append(n("Transpose", [y], f"tr{w}", perm=[0, 2, 1, 3]))
            q, k, v = heads
            kt = n("Transpose", [k], "kt", perm=[0, 1, 3, 2])
            s_ = n("Mul", [n("MatMul", [q, kt], "qk"), "scale"], "sc")
            a = n("MatMul", [n("Softmax", [s_], "sm", axis=-1), v], "av")
            a = n("Reshape", [n("Transpose", [a], "at", perm=[0, 2, 1, 3]), "ds"], "ar")
            o = n("Add", [n("MatMul", [a, f"Wo{i}"], "mo"), f"BWo{i}"], "bo")
            x = n("Add", [x, o], "res1")
            ln = n("LayerNormalization", [x, f"g2{i}", f"b2{i}"], "ln2_")
            hdn = n("Gelu", [n("Add", [n("MatMul", [ln, f"W1{i}"], "m1"), f"BW1{i}"],
                                "b1_")], "ge")
            y = n("Add", [n("MatMul", [hdn, f"W2{i}"], "m2"), f"BW2{i}"], "b2_")
            x = n("Add", [x, y], "res2")
        g = helper.make_graph(nodes, "bert", [helper.make_tensor_value_info(
            "X", TensorProto.FLOAT, [1, seq, d])], [helper.make_tensor_value_info(
                x, TensorProto.FLOAT, None)], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])

    def resnet(blocks, c=64, hw=32):
        nodes, inits = [], [init("Wstem", (c, 3, 3, 3))]
        def n(op, ins, out, **kw):
            nodes.append(helper.make_node(op, ins, [out], **kw))
            return out
        def bn(x, tag):
            for w in "sbmv":
                inits.append(init(f"{w}{tag}", (c,)))
            return n("BatchNormalization", [x] + [f"{w}{tag}" for w in "sbmv"], f"bn{tag}")
        x = n("Relu", [bn(n("Conv", ["X", "Wstem"], "stem", pads=[1] * 4), "stem")], "r0")
        for i in range(blocks):
            for j in "ab":
                inits.append(init(f"W{i}{j}", (c, c, 3, 3)))
            y = n("Relu", [bn(n("Conv", [x, f"W{i}a"], f"c{i}a", pads=[1] * 4), f"{i}a")],
                  f"r{i}a")
            y = bn(n("Conv", [y, f"W{i}b"], f"c{i}b", pads=[1] * 4), f"{i}b")
            x = n("Relu", [n("Add", [y, x], f"add{i}")], f"r{i}")
        inits += [init("Wfc", (c, 10)), init("Bfc", (10,))]
        x = n("Flatten", [n("GlobalAveragePool", [x], "gap")], "fl")
        x = n("Gemm", [x, "Wfc", "Bfc"], "Y")
        g = helper.make_graph(nodes, "resnet", [helper.make_tensor_value_info(
            "X", TensorProto.FLOAT, [1, 3, hw, hw])], [helper.make_tensor_value_info(
                "Y", TensorProto.FLOAT, None)], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])

    return [("ONNX BERT-like, 4 layers, d=256", transformer(4)),
            ("ONNX BERT-like, 12 layers, d=256", transformer(12)),
            ("ONNX ResNet-like, 8 blocks, c=64", resnet(8))]


def fusion_onnx() -> None:
    from jaxplace.importers import from_onnx
    from jaxplace.importers.coarsen import coarsen
    from jaxplace.importers.fusion import fuse

    for label, model in onnx_models():
        g = from_onnx(model)
        f = fuse(g)
        c = coarsen(g)
        print(f"| {label} | {g.num_nodes} | {f.num_nodes} | {f.num_nodes / g.num_nodes:.2f} "
              f"| {c.num_nodes} | {fuse(c).num_nodes} | {g.work.sum():.1f} -> "
              f"{f.work.sum():.1f} | {f.meta['fusion_rules']} | |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["milp", "fusion"])
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--contiguous-limit", type=float, default=10.0)
    a = ap.parse_args()
    if a.what == "milp":
        milp(a.time_limit, a.contiguous_limit)
    else:
        fusion()
        fusion_onnx()


if __name__ == "__main__":
    main()
