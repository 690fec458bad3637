"""Op-level GPT- and Swin-like graphs with FLOP and byte counts, for the latency bench.

They mimic what an ONNX export of the models gives (one node per ONNX op: GPT's layer
norms and GELU decomposed into elementwise ops as in GPT-2 exports, Swin's window
partition/reverse as Reshape/Transpose, the fused QKV projection as MatMul + Split with
three output tensors) and are costed like imported graphs
(`jaxplace.importers.builder.GraphBuilder`, roofline on `device`), so
`jaxplace.cluster.times.instance_from` recomputes every op's time per cluster device
from the `flops` / `bytes_moved` attributes. Sizes follow MOIRAI's Table IV (Zhang et
al. 2023): GPT-3 330M = 24 layers, hidden 1024, 16 heads, 2048 tokens (~1,200 ops);
Swin 1.8B-like = depths (2, 2, 26, 2), embedding dim 512, window 7, a 1120 x 1120 image
(~1,100 ops); GPT-3 13B = 40 layers, hidden 5120, 40 heads (~2,000 ops, fp16: 26 GB
of weights, more than any device of the inter-server testbed holds). Batch 1, `dtype`
activations and weights (default fp32).
"""

from __future__ import annotations

from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers.builder import GraphBuilder
from jaxplace.importers.devices import get_device

_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


class _Model:
    """Adds ops with roofline FLOPs and bytes (inputs + weights + outputs)."""

    def __init__(self, device: str, dtype: str):
        self.dev = get_device(device)
        self.b = GraphBuilder(self.dev)
        self.dtype = dtype
        self.bpe = _BYTES[dtype]
        self.size: dict[int, float] = {}  # tensor -> elements

    def op(self, name, op_type, ins, outs, flops=None, params=0.0):
        """ins: tensor ids; outs: output element counts; params: weight elements.
        Returns the output tensor ids (a list) of the new op."""
        in_el = sum(self.size[t] for t in ins)
        out_el = float(sum(outs))
        if flops is None:
            flops = rl.generic_flops(op_type, int(in_el), int(out_el))
        moved = (in_el + params + out_el) * self.bpe
        if rl.classify(op_type) == "view":
            moved = 0.0
        t = rl.op_time(flops, moved, self.dev, self.dtype,
                       matrix=rl.classify(op_type) == "matrix")
        pid = [self.b.add_param(f"{name}.w", params * self.bpe)] if params else []
        _, tids = self.b.add_node(name, op_type, flops, moved, t, in_tensors=ins,
                                  in_params=pid, out_bytes=[o * self.bpe for o in outs])
        for tid, o in zip(tids, outs, strict=True):
            self.size[tid] = float(o)
        return tids

    def one(self, *a, **kw) -> int:
        return self.op(*a, **kw)[0]

    def matmul(self, name, x, m, k, n, batch=1, weight=True):
        """x (batch*m, k) @ W (k, n) [+ bias as a separate Add]."""
        y = self.one(name, "MatMul", [x], [batch * m * n], flops=2.0 * batch * m * k * n,
                     params=k * n if weight else 0.0)
        if weight:
            y = self.one(name + ".bias", "Add", [y], [batch * m * n], params=n)
        return y

    def build(self, meta: dict) -> CompGraph:
        return self.b.build({**meta, "dtype": self.dtype})


def _layernorm_decomposed(m: _Model, p: str, x: int, T: int, H: int) -> int:
    el = T * H
    mu = m.one(p + "mean", "ReduceMean", [x], [T])
    d = m.one(p + "sub", "Sub", [x, mu], [el])
    sq = m.one(p + "pow", "Pow", [d], [el])
    var = m.one(p + "var", "ReduceMean", [sq], [T])
    ve = m.one(p + "eps", "Add", [var], [T])
    sd = m.one(p + "sqrt", "Sqrt", [ve], [T])
    y = m.one(p + "div", "Div", [d, sd], [el])
    y = m.one(p + "gamma", "Mul", [y], [el], params=H)
    return m.one(p + "beta", "Add", [y], [el], params=H)


