"""DNN-like computation graphs with roofline per-op costs.

Families: `transformer` (decoder/encoder stacks), `resnet` (residual CNNs, basic or
bottleneck blocks), `inception` (branch modules with concat), `unet` (encoder/decoder
with long skip connections). One node per op (conv, batch norm, relu, matmul, ...).

Units (the MTPP model with bandwidth B = 1, docs/problem.md section 1):

- `work`: microseconds on a nominal accelerator, roofline style (Williams et al.,
  CACM 2009): max(FLOPs / FLOPS_PER_US, bytes moved / HBM_BYTES_PER_US), bytes moved
  = input + parameter + output bytes (no fusion), times a seeded jitter factor
  1 + U(-jitter, jitter) (default +-10%) so different seeds give different instances.
- `size_out`: microseconds to send the op's output activation over the inter-stage
  link: bytes / (link_gbs * 1e3) (link_gbs in GB/s; 1 GB/s = 1e3 bytes/us).
- `size_param`: weight bytes (so use `capacity`/`memory` in bytes with these graphs;
  the overflow term then reads bytes as time units).

Activations and weights are 16-bit (2 bytes per element). The nominal device does
FLOPS_PER_US = 1e8 (100 TFLOP/s effective) and HBM_BYTES_PER_US = 2e6 (2 TB/s). The
default link bandwidths per family (meta["link_gbs"]) are chosen so that
communication matters but does not dominate: CNN activations are large relative to
their FLOPs (a 3x3 conv does 9 * C_in FLOPs per output byte, a transformer layer
about 12 * d_model), so the CNN families default to an NVLink-class link (450 GB/s
per direction, as an H100) and the transformer to a PCIe/InfiniBand-class one
(100 GB/s). The sizes scale with the arguments: from ~30
nodes (unet depth 4) to thousands (transformer with 140+ layers, deep resnets).

Node names are readable ("l3.mlp_up", "s2.b1.conv2"), op types from
{"embedding", "layernorm", "matmul", "softmax", "gelu", "add", "conv", "batchnorm",
"relu", "maxpool", "avgpool", "concat", "conv_transpose", "input"}.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph

BYTES_PER_ELEMENT = 2
FLOPS_PER_US = 1e8
HBM_BYTES_PER_US = 2e6
JITTER = 0.1

LINK_GBS = {"transformer": 100.0, "resnet": 450.0, "inception": 450.0, "unet": 450.0}


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JaxplaceError(f"must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


def _pos_int(field: str, v, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise JaxplaceError(f"must be an integer >= {lo}, got {v!r}", field=field)
    return int(v)


def _pos_float(field: str, v, *, allow_zero: bool = False) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise JaxplaceError(f"must be a number, got {v!r}", field=field) from None
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise JaxplaceError(f"must be {'>=' if allow_zero else '>'} 0, got {v!r}",
                            field=field)
    return x


class _Net:
    """Accumulates ops (FLOPs, element counts) and edges; `build` costs them."""

    def __init__(self):
        self.names: list[str] = []
        self.op_types: list[str] = []
        self.flops: list[float] = []
        self.params: list[float] = []  # elements
        self.out: list[float] = []  # elements
        self.inputs: list[list[int]] = []

    def op(self, name: str, op_type: str, inputs: Sequence[int], out: float,
           flops: float = 0.0, params: float = 0.0) -> int:
        self.names.append(name)
        self.op_types.append(op_type)
        self.flops.append(float(flops))
        self.params.append(float(params))
        self.out.append(float(out))
        self.inputs.append([int(i) for i in inputs])
        return len(self.names) - 1

    def build(self, seed: int, jitter: float, link_gbs: float, meta: dict) -> CompGraph:
        rng = np.random.default_rng(seed)
        n = len(self.names)
        bpe = BYTES_PER_ELEMENT
        out_b = np.asarray(self.out) * bpe
        par_b = np.asarray(self.params) * bpe
        in_b = np.asarray([out_b[ins].sum() if ins else 0.0 for ins in self.inputs])
        moved = in_b + par_b + out_b
        base = np.maximum(np.asarray(self.flops) / FLOPS_PER_US, moved / HBM_BYTES_PER_US)
        work = base * (1.0 + rng.uniform(-jitter, jitter, size=n))
        edges = [(u, v) for v, ins in enumerate(self.inputs) for u in ins]
        meta = {**meta, "seed": seed, "jitter": jitter, "link_gbs": link_gbs,
                "units": "work and size_out in us, size_param in bytes"}
        return CompGraph(work, edges, par_b, out_b / (link_gbs * 1e3),
                         names=self.names, op_types=self.op_types, meta=meta)


def _common(family: str, seed, jitter, link_gbs) -> tuple[int, float, float]:
    seed = _check_seed(seed)
    jitter = _pos_float("jitter", jitter, allow_zero=True)
    if jitter >= 1:
        raise JaxplaceError(f"must be < 1, got {jitter!r}", field="jitter")
    link = LINK_GBS[family] if link_gbs is None else _pos_float("link_gbs", link_gbs)
    return seed, jitter, link


# -- transformer -----------------------------------------------------------------------


def transformer(layers: int = 4, d_model: int = 512, heads: int = 8, seq: int = 512,
                batch: int = 1, vocab: int = 8192, ffn_mult: int = 4, *, seed: int = 0,
                jitter: float = JITTER, link_gbs: float | None = None) -> CompGraph:
    """A pre-LayerNorm transformer stack: 14 * layers + 3 nodes.

    embed; per layer: ln1, q, k, v, scores (q k^T), softmax, attn (softmax v), proj,
    add1 (residual), ln2, mlp_up, gelu, mlp_down, add2 (residual); final ln, head.
    """
    seed, jitter, link = _common("transformer", seed, jitter, link_gbs)
    L = _pos_int("layers", layers)
    d, h, s, b = (_pos_int(f, v) for f, v in
                  (("d_model", d_model), ("heads", heads), ("seq", seq), ("batch", batch)))
    V, f = _pos_int("vocab", vocab), _pos_int("ffn_mult", ffn_mult)
    if d % h:
        raise JaxplaceError(f"d_model {d} is not a multiple of heads {h}", field="heads")
    T, ff = b * s, f * d
    net = _Net()
    x = net.op("embed", "embedding", [], T * d, params=V * d)
    for i in range(L):
        p = f"l{i}."
        ln1 = net.op(p + "ln1", "layernorm", [x], T * d, flops=8 * T * d, params=2 * d)
        q, k, v = (net.op(p + w, "matmul", [ln1], T * d, flops=2 * T * d * d,
                          params=d * d + d) for w in "qkv")
        sc = net.op(p + "scores", "matmul", [q, k], b * h * s * s, flops=2 * T * s * d)
        sm = net.op(p + "softmax", "softmax", [sc], b * h * s * s, flops=5 * b * h * s * s)
        at = net.op(p + "attn", "matmul", [sm, v], T * d, flops=2 * T * s * d)
        pr = net.op(p + "proj", "matmul", [at], T * d, flops=2 * T * d * d,
                    params=d * d + d)
        a1 = net.op(p + "add1", "add", [x, pr], T * d, flops=T * d)
        ln2 = net.op(p + "ln2", "layernorm", [a1], T * d, flops=8 * T * d, params=2 * d)
        up = net.op(p + "mlp_up", "matmul", [ln2], T * ff, flops=2 * T * d * ff,
                    params=d * ff + ff)
        ge = net.op(p + "gelu", "gelu", [up], T * ff, flops=8 * T * ff)
        dn = net.op(p + "mlp_down", "matmul", [ge], T * d, flops=2 * T * ff * d,
                    params=ff * d + d)
        x = net.op(p + "add2", "add", [a1, dn], T * d, flops=T * d)
    ln = net.op("ln_f", "layernorm", [x], T * d, flops=8 * T * d, params=2 * d)
    net.op("head", "matmul", [ln], T * V, flops=2 * T * d * V, params=d * V)
    meta = {"generator": "transformer", "layers": L, "d_model": d, "heads": h, "seq": s,
            "batch": b, "vocab": V, "ffn_mult": f}
    return net.build(seed, jitter, link, meta)


# -- CNN helpers -----------------------------------------------------------------------


def _conv(net: _Net, name: str, x: int, hw: tuple[int, int], cin: int, cout: int,
          kernel: int, stride: int, batch: int, op_type: str = "conv"):
    H, W = -(-hw[0] // stride), -(-hw[1] // stride)
    out = batch * H * W * cout
    i = net.op(name, op_type, [x], out, flops=2 * out * cin * kernel * kernel,
               params=cin * cout * kernel * kernel + cout)
    return i, (H, W)


def _pool(net: _Net, name: str, op_type: str, x: int, hw, c: int, window: int,
          stride: int, batch: int):
    H, W = -(-hw[0] // stride), -(-hw[1] // stride)
    out = batch * H * W * c
    return net.op(name, op_type, [x], out, flops=out * window * window), (H, W)


def _check_image(image, halvings: int) -> int:
    image = _pos_int("image", image)
    if image < 2 ** halvings:
        raise JaxplaceError(f"image {image} is too small for {halvings} halvings "
                            f"(needs >= {2 ** halvings})", field="image")
    return image


# -- resnet ----------------------------------------------------------------------------


def resnet(stages: Sequence[int] = (2, 2, 2, 2), width: int = 64, block: str = "basic",
           image: int = 224, batch: int = 1, classes: int = 1000, *, seed: int = 0,
           jitter: float = JITTER, link_gbs: float | None = None) -> CompGraph:
    """A ResNet (He et al., 2016): stem (conv7x7/2, bn, relu, maxpool), stages of
    residual blocks (the first block of stages 2.. downsamples by 2 and doubles the
    width, with a projection shortcut conv1x1 + bn where the shape changes), global
    average pool, fc.

    Basic blocks: conv3x3-bn-relu-conv3x3-bn, add, relu (7 nodes, +2 projection).
    Bottleneck blocks: conv1x1-bn-relu-conv3x3-bn-relu-conv1x1-bn (4x width), add,
    relu (10 nodes, +2 projection). `stages=(3, 4, 6, 3), block="bottleneck"` is
    ResNet-50's shape.
    """
    seed, jitter, link = _common("resnet", seed, jitter, link_gbs)
    try:
        stages = tuple(int(s) if not isinstance(s, bool) else -1 for s in stages)
    except (TypeError, ValueError):
        raise JaxplaceError(f"must be a list of block counts, got {stages!r}",
                            field="stages") from None
    if not stages or any(s < 1 for s in stages):
        raise JaxplaceError(f"must be a non-empty list of positive block counts, got "
                            f"{stages!r}", field="stages")
    if block not in ("basic", "bottleneck"):
        raise JaxplaceError(f"must be 'basic' or 'bottleneck', got {block!r}", field="block")
    width, batch, classes = (_pos_int(f, v) for f, v in
                             (("width", width), ("batch", batch), ("classes", classes)))
    image = _check_image(image, 1 + len(stages))
    expand = 4 if block == "bottleneck" else 1
    net = _Net()

    def bn_relu(name, x, hw, c, relu=True):
        out = batch * hw[0] * hw[1] * c
        y = net.op(name + ".bn", "batchnorm", [x], out, flops=2 * out, params=2 * c)
        if relu:
            y = net.op(name + ".relu", "relu", [y], out, flops=out)
        return y

    inp = net.op("input", "input", [], batch * image * image * 3)
    x, hw = _conv(net, "stem.conv", inp, (image, image), 3, width, 7, 2, batch)
    x = bn_relu("stem", x, hw, width)
    x, hw = _pool(net, "stem.pool", "maxpool", x, hw, width, 3, 2, batch)
    c = width
    for si, nblocks in enumerate(stages):
        mid = width * 2 ** si
        for bi in range(nblocks):
            p = f"s{si}.b{bi}."
            stride = 2 if (bi == 0 and si > 0) else 1
            cout = mid * expand
            if block == "basic":
                y, hw2 = _conv(net, p + "conv1", x, hw, c, mid, 3, stride, batch)
                y = bn_relu(p + "conv1", y, hw2, mid)
                y, _ = _conv(net, p + "conv2", y, hw2, mid, mid, 3, 1, batch)
                y = bn_relu(p + "conv2", y, hw2, mid, relu=False)
            else:
                y, _ = _conv(net, p + "conv1", x, hw, c, mid, 1, 1, batch)
                y = bn_relu(p + "conv1", y, hw, mid)
                y, hw2 = _conv(net, p + "conv2", y, hw, mid, mid, 3, stride, batch)
                y = bn_relu(p + "conv2", y, hw2, mid)
                y, _ = _conv(net, p + "conv3", y, hw2, mid, cout, 1, 1, batch)
                y = bn_relu(p + "conv3", y, hw2, cout, relu=False)
            short = x
            if stride != 1 or c != cout:
                short, _ = _conv(net, p + "proj", x, hw, c, cout, 1, stride, batch)
                short = bn_relu(p + "proj", short, hw2, cout, relu=False)
            out = batch * hw2[0] * hw2[1] * cout
            y = net.op(p + "add", "add", [y, short], out, flops=out)
            x = net.op(p + "relu", "relu", [y], out, flops=out)
            c, hw = cout, hw2
    g = net.op("avgpool", "avgpool", [x], batch * c, flops=batch * hw[0] * hw[1] * c)
    net.op("fc", "matmul", [g], batch * classes, flops=2 * batch * c * classes,
           params=c * classes + classes)
    meta = {"generator": "resnet", "stages": list(stages), "width": width, "block": block,
            "image": image, "batch": batch, "classes": classes}
    return net.build(seed, jitter, link, meta)


# -- inception -------------------------------------------------------------------------


def inception(modules: int = 9, width: int = 64, image: int = 224, batch: int = 1,
              classes: int = 1000, *, seed: int = 0, jitter: float = JITTER,
              link_gbs: float | None = None) -> CompGraph:
    """Inception-style network (Szegedy et al., 2015/2016), conv = conv+bn+relu fused.

    Stem: conv3x3/2, conv3x3, conv3x3, maxpool/2, conv1x1, conv3x3, maxpool/2 (7 nodes).
    `modules` inception modules of 4 branches + concat (9 nodes each): 1x1; 1x1 ->
    3x3; 1x1 -> 3x3 -> 3x3 (factorised 5x5); 3x3 pool -> 1x1 projection. After module
    groups 1 and 2 (of three, when modules >= 3) a reduction module halves the
    resolution and doubles the channels (6 nodes: 3x3/2; 1x1 -> 3x3 -> 3x3/2; maxpool/2;
    concat). Head: global avgpool, fc.
    """
    seed, jitter, link = _common("inception", seed, jitter, link_gbs)
    M = _pos_int("modules", modules)
    width, batch, classes = (_pos_int(f, v) for f, v in
                             (("width", width), ("batch", batch), ("classes", classes)))
    reductions = sorted({M // 3, 2 * M // 3} - {0, M}) if M >= 3 else []
    image = _check_image(image, 3 + len(reductions))
    net = _Net()
    x = net.op("input", "input", [], batch * image * image * 3)
    hw = (image, image)
    c = 3
    for name, cout, kern, stride in (("stem.conv1", width // 2, 3, 2),
                                     ("stem.conv2", width // 2, 3, 1),
                                     ("stem.conv3", width, 3, 1)):
        x, hw = _conv(net, name, x, hw, c, max(cout, 1), kern, stride, batch)
        c = max(cout, 1)
    x, hw = _pool(net, "stem.pool1", "maxpool", x, hw, c, 3, 2, batch)
    x, hw = _conv(net, "stem.conv4", x, hw, c, width * 5 // 4, 1, 1, batch)
    c = width * 5 // 4
    x, hw = _conv(net, "stem.conv5", x, hw, c, width * 3, 3, 1, batch)
    c = width * 3
    x, hw = _pool(net, "stem.pool2", "maxpool", x, hw, c, 3, 2, batch)
    cmod = width * 4
    for mi in range(M):
        p = f"m{mi}."
        q = max(cmod // 4, 1)
        b1, _ = _conv(net, p + "b1.1x1", x, hw, c, q, 1, 1, batch)
        b2, _ = _conv(net, p + "b2.1x1", x, hw, c, max(cmod // 6, 1), 1, 1, batch)
        b2, _ = _conv(net, p + "b2.3x3", b2, hw, max(cmod // 6, 1), q, 3, 1, batch)
        b3, _ = _conv(net, p + "b3.1x1", x, hw, c, max(cmod // 12, 1), 1, 1, batch)
        b3, _ = _conv(net, p + "b3.3x3a", b3, hw, max(cmod // 12, 1), max(cmod // 8, 1),
                      3, 1, batch)
        b3, _ = _conv(net, p + "b3.3x3b", b3, hw, max(cmod // 8, 1), q, 3, 1, batch)
        b4, _ = _pool(net, p + "b4.pool", "maxpool", x, hw, c, 3, 1, batch)
        b4, _ = _conv(net, p + "b4.proj", b4, hw, c, q, 1, 1, batch)
        c = 4 * q
        out = batch * hw[0] * hw[1] * c
        x = net.op(p + "concat", "concat", [b1, b2, b3, b4], out)
        if mi + 1 in reductions:
            p = f"r{reductions.index(mi + 1)}."
            h = max(c // 2, 1)
            r1, hw2 = _conv(net, p + "3x3", x, hw, c, h, 3, 2, batch)
            r2, _ = _conv(net, p + "b2.1x1", x, hw, c, max(c // 4, 1), 1, 1, batch)
            r2, _ = _conv(net, p + "b2.3x3a", r2, hw, max(c // 4, 1), h, 3, 1, batch)
            r2, _ = _conv(net, p + "b2.3x3b", r2, hw, h, h, 3, 2, batch)
            r3, _ = _pool(net, p + "pool", "maxpool", x, hw, c, 3, 2, batch)
            hw, c = hw2, c + 2 * h
            x = net.op(p + "concat", "concat", [r1, r2, r3], batch * hw[0] * hw[1] * c)
            cmod *= 2
    g = net.op("avgpool", "avgpool", [x], batch * c, flops=batch * hw[0] * hw[1] * c)
    net.op("fc", "matmul", [g], batch * classes, flops=2 * batch * c * classes,
           params=c * classes + classes)
    meta = {"generator": "inception", "modules": M, "width": width, "image": image,
            "batch": batch, "classes": classes}
    return net.build(seed, jitter, link, meta)


# -- unet ------------------------------------------------------------------------------


def unet(depth: int = 4, width: int = 64, convs: int = 2, image: int = 256,
         batch: int = 1, classes: int = 2, *, seed: int = 0, jitter: float = JITTER,
         link_gbs: float | None = None) -> CompGraph:
    """A U-Net (Ronneberger et al., 2015), conv = conv3x3+relu fused:
    depth * (2 * convs + 3) + convs + 2 nodes.

    input; encoder level l (width * 2^l channels): `convs` convs, maxpool/2; bottleneck
    `convs` convs; decoder level l: conv_transpose 2x2/2, concat with the encoder's
    level-l output (the long skip), `convs` convs; final 1x1 conv to `classes`.
    """
    seed, jitter, link = _common("unet", seed, jitter, link_gbs)
    D, width, convs, batch, classes = (_pos_int(f, v) for f, v in (
        ("depth", depth), ("width", width), ("convs", convs), ("batch", batch),
        ("classes", classes)))
    image = _check_image(image, D)
    net = _Net()
    x = net.op("input", "input", [], batch * image * image * 3)
    hw, c = (image, image), 3
    skips = []
    for lvl in range(D):
        cout = width * 2 ** lvl
        for j in range(convs):
            x, _ = _conv(net, f"enc{lvl}.conv{j}", x, hw, c, cout, 3, 1, batch)
            c = cout
        skips.append((x, hw, c))
        x, hw = _pool(net, f"enc{lvl}.pool", "maxpool", x, hw, c, 2, 2, batch)
    for j in range(convs):
        cout = width * 2 ** D
        x, _ = _conv(net, f"mid.conv{j}", x, hw, c, cout, 3, 1, batch)
        c = cout
    for lvl in reversed(range(D)):
        s, shw, sc = skips[lvl]
        out = batch * shw[0] * shw[1] * sc
        x = net.op(f"dec{lvl}.up", "conv_transpose", [x], out,
                   flops=2 * out * c, params=c * sc * 4 + sc)
        hw, c = shw, 2 * sc
        x = net.op(f"dec{lvl}.concat", "concat", [x, s], batch * hw[0] * hw[1] * c)
        for j in range(convs):
            x, _ = _conv(net, f"dec{lvl}.conv{j}", x, hw, c, sc, 3, 1, batch)
            c = sc
    net.op("out", "conv", [x], batch * hw[0] * hw[1] * classes,
           flops=2 * batch * hw[0] * hw[1] * classes * c, params=c * classes + classes)
    meta = {"generator": "unet", "depth": D, "width": width, "convs": convs,
            "image": image, "batch": batch, "classes": classes}
    return net.build(seed, jitter, link, meta)
