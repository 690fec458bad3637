"""The layer graph that spatial plans split: a list of `Layer`s in topological order.

A `Layer` is one CNN operator with the attributes interval arithmetic needs
(BBGraP's ShapeMap network, Section 3.1): kernel, stride, dilation, padding
[top, left, bottom, right], groups, NCHW shapes and the names of the layers it
reads ("input" for the model input). `required_box` maps a box of the output
(channel, row and column intervals) to the box of an input it reads.

Ops (`Layer.op`):
- "conv": convolution, grouped/depthwise through `groups`;
- "maxpool", "avgpool" (average over the window cells inside the input, i.e.
  ONNX count_include_pad=0), "sumpool" (JAX `reduce_window_sum`);
- "elementwise": one activation input, same shape out (relu, batch norm in
  inference form, bias, sigmoid, ...), per channel at most;
- "add": several inputs of the output's shape (add, mul, ...);
- "concat": inputs concatenated along channels;
- "upsample": nearest-neighbour resize by an integer factor (`stride` holds it);
- "other": anything else (global pooling, flatten, fully-connected, softmax):
  never split, computed whole on one device.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from jaxplace.errors import JaxplaceError
from jaxplace.spatial.intervals import Interval, intersect, window_input

Shape = tuple[int, int, int, int]  # N, C, H, W
Box = tuple[Interval, Interval, Interval]  # channels, rows, columns

WINDOW_OPS = frozenset({"conv", "maxpool", "avgpool", "sumpool"})
POINT_OPS = frozenset({"elementwise", "add"})
SPLITTABLE = WINDOW_OPS | POINT_OPS | {"concat", "upsample"}
AXES = ("c", "h", "w")


@dataclass(frozen=True)
class Layer:
    """One operator of a CNN (see the module docstring for `op`).

    Attributes:
        name: unique; other layers name it in `inputs`.
        op: the op kind.
        inputs: producer names ("input" is the model input), in operand order.
        in_shapes: NCHW shape of each input (for "other", whatever rank it has).
        out_shape: NCHW shape of the output.
        kernel, stride, dilation: (h, w); `stride` is the scale for "upsample".
        padding: (top, left, bottom, right).
        groups: feature groups of a convolution (1 dense, C_in depthwise).
        detail: the source op name (ONNX op type or JAX primitive), for reports.
        flops_hint: FLOPs of an "other" layer when the source knew them.
        param_bytes: parameter bytes of an "other" layer (a fully-connected
            layer's weights); a convolution's weight comes from `weight_shape`, and
            its `param_bytes` are the rest (the bias).
        matrix: an "other" layer that runs on the matrix units (Gemm, MatMul);
            convolutions always do.
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    in_shapes: tuple[tuple[int, ...], ...]
    out_shape: tuple[int, ...]
    kernel: tuple[int, int] = (1, 1)
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    groups: int = 1
    detail: str = ""
    flops_hint: float = field(default=0.0, compare=False)
    param_bytes: float = field(default=0.0, compare=False)
    matrix: bool = field(default=False, compare=False)

    @property
    def in_shape(self) -> tuple[int, ...]:
        return self.in_shapes[0] if self.in_shapes else ()

    @property
    def splittable(self) -> bool:
        return (self.op in SPLITTABLE and len(self.out_shape) == 4
                and all(len(s) == 4 for s in self.in_shapes))

    @property
    def weight_shape(self) -> tuple[int, int, int, int] | None:
        """OIHW weight shape of a convolution, else None."""
        if self.op != "conv":
            return None
        return (self.out_shape[1], self.in_shape[1] // self.groups, *self.kernel)

    def axis_size(self, axis: str) -> int:
        """Output extent along "c", "h" or "w"."""
        return int(self.out_shape[1 + AXES.index(axis)])

    def full_box(self) -> Box:
        return shape_box(self.out_shape)


def shape_box(shape: tuple[int, ...]) -> Box:
    """The whole of a tensor as a box; a tensor that is not NCHW is one column of
    prod(shape[1:]) channels."""
    if len(shape) == 4:
        _, c, h, w = shape
        return ((0, c), (0, h), (0, w))
    return ((0, math.prod(shape[1:])), (0, 1), (0, 1))


def input_full_box(layer: Layer, k: int) -> Box:
    return shape_box(layer.in_shapes[k])


def _channels_read(layer: Layer, k: int, out_c: Interval) -> Interval:
    """Input channels of input k read by output channels `out_c`."""
    a, b = out_c
    cin = layer.in_shapes[k][1]
    if b <= a:
        return (0, 0)
    if layer.op == "conv":
        if layer.groups == 1:
            return (0, cin)
        cout_g = layer.out_shape[1] // layer.groups
        cin_g = cin // layer.groups
        return ((a // cout_g) * cin_g, ((b - 1) // cout_g + 1) * cin_g)
    if layer.op == "concat":
        off = sum(s[1] for s in layer.in_shapes[:k])
        lo, hi = intersect((a, b), (off, off + cin))
        return (lo - off, hi - off) if hi > lo else (0, 0)
    return (a, b)  # pooling, pointwise, upsample: channel by channel


def required_box(layer: Layer, k: int, out: Box) -> tuple[Box, tuple[int, int, int, int]]:
    """The box of input k that output box `out` reads, and the padding (top, left,
    bottom, right) the device adds around it (non-zero only at the map's borders).
    An empty output box reads nothing: ((0,0),(0,0),(0,0))."""
    if any(iv[1] <= iv[0] for iv in out):
        return ((0, 0), (0, 0), (0, 0)), (0, 0, 0, 0)
    if not layer.splittable:  # computed whole: reads its inputs whole
        return input_full_box(layer, k), (0, 0, 0, 0)
    c_iv = _channels_read(layer, k, out[0])
    if c_iv[1] <= c_iv[0]:  # a concat input none of whose channels are wanted
        return ((0, 0), (0, 0), (0, 0)), (0, 0, 0, 0)
    _, _, hin, win = layer.in_shapes[k]
    if layer.op in WINDOW_OPS:
        h_iv, pt, pb = window_input(out[1], layer.kernel[0], layer.stride[0],
                                    layer.dilation[0], layer.padding[0], hin)
        w_iv, pl, pr = window_input(out[2], layer.kernel[1], layer.stride[1],
                                    layer.dilation[1], layer.padding[1], win)
        return (c_iv, h_iv, w_iv), (pt, pl, pb, pr)
    if layer.op == "upsample":
        sh, sw = layer.stride
        h_iv = (out[1][0] // sh, -(-out[1][1] // sh))
        w_iv = (out[2][0] // sw, -(-out[2][1] // sw))
        return (c_iv, h_iv, w_iv), (0, 0, 0, 0)
    return (c_iv, out[1], out[2]), (0, 0, 0, 0)


def box_volume(box: Box) -> int:
    return math.prod(max(b - a, 0) for a, b in box)


def box_intersect(a: Box, b: Box) -> Box:
    return tuple(intersect(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


def box_contains(outer: Box, inner: Box) -> bool:
    if box_volume(inner) == 0:
        return True
    return all(o[0] <= i[0] and i[1] <= o[1] for o, i in zip(outer, inner, strict=True))


def union_volume(boxes: list[Box]) -> int:
    """Cells covered by the union of boxes (coordinate compression; few boxes)."""
    boxes = [b for b in boxes if box_volume(b) > 0]
    if not boxes:
        return 0
    if len(boxes) == 1:
        return box_volume(boxes[0])
    cuts = [sorted({x for b in boxes for x in b[d]}) for d in range(3)]
    total = 0
    for c0, c1 in itertools.pairwise(cuts[0]):
        for h0, h1 in itertools.pairwise(cuts[1]):
            for w0, w1 in itertools.pairwise(cuts[2]):
                if any(b[0][0] <= c0 and c1 <= b[0][1] and b[1][0] <= h0 and h1 <= b[1][1]
                       and b[2][0] <= w0 and w1 <= b[2][1] for b in boxes):
                    total += (c1 - c0) * (h1 - h0) * (w1 - w0)
    return total


def layer_flops(layer: Layer, out: Box | None = None) -> float:
    """FLOPs to compute output box `out` (default: the whole output), batch included.
    Conventions of `jaxplace.importers.roofline`."""
    n = layer.out_shape[0] if layer.out_shape else 1
    if not layer.splittable:
        if layer.flops_hint:
            return float(layer.flops_hint)
        return float(math.prod(layer.out_shape) if layer.out_shape else 0)
    vol = n * box_volume(out or layer.full_box())
    if layer.op == "conv":
        return 2.0 * vol * (layer.in_shape[1] // layer.groups) * layer.kernel[0] * \
            layer.kernel[1]
    if layer.op in ("maxpool", "avgpool", "sumpool"):
        return float(vol * layer.kernel[0] * layer.kernel[1])
    if layer.op == "add":
        return float(vol * max(len(layer.inputs) - 1, 1))
    if layer.op in ("concat", "upsample"):
        return 0.0
    return float(vol)


def validate_layers(layers: list[Layer]) -> None:
    """Names unique, inputs defined before use: raises JaxplaceError naming the
    layer otherwise."""
    seen = {"input"}
    for i, layer in enumerate(layers):
        if layer.name in seen:
            raise JaxplaceError(f"duplicate layer name {layer.name!r}",
                                field=f"layers[{i}].name")
        for src in layer.inputs:
            if src not in seen:
                raise JaxplaceError(f"input {src!r} is not an earlier layer",
                                    field=f"layers[{i}].inputs")
        if len(layer.inputs) != len(layer.in_shapes):
            raise JaxplaceError("inputs and in_shapes differ in length",
                                field=f"layers[{i}]")
        seen.add(layer.name)