def _gelu_decomposed(m: _Model, p: str, x: int, el: int) -> int:
    c = m.one(p + "pow", "Pow", [x], [el])
    c = m.one(p + "mul1", "Mul", [c], [el])
    c = m.one(p + "add1", "Add", [x, c], [el])
    c = m.one(p + "mul2", "Mul", [c], [el])
    c = m.one(p + "tanh", "Tanh", [c], [el])
    c = m.one(p + "add2", "Add", [c], [el])
    h = m.one(p + "half", "Mul", [x], [el])
    return m.one(p + "mul3", "Mul", [h, c], [el])


def gpt_like(layers: int = 24, hidden: int = 1024, heads: int = 16, seq: int = 2048,
             vocab: int = 50257, *, dtype: str = "fp32", device: str = "v100") -> CompGraph:
    """A GPT-3-style decoder stack, about 50 ops per layer (module docstring)."""
    m = _Model(device, dtype)
    T, H, A = seq, hidden, heads
    x = m.one("embed", "Gather", [], [T * H], flops=0.0, params=vocab * H)
    pos = m.one("pos_embed", "Gather", [], [T * H], flops=0.0, params=seq * H)
    x = m.one("embed_add", "Add", [x, pos], [T * H])
    for i in range(layers):
        p = f"h{i}."
        ln = _layernorm_decomposed(m, p + "ln1.", x, T, H)
        qkv = m.matmul(p + "qkv", ln, T, H, 3 * H)
        q, k, v = m.op(p + "split", "Split", [qkv], [T * H] * 3)
        q = m.one(p + "q.t", "Transpose", [m.one(p + "q.r", "Reshape", [q], [T * H])],
                  [T * H])
        k = m.one(p + "k.t", "Transpose", [m.one(p + "k.r", "Reshape", [k], [T * H])],
                  [T * H])
        v = m.one(p + "v.t", "Transpose", [m.one(p + "v.r", "Reshape", [v], [T * H])],
                  [T * H])
        s = m.one(p + "scores", "MatMul", [q, k], [A * T * T], flops=2.0 * T * T * H)
        s = m.one(p + "scale", "Div", [s], [A * T * T])
        s = m.one(p + "mask", "Add", [s], [A * T * T])
        s = m.one(p + "softmax", "Softmax", [s], [A * T * T])
        a = m.one(p + "attn", "MatMul", [s, v], [T * H], flops=2.0 * T * T * H)
        a = m.one(p + "attn.r", "Reshape", [m.one(p + "attn.t", "Transpose", [a], [T * H])],
                  [T * H])
        a = m.matmul(p + "proj", a, T, H, H)
        x = m.one(p + "res1", "Add", [x, a], [T * H])
        ln = _layernorm_decomposed(m, p + "ln2.", x, T, H)
        u = m.matmul(p + "fc1", ln, T, H, 4 * H)
        u = _gelu_decomposed(m, p + "gelu.", u, 4 * T * H)
        u = m.matmul(p + "fc2", u, T, 4 * H, H)
        x = m.one(p + "res2", "Add", [x, u], [T * H])
    x = _layernorm_decomposed(m, "ln_f.", x, T, H)
    m.one("lm_head", "MatMul", [x], [T * vocab], flops=2.0 * T * H * vocab)
    return m.build({"name": f"gpt-like-{layers}x{hidden}", "layers": layers,
                    "hidden": hidden, "heads": heads, "seq": seq})


