"""Layer graphs from ONNX models and JAX functions.

`layers_from_onnx(path)` reads the operators' attributes (kernel_shape, strides,
dilations, pads, auto_pad, group, ceil_mode, Concat axis, Resize scales) that
`jaxplace.importers.from_onnx` does not keep, with shapes from ONNX shape
inference. `layers_from_jax(fn, x)` traces `fn(x)` (or `fn(params, x)`) with
`jax.make_jaxpr` and reads `conv_general_dilated` (window_strides, padding,
rhs_dilation, feature_group_count) and `reduce_window_max/sum` (window
dimensions, strides, padding, window dilation).

In both, values computed from parameters alone (weights, constants) are not
layers; an op with one activation operand and the output's shape is
"elementwise", one with several such operands "add"; anything the interval
arithmetic cannot split is kept as an "other" layer (run whole on one device).
"""

from __future__ import annotations

import math
from dataclasses import replace

from jaxplace.errors import JaxplaceError
from jaxplace.importers import roofline as rl
from jaxplace.importers.jax_trace import inline_body
from jaxplace.importers.onnx_fold import attr, fold, itemsize, load_model, require_onnx
from jaxplace.importers.onnx_import import node_flops
from jaxplace.spatial.intervals import true_kernel
from jaxplace.spatial.layers import Layer

_POINT_CATS = ("elementwise", "transcendental", "normalize")
_ALIAS_ONNX = frozenset({"Identity", "Dropout"})


class _Names:
    def __init__(self):
        self.used = {"input"}

    def __call__(self, base: str) -> str:
        name, i = base, 1
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.used.add(name)
        return name


def _point_layer(name, detail, acts, shapes, out_shape) -> Layer:
    """elementwise / add / other for an op reading activations `acts`."""
    same = len(out_shape) == 4 and all(tuple(s) == tuple(out_shape) for s in shapes)
    if same and len(acts) == 1:
        return Layer(name, "elementwise", tuple(acts), tuple(shapes), tuple(out_shape),
                     detail=detail)
    if same:
        return Layer(name, "add", tuple(acts), tuple(shapes), tuple(out_shape),
                     detail=detail)
    return _other(name, detail, acts, shapes, out_shape)


def _other(name, detail, acts, shapes, out_shape, flops: float = 0.0) -> Layer:
    return Layer(name, "other", tuple(acts), tuple(tuple(s) for s in shapes),
                 tuple(out_shape), detail=detail,
                 flops_hint=flops or float(math.prod(out_shape) if out_shape else 0))


# -- ONNX ---------------------------------------------------------------------------

