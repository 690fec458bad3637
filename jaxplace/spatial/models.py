"""Layer graphs built from published layer shapes (no weights), and a small
builder for hand-made CNNs.

`MODELS` maps a name to a builder `f(size, batch=1) -> list[Layer]`:
"resnet18", "resnet50" (He et al., 2016, Table 1; v1.5: stride on the 3x3
convolution), "vgg16" (Simonyan and Zisserman, 2015, configuration D) and "yolo"
(YOLOv3-tiny, Redmon and Farhadi, 2018, darknet cfg: 13 convolutions, 6
max-pools, a route, an upsample and two detection heads). Batch norm is folded
into the convolutions and ReLU/leaky ReLU fused into them, as inference runtimes
do; residual adds include their ReLU.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxplace.errors import JaxplaceError
from jaxplace.spatial.intervals import output_size
from jaxplace.spatial.layers import Layer


class NetBuilder:
    """Appends layers and tracks shapes: `b = NetBuilder(3, 224, 224)`,
    `x = b.conv("input", 64, 7, stride=2, pad=3)`, ..., `b.layers`."""

    def __init__(self, channels: int, height: int, width: int, batch: int = 1):
        self.layers: list[Layer] = []
        self.shapes: dict[str, tuple[int, ...]] = {"input": (batch, channels, height,
                                                              width)}

    def _name(self, name: str | None, op: str) -> str:
        return name or f"{op}{len(self.layers)}"

    def _add(self, layer: Layer) -> str:
        self.layers.append(layer)
        self.shapes[layer.name] = layer.out_shape
        return layer.name

    def _window(self, op, x, cout, kernel, stride, pad, dilation, groups, name, detail):
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
        if pad is None:  # "same" for odd kernels at stride 1
            pad = ((kh - 1) * dh // 2, (kw - 1) * dw // 2)
        if isinstance(pad, int):
            pad = (pad, pad, pad, pad)
        elif len(pad) == 2:
            pad = (pad[0], pad[1], pad[0], pad[1])
        n, cin, h, w = self.shapes[x]
        ho = output_size(h, kh, sh, dh, pad[0], pad[2])
        wo = output_size(w, kw, sw, dw, pad[1], pad[3])
        if ho < 1 or wo < 1:
            raise JaxplaceError(f"{op} on a {h}x{w} map gives no output rows",
                                field=name or op)
        return self._add(Layer(self._name(name, op), op, (x,), (self.shapes[x],),
                               (n, cout if op == "conv" else cin, ho, wo), (kh, kw),
                               (sh, sw), (dh, dw), tuple(pad), groups, detail))

    def conv(self, x: str, cout: int, kernel=3, stride=1, pad=None, dilation=1,
             groups: int = 1, name: str | None = None, detail: str = "conv") -> str:
        return self._window("conv", x, cout, kernel, stride, pad, dilation, groups, name,
                            detail)

    def pool(self, x: str, kernel=2, stride=None, pad=0, kind: str = "max",
             name: str | None = None, dilation=1) -> str:
        return self._window(f"{kind}pool", x, 0, kernel, kernel if stride is None else stride,
                            pad, dilation, 1, name, f"{kind}pool")

    def act(self, x: str, detail: str = "relu", name: str | None = None) -> str:
        s = self.shapes[x]
        return self._add(Layer(self._name(name, detail), "elementwise", (x,), (s,), s,
                               detail=detail))

    def add(self, *xs: str, name: str | None = None, detail: str = "add") -> str:
        s = self.shapes[xs[0]]
        if any(self.shapes[x] != s for x in xs):
            raise JaxplaceError(f"add of different shapes: {[self.shapes[x] for x in xs]}",
                                field=name or "add")
        return self._add(Layer(self._name(name, "add"), "add", tuple(xs),
                               tuple(self.shapes[x] for x in xs), s, detail=detail))

    def concat(self, *xs: str, name: str | None = None) -> str:
        shapes = tuple(self.shapes[x] for x in xs)
        n, _, h, w = shapes[0]
        if any((s[0], s[2], s[3]) != (n, h, w) for s in shapes):
            raise JaxplaceError(f"concat of maps of different sizes: {list(shapes)}",
                                field=name or "concat")
        return self._add(Layer(self._name(name, "concat"), "concat", tuple(xs), shapes,
                               (n, sum(s[1] for s in shapes), h, w), detail="concat"))

    def upsample(self, x: str, scale: int = 2, name: str | None = None) -> str:
        n, c, h, w = self.shapes[x]
        return self._add(Layer(self._name(name, "upsample"), "upsample", (x,),
                               (self.shapes[x],), (n, c, h * scale, w * scale),
                               stride=(scale, scale), detail="nearest"))

    def other(self, x: str, out_shape, detail: str, flops: float = 0.0,
              param_bytes: float = 0.0, name: str | None = None) -> str:
        return self._add(Layer(self._name(name, detail), "other", (x,), (self.shapes[x],),
                               tuple(out_shape), detail=detail, flops_hint=flops,
                               param_bytes=param_bytes, matrix=param_bytes > 0
                               and detail.startswith("fc")))

    def head(self, x: str, classes: int = 1000) -> str:
        """Global average pool and a fully-connected classifier (kept whole)."""
        n, c, h, w = self.shapes[x]
        g = self.other(x, (n, c, 1, 1), "gap", flops=float(n * c * h * w))
        return self.other(g, (n, classes), "fc", flops=2.0 * n * c * classes,
                          param_bytes=4.0 * c * classes)


def _resnet(size: int, batch: int, blocks, bottleneck: bool) -> list[Layer]:
    b = NetBuilder(3, size, size, batch)
    x = b.conv("input", 64, 7, 2, 3, name="stem")
    x = b.pool(x, 3, 2, 1, name="stem_pool")
    cin = 64
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True)):
        for i in range(count):
            s = 2 if (i == 0 and stage > 0) else 1
            cout = width * 4 if bottleneck else width
            p = f"s{stage + 1}b{i + 1}"
            if bottleneck:
                y = b.conv(x, width, 1, 1, 0, name=f"{p}_c1")
                y = b.conv(y, width, 3, s, 1, name=f"{p}_c2")
                y = b.conv(y, cout, 1, 1, 0, name=f"{p}_c3")
            else:
                y = b.conv(x, width, 3, s, 1, name=f"{p}_c1")
                y = b.conv(y, width, 3, 1, 1, name=f"{p}_c2")
            sc = b.conv(x, cout, 1, s, 0, name=f"{p}_down") if (s != 1 or cin != cout) else x
            x = b.add(y, sc, name=f"{p}_add", detail="add+relu")
            cin = cout
    b.head(x)
    return b.layers


def resnet18(size: int = 224, batch: int = 1) -> list[Layer]:
    return _resnet(size, batch, (2, 2, 2, 2), bottleneck=False)


def resnet50(size: int = 224, batch: int = 1) -> list[Layer]:
    return _resnet(size, batch, (3, 4, 6, 3), bottleneck=True)


def vgg16(size: int = 224, batch: int = 1) -> list[Layer]:
    b = NetBuilder(3, size, size, batch)
    x = "input"
    for stage, (count, width) in enumerate(((2, 64), (2, 128), (3, 256), (3, 512),
                                            (3, 512)), start=1):
        for i in range(count):
            x = b.conv(x, width, 3, 1, 1, name=f"conv{stage}_{i + 1}")
        x = b.pool(x, 2, 2, name=f"pool{stage}")
    n, c, h, w = b.shapes[x]
    f = c * h * w
    x = b.other(x, (n, 4096), "fc6", flops=2.0 * n * f * 4096, param_bytes=4.0 * f * 4096)
    x = b.other(x, (n, 4096), "fc7", flops=2.0 * n * 4096 * 4096,
                param_bytes=4.0 * 4096 * 4096)
    b.other(x, (n, 1000), "fc8", flops=2.0 * n * 4096 * 1000, param_bytes=4.0 * 4096 * 1000)
    return b.layers


def yolo(size: int = 416, batch: int = 1) -> list[Layer]:
    """YOLOv3-tiny (darknet yolov3-tiny.cfg) at size x size; size a multiple of 32."""
    b = NetBuilder(3, size, size, batch)
    x = "input"
    route_a = None
    for i, width in enumerate((16, 32, 64, 128, 256, 512)):
        x = b.conv(x, width, 3, 1, 1, name=f"conv{i}", detail="conv+leaky")
        if width == 256:
            route_a = x
        if width == 512:  # darknet: size 2 stride 1, padding on the bottom/right
            x = b.pool(x, 2, 1, (0, 0, 1, 1), name=f"pool{i}")
        else:
            x = b.pool(x, 2, 2, name=f"pool{i}")
    x = b.conv(x, 1024, 3, 1, 1, name="conv6", detail="conv+leaky")
    route_b = b.conv(x, 256, 1, 1, 0, name="conv7", detail="conv+leaky")
    y = b.conv(route_b, 512, 3, 1, 1, name="conv8", detail="conv+leaky")
    b.conv(y, 255, 1, 1, 0, name="yolo1", detail="conv")
    z = b.conv(route_b, 128, 1, 1, 0, name="conv9", detail="conv+leaky")
    z = b.upsample(z, 2, name="up")
    z = b.concat(z, route_a, name="route")
    z = b.conv(z, 256, 3, 1, 1, name="conv10", detail="conv+leaky")
    b.conv(z, 255, 1, 1, 0, name="yolo2", detail="conv")
    return b.layers


MODELS: dict[str, Callable[..., list[Layer]]] = {
    "resnet18": resnet18, "resnet50": resnet50, "vgg16": vgg16, "yolo": yolo,
}


def build_model(name: str, size: int, batch: int = 1) -> list[Layer]:
    """A built-in model by name at size x size input."""
    key = name.lower()
    if key not in MODELS:
        raise JaxplaceError(f"unknown model {name!r}; built-in: {', '.join(MODELS)}",
                            field="MODEL")
    if size < 32:
        raise JaxplaceError(f"must be at least 32 pixels, got {size}", field="--size")
    return MODELS[key](size, batch)