def _swin_block(m: _Model, p: str, x: int, L: int, C: int, heads: int, win: int,
                shifted: bool) -> int:
    el = L * C
    Nw = L // (win * win)  # windows
    ln = m.one(p + "ln1", "LayerNormalization", [x], [el], params=2 * C)
    h = m.one(p + "roll", "Roll", [ln], [el]) if shifted else ln
    h = m.one(p + "part.r1", "Reshape", [h], [el])
    h = m.one(p + "part.t", "Transpose", [h], [el])
    h = m.one(p + "part.r2", "Reshape", [h], [el])
    qkv = m.matmul(p + "qkv", h, L, C, 3 * C)
    qkv = m.one(p + "qkv.t", "Transpose", [m.one(p + "qkv.r", "Reshape", [qkv], [3 * el])],
                [3 * el])
    q, k, v = m.op(p + "split", "Split", [qkv], [el] * 3)
    q = m.one(p + "q.scale", "Mul", [q], [el])
    k = m.one(p + "k.t", "Transpose", [k], [el])
    ww = win * win
    s = m.one(p + "scores", "MatMul", [q, k], [Nw * heads * ww * ww],
              flops=2.0 * Nw * ww * ww * C)
    s = m.one(p + "relpos", "Add", [s], [Nw * heads * ww * ww], params=heads * ww * ww)
    if shifted:
        s = m.one(p + "mask", "Add", [s], [Nw * heads * ww * ww])
    s = m.one(p + "softmax", "Softmax", [s], [Nw * heads * ww * ww])
    a = m.one(p + "attn", "MatMul", [s, v], [el], flops=2.0 * Nw * ww * ww * C)
    a = m.one(p + "attn.r", "Reshape", [m.one(p + "attn.t", "Transpose", [a], [el])], [el])
    a = m.matmul(p + "proj", a, L, C, C)
    a = m.one(p + "rev.r1", "Reshape", [a], [el])
    a = m.one(p + "rev.t", "Transpose", [a], [el])
    a = m.one(p + "rev.r2", "Reshape", [a], [el])
    if shifted:
        a = m.one(p + "unroll", "Roll", [a], [el])
    x = m.one(p + "res1", "Add", [x, a], [el])
    ln = m.one(p + "ln2", "LayerNormalization", [x], [el], params=2 * C)
    u = m.matmul(p + "fc1", ln, L, C, 4 * C)
    u = m.one(p + "gelu", "Gelu", [u], [4 * el])
    u = m.matmul(p + "fc2", u, L, 4 * C, C)
    return m.one(p + "res2", "Add", [x, u], [el])


def swin_like(depths=(2, 2, 26, 2), dim: int = 512, heads0: int = 16, image: int = 1120,
              window: int = 7, classes: int = 1000, *, dtype: str = "fp32",
              device: str = "v100") -> CompGraph:
    """A Swin-Transformer-style hierarchy, about 33 ops per block (module docstring)."""
    m = _Model(device, dtype)
    side = image // 4
    L, C = side * side, dim
    x = m.one("patch_embed", "Conv", [], [L * C], flops=2.0 * L * C * 3 * 16,
              params=3 * 16 * C)
    x = m.one("patch_norm", "LayerNormalization", [x], [L * C], params=2 * C)
    heads = heads0
    for s, depth in enumerate(depths):
        if s:
            parts = [m.one(f"merge{s}.slice{j}", "Slice", [x], [L * C // 4]) for j in range(4)]
            x = m.one(f"merge{s}.concat", "Concat", parts, [L * C])
            L, C = L // 4, C * 2
            x = m.one(f"merge{s}.norm", "LayerNormalization", [x], [L * 2 * C], params=4 * C)
            x = m.one(f"merge{s}.reduce", "MatMul", [x], [L * C],
                      flops=2.0 * L * 2 * C * C, params=2 * C * C)
            heads *= 2
        for b in range(depth):
            x = _swin_block(m, f"s{s}.b{b}.", x, L, C, heads, window, b % 2 == 1)
    x = m.one("norm", "LayerNormalization", [x], [L * C], params=2 * C)
    x = m.one("pool", "ReduceMean", [x], [C])
    m.one("head", "MatMul", [x], [classes], flops=2.0 * C * classes, params=C * classes)
    return m.build({"name": f"swin-like-{sum(depths)}x{dim}", "depths": list(depths),
                    "dim": dim, "image": image, "window": window})


MODELS = {"gpt3-330m": lambda **kw: gpt_like(24, 1024, 16, **kw),
          "gpt3-1.3b": lambda **kw: gpt_like(24, 2048, 32, **kw),
          "gpt3-13b": lambda **kw: gpt_like(40, 5120, 40, **{"dtype": "fp16", **kw}),
          "swin-1.8b": lambda **kw: swin_like((2, 2, 26, 2), 512, 16, **kw),
          # branchy, for contrast: the generator's Inception-like graph (184 ops); it has
          # no FLOP counts, so devices differ only by peak speed (times.py, case 3)
          "inception-b16": lambda **kw: _inception()}


def _inception() -> CompGraph:
    from jaxplace.generators import generate

    return generate("inception", modules=18, width=96, image=299, batch=16)

__all__ = ["MODELS", "gpt_like", "swin_like"]