def _same_pads(n_in, k, s, d, upper: bool) -> tuple[int, int]:
    total = max((-(-n_in // s) - 1) * s + true_kernel(k, d) - n_in, 0)
    small = total // 2
    return (small, total - small) if upper else (total - small, small)


def layers_from_onnx(model, dim_values: dict[str, int] | None = None,
                     default_dim: int = 1) -> list[Layer]:
    """The layer graph of an ONNX model (a path or a ModelProto) with one NCHW input.
    Constant subgraphs are folded as `jaxplace.importers.from_onnx` folds them."""
    proto, source = load_model(model)
    try:
        folded = fold(proto, dim_values, default_dim, source)
        return _onnx_layers(folded)
    except JaxplaceError as exc:
        raise (exc.with_source(source) if source else exc) from None


def _onnx_layers(folded) -> list[Layer]:
    onnx = require_onnx()
    g = folded.model.graph
    shapes = {t: tuple(s) for t, (s, _) in folded.info.items() if s is not None}
    params = folded.const
    acts = [i.name for i in g.input if i.name not in params]
    if len(acts) != 1:
        raise JaxplaceError(f"expected one activation input, got {len(acts)} "
                            f"({', '.join(acts) or 'none'})", field="graph.input")
    if len(shapes.get(acts[0], ())) != 4:
        raise JaxplaceError(f"input {acts[0]!r} must be NCHW (rank 4), got shape "
                            f"{shapes.get(acts[0])}", field="graph.input")

    def nbytes(t):
        shape, et = folded.info.get(t, (None, 1))
        return 0.0 if shape is None else float(math.prod(shape) * itemsize(onnx, et))

    producer = {acts[0]: "input"}  # activation tensor -> layer name
    names = _Names()
    layers: list[Layer] = []
    for i in folded.compute:
        node = g.node[i]
        ins = [s for s in node.input if s and s in producer]
        outs = [o for o in node.output if o]
        if not ins or not outs:
            continue
        if node.op_type in _ALIAS_ONNX:
            producer[outs[0]] = producer[ins[0]]
            continue
        name = names(node.name or f"{node.op_type}_{i}")
        in_shapes = [shapes.get(s, ()) for s in ins]
        out_shape = shapes.get(outs[0], ())
        field = f"graph.node[{i}] ({node.op_type})"
        if not out_shape:
            raise JaxplaceError("no inferred output shape", field=field)
        consts = [s for s in dict.fromkeys(node.input) if s and s in params]
        layer = _onnx_layer(node, attr, name, [producer[s] for s in ins], in_shapes,
                            out_shape, shapes, field)
        if layer.op == "conv":  # the weight is in weight_shape; the bias is extra
            extra = sum(nbytes(s) for s in consts[1:])
            layer = replace(layer, param_bytes=extra)
        elif layer.op == "other":
            layer = _costed_other(onnx, node, layer, folded.info, nbytes, consts)
        layers.append(layer)
        for o in outs:
            producer[o] = name
    if not layers:
        raise JaxplaceError("no operator reads the input", field="graph.node")
    return layers


def _costed_other(onnx, node, layer, info, nbytes, consts) -> Layer:
    """An unsplittable layer with the importer's FLOPs, matrix-unit flag and weights."""
    ins = [s for s in node.input if s]
    outs = [o for o in node.output if o]

    def shape(t):
        return list(info.get(t, ([], 1))[0] or [])

    in_elems = sum(rl.numel(shape(s)) for s in ins)
    out_elems = sum(rl.numel(shape(s)) for s in outs)
    try:
        flops, matrix, _ = node_flops(onnx, node, node.op_type, rl.classify(node.op_type), ins,
                                  outs, info, shape, 1, in_elems, out_elems, set())
    except (IndexError, ValueError, ZeroDivisionError):
        flops, matrix = float(out_elems), False
    if rl.classify(node.op_type) == "view":
        flops = 0.0
    return replace(layer, flops_hint=float(flops), matrix=bool(matrix),
                   param_bytes=float(sum(nbytes(s) for s in consts)))


def _onnx_window(node, attr, in_shape, out_shape, field):
    nd = len(in_shape) - 2
    k = tuple(attr(node, "kernel_shape", []))
    s = tuple(attr(node, "strides", [1] * nd))
    d = tuple(attr(node, "dilations", [1] * nd))
    pads = list(attr(node, "pads", [0] * (2 * nd)))
    auto = attr(node, "auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if len(k) != 2 or len(s) != 2 or len(d) != 2 or len(pads) != 4:
        raise JaxplaceError(f"expected 2-D kernel_shape/strides/dilations/pads, got "
                            f"{list(k)}, {list(s)}, {list(d)}, {pads}", field=field)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        t, b = _same_pads(in_shape[2], k[0], s[0], d[0], auto == "SAME_UPPER")
        left, r = _same_pads(in_shape[3], k[1], s[1], d[1], auto == "SAME_UPPER")
        pads = [t, left, b, r]
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    # ceil_mode (or any rounding): pad the end so the floor formula gives the
    # inferred output size
    for ax in (0, 1):
        need = (out_shape[2 + ax] - 1) * s[ax] + true_kernel(k[ax], d[ax])
        have = in_shape[2 + ax] + pads[ax] + pads[2 + ax]
        if need > have:
            pads[2 + ax] += need - have
    return k, s, d, tuple(int(p) for p in pads)


def _onnx_layer(node, attr, name, acts, in_shapes, out_shape, shapes, field) -> Layer:
    op = node.op_type
    four = len(out_shape) == 4 and all(len(s) == 4 for s in in_shapes)
    if op == "Conv" and four:
        w = shapes.get(node.input[1], ())
        if not attr(node, "kernel_shape", None) and len(w) == 4:
            node_k = tuple(w[2:])
        else:
            node_k = None
        k, s, d, pads = _onnx_window(node, _KernelAttr(attr, node_k), in_shapes[0],
                                     out_shape, field)
        return Layer(name, "conv", tuple(acts[:1]), (tuple(in_shapes[0]),), tuple(out_shape),
                     k, s, d, pads, int(attr(node, "group", 1)), detail="Conv")
    if op in ("MaxPool", "AveragePool") and four:
        k, s, d, pads = _onnx_window(node, attr, in_shapes[0], out_shape, field)
        kind = "maxpool" if op == "MaxPool" else "avgpool"
        detail = op
        if op == "AveragePool" and attr(node, "count_include_pad", 0) and any(pads):
            detail = "AveragePool(count_include_pad=1: costed, not executed as such)"
        return Layer(name, kind, tuple(acts), (tuple(in_shapes[0]),), tuple(out_shape),
                     k, s, d, pads, detail=detail)
    if op == "Concat" and four and attr(node, "axis", 0) in (1, -3):
        return Layer(name, "concat", tuple(acts), tuple(map(tuple, in_shapes)),
                     tuple(out_shape), detail="Concat")
    if op in ("Resize", "Upsample") and four and len(acts) == 1:
        mode = attr(node, "mode", b"nearest")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        (_, _, h, w), (_, _, ho, wo) = in_shapes[0], out_shape
        if mode == "nearest" and ho % h == 0 and wo % w == 0 and ho // h == wo // w:
            return Layer(name, "upsample", tuple(acts), (tuple(in_shapes[0]),),
                         tuple(out_shape), stride=(ho // h, wo // w), detail=op)
    if rl.classify(op) in _POINT_CATS or op in ("BatchNormalization", "Relu"):
        return _point_layer(name, op, acts, in_shapes, out_shape)
    return _other(name, op, acts, in_shapes, out_shape)


class _KernelAttr:
    """`attr` with kernel_shape taken from the weight when the node omits it."""

    def __init__(self, attr, kernel):
        self.attr, self.kernel = attr, kernel

    def __call__(self, node, name, default=None):
        if name == "kernel_shape" and self.kernel is not None:
            return list(self.kernel)
        return self.attr(node, name, default)


# -- JAX ----------------------------------------------------------------------------

def layers_from_jax(fn, x, *, params=None) -> list[Layer]:
    """The layer graph of `fn(x)` (or `fn(params, x)` when `params` is given); x is
    an NCHW array or `jax.ShapeDtypeStruct`. Parameters may also be closed over."""
    import jax

    if len(getattr(x, "shape", ())) != 4:
        raise JaxplaceError(f"x must be NCHW (rank 4), got shape {getattr(x, 'shape', None)}",
                            field="x")
    if params is None:
        closed = jax.make_jaxpr(fn)(x)
        act_in = [True]
    else:
        closed = jax.make_jaxpr(fn)(params, x)
        act_in = [False] * len(jax.tree_util.tree_leaves(params)) + [True]
    jaxpr = closed.jaxpr
    env: dict = {}  # var -> (layer name, shape) for activations
    for v, is_act in zip(jaxpr.invars, act_in, strict=True):
        if is_act:
            env[v] = ("input", tuple(v.aval.shape))
    layers: list[Layer] = []
    _walk(jaxpr, env, layers, _Names())
    if not layers:
        raise JaxplaceError("no operation reads the input", field="fn")
    return layers


def _walk(jaxpr, env, layers, names) -> None:
    from jax.extend.core import Literal

    for eqn in jaxpr.eqns:
        ins = [env.get(v) if not isinstance(v, Literal) else None for v in eqn.invars]
        if not any(ins):
            continue  # parameters and constants
        body = inline_body(eqn)
        if body is not None:
            sub, _ = body
            sub_env = {sv: a for sv, a in zip(sub.invars, ins, strict=True) if a}
            _walk(sub, sub_env, layers, names)
            for ov, sv in zip(eqn.outvars, sub.outvars, strict=True):
                if sv in sub_env:
                    env[ov] = sub_env[sv]
            continue
        out = eqn.outvars[0]
        out_shape = tuple(getattr(out.aval, "shape", ()))
        prim = eqn.primitive.name
        acts = [a for a in ins if a]
        name = names(prim)
        layer = _jax_layer(eqn, prim, name, ins, acts, out_shape)
        layers.append(layer)
        for ov in eqn.outvars:
            env[ov] = (name, tuple(getattr(ov.aval, "shape", ())))


def _jax_layer(eqn, prim, name, ins, acts, out_shape) -> Layer:
    p = eqn.params
    srcs = [a[0] for a in acts]
    shapes = [a[1] for a in acts]
    four = len(out_shape) == 4 and all(len(s) == 4 for s in shapes)
    if prim == "conv_general_dilated" and four and ins[0] and not ins[1]:
        dn = p["dimension_numbers"]
        nchw = (tuple(dn.lhs_spec) == (0, 1, 2, 3) and tuple(dn.rhs_spec) == (0, 1, 2, 3)
                and tuple(dn.out_spec) == (0, 1, 2, 3))
        if nchw and tuple(p["lhs_dilation"]) == (1, 1) and p["batch_group_count"] == 1:
            (pt, pb), (pl, pr) = p["padding"]
            k = tuple(eqn.invars[1].aval.shape[2:])
            return Layer(name, "conv", (srcs[0],), (shapes[0],), out_shape, k,
                         tuple(p["window_strides"]), tuple(p["rhs_dilation"]),
                         (pt, pl, pb, pr), int(p["feature_group_count"]),
                         detail="conv_general_dilated")
    if prim in ("reduce_window_max", "reduce_window_sum") and four and len(acts) == 1:
        win, st = tuple(p["window_dimensions"]), tuple(p["window_strides"])
        pad, bd = tuple(p["padding"]), tuple(p["base_dilation"])
        wd = tuple(p["window_dilation"])
        if win[:2] == (1, 1) and st[:2] == (1, 1) and all(b == 1 for b in bd) \
                and wd[:2] == (1, 1) and tuple(pad[0]) == (0, 0) and tuple(pad[1]) == (0, 0):
            return Layer(name, "maxpool" if prim.endswith("max") else "sumpool",
                         (srcs[0],), (shapes[0],), out_shape, win[2:], st[2:], wd[2:],
                         (pad[2][0], pad[3][0], pad[2][1], pad[3][1]), detail=prim)
    if prim == "concatenate" and four and p.get("dimension") == 1 and all(ins):
        return Layer(name, "concat", tuple(srcs), tuple(shapes), out_shape,
                     detail="concatenate")
    if rl.classify(prim) in _POINT_CATS:
        return _point_layer(name, prim, srcs, shapes, out_shape)
    return _other(name, prim, srcs, shapes, out_shape)
