"""Run a spatial plan, device part by device part, and reassemble the outputs.

Proof by execution: every device computes only its output box, with
`jax.lax.conv_general_dilated` / `jax.lax.reduce_window` on a local input that is
assembled from what it produced itself plus the pieces the plan's transfers
bring from other devices. Cells that neither supplies stay NaN, so a plan that
drops a needed halo gives NaN (and fails the comparison with `reference`, which
runs the unsplit model with the layers' own padding). Device parts are placed on
`jax.devices()[d % count]` (several with XLA_FLAGS=--xla_force_host_platform_
device_count=N); the exchange itself is simulated on the host with NumPy.

Supported ops: "conv", "maxpool", "avgpool", "sumpool", "elementwise" with
`detail` relu / leaky / sigmoid / bn (per-channel scale and shift) / identity,
"add", "concat", "upsample", and "other" with `detail` "gap" (global average
pool, always whole).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplace.spatial.layers import Box, Layer, box_intersect, box_volume, required_box
from jaxplace.spatial.plan import INPUT, Plan, Transfer, optimized_transfers


def init_params(layers: list[Layer], seed: int = 0) -> dict[str, dict[str, np.ndarray]]:
    """Random float32 weights: convolutions get `w` (OIHW) and `b`; "bn" layers
    `scale` and `shift`."""
    rng = np.random.default_rng(seed)
    params = {}
    for la in layers:
        if la.op == "conv":
            w = la.weight_shape
            fan_in = w[1] * w[2] * w[3]
            params[la.name] = {"w": (rng.standard_normal(w) / np.sqrt(fan_in)).astype(
                np.float32), "b": rng.standard_normal(w[0]).astype(np.float32) * 0.1}
        elif la.op == "elementwise" and la.detail.lower() in ("bn", "batchnormalization"):
            c = la.out_shape[1]
            params[la.name] = {"scale": rng.uniform(0.5, 1.5, c).astype(np.float32),
                               "shift": rng.standard_normal(c).astype(np.float32) * 0.1}
    return params


def _pad(x, pads, value):
    pt, pl, pb, pr = pads
    return lax.pad(x, np.asarray(value, x.dtype), [(0, 0, 0), (0, 0, 0), (pt, pb, 0),
                                                   (pl, pr, 0)])


def _pool(la: Layer, x, pads):
    """Pooling on a local input padded by `pads` (VALID afterwards)."""
    win = (1, 1, *la.kernel)
    strides = (1, 1, *la.stride)
    dil = (1, 1, *la.dilation)
    if la.op == "maxpool":  # NaN-propagating, as numpy's max (XLA's max drops NaN)
        top = lax.reduce_window(_pad(x, pads, -np.inf), -jnp.inf, lax.max, win, strides,
                                "VALID", window_dilation=dil)
        nans = lax.reduce_window(_pad(jnp.isnan(x).astype(x.dtype), pads, 0.0), 0.0,
                                 lax.add, win, strides, "VALID", window_dilation=dil)
        return jnp.where(nans > 0, jnp.nan, top)
    total = lax.reduce_window(_pad(x, pads, 0.0), 0.0, lax.add, win, strides, "VALID",
                              window_dilation=dil)
    if la.op == "sumpool":
        return total
    ones = jnp.ones((1, 1, *x.shape[2:]), x.dtype)
    count = lax.reduce_window(_pad(ones, pads, 0.0), 0.0, lax.add, win, strides, "VALID",
                              window_dilation=dil)
    return total / count


def _conv(la: Layer, p, x, pads, out_c):
    c0, c1 = out_c
    if la.groups == 1:
        w, off, groups = p["w"][c0:c1], c0, 1
    else:
        cout_g = la.out_shape[1] // la.groups
        g0, g1 = c0 // cout_g, (c1 - 1) // cout_g
        w, off, groups = p["w"][g0 * cout_g:(g1 + 1) * cout_g], g0 * cout_g, g1 - g0 + 1
    y = lax.conv_general_dilated(_pad(x, pads, 0.0), w, la.stride, "VALID",
                                 rhs_dilation=la.dilation, feature_group_count=groups)
    y = y[:, c0 - off:c1 - off]
    return y + p["b"][c0:c1][None, :, None, None]


def _elementwise(la: Layer, p, x, out_c):
    kind = la.detail.lower()
    if kind in ("relu", "max"):
        return jax.nn.relu(x)
    if kind in ("leaky", "leakyrelu"):
        return jax.nn.leaky_relu(x, 0.1)
    if kind in ("sigmoid", "logistic"):
        return jax.nn.sigmoid(x)
    if kind in ("bn", "batchnormalization"):
        c0, c1 = out_c
        return x * p["scale"][c0:c1][None, :, None, None] + p["shift"][c0:c1][None, :, None,
                                                                                None]
    if kind in ("identity", ""):
        return x
    raise NotImplementedError(f"elementwise {la.detail!r} is not executable")


def apply_part(la: Layer, p: dict, inputs: list, pads, out: Box):
    """Output box `out` of `la` from local inputs (each the required box of that
    input, see `required_box`) and the layer's parameters `p`; `pads` is the
    padding of input 0's box."""
    if la.op == "conv":
        return _conv(la, p, inputs[0], pads, out[0])
    if la.op in ("maxpool", "avgpool", "sumpool"):
        return _pool(la, inputs[0], pads)
    if la.op == "elementwise":
        return _elementwise(la, p, inputs[0], out[0])
    if la.op == "add":
        y = inputs[0]
        for x in inputs[1:]:
            y = y + x
        return y
    if la.op == "concat":
        return jnp.concatenate([x for x in inputs if x.shape[1]], axis=1)
    if la.op == "upsample":
        sh, sw = la.stride
        box, _ = required_box(la, 0, out)
        y = jnp.repeat(jnp.repeat(inputs[0], sh, axis=2), sw, axis=3)
        h0, w0 = out[1][0] - box[1][0] * sh, out[2][0] - box[2][0] * sw
        return y[:, :, h0:h0 + out[1][1] - out[1][0], w0:w0 + out[2][1] - out[2][0]]
    if la.op == "other" and la.detail == "gap":
        return jnp.mean(inputs[0], axis=(2, 3), keepdims=True)
    raise NotImplementedError(f"op {la.op!r} ({la.detail}) is not executable")


#: `apply_part` compiled per (layer, padding, box) and shapes: one XLA program per
#: device part instead of one per operation (JAX's own cache keeps them).
apply_part_jit = jax.jit(apply_part, static_argnums=(0, 3, 4))


def reference(layers: list[Layer], params: dict, x: np.ndarray, *,
              every_layer: bool = False) -> dict[str, np.ndarray]:
    """The unsplit model, every layer with its own global padding: the model's
    outputs (with `every_layer`, every layer's output)."""
    env = {INPUT: jnp.asarray(x)}
    for la in layers:
        ins = [env[s] for s in la.inputs]
        pt, pl, pb, pr = la.padding
        if la.op == "conv":
            p = params[la.name]
            y = lax.conv_general_dilated(ins[0], p["w"], la.stride, [(pt, pb), (pl, pr)],
                                         rhs_dilation=la.dilation,
                                         feature_group_count=la.groups)
            env[la.name] = y + p["b"][None, :, None, None]
        else:
            env[la.name] = apply_part(la, params.get(la.name, {}), ins, la.padding,
                                      la.full_box())
    read = set() if every_layer else {s for la in layers for s in la.inputs}
    return {la.name: np.asarray(env[la.name]) for la in layers if la.name not in read}


def _assemble(store, transfers, tensor: str, dev: int, box: Box, batch: int) -> np.ndarray:
    """Device `dev`'s local copy of `box` of `tensor`: its own produced cells plus the
    pieces received; NaN where neither supplies a cell."""
    shape = (batch, *(b - a for a, b in box))
    buf = np.full(shape, np.nan, np.float32)

    def copy_from(src: int, piece: Box):
        have = store[src].get(tensor)
        if have is None:
            return
        hbox, data = have
        cut = box_intersect(box_intersect(piece, hbox), box)
        if box_volume(cut) == 0:
            return
        dst_sl = tuple(slice(a - b[0], e - b[0]) for (a, e), b in zip(cut, box, strict=True))
        src_sl = tuple(slice(a - b[0], e - b[0]) for (a, e), b in zip(cut, hbox,
                                                                         strict=True))
        buf[(slice(None), *dst_sl)] = data[(slice(None), *src_sl)]

    own = store[dev].get(tensor)
    if own is not None:
        copy_from(dev, own[0])
    for t in transfers:
        if t.tensor == tensor and t.dst == dev:
            for piece in t.boxes:
                copy_from(t.src, piece)
    return buf


def execute(plan: Plan, params: dict, x: np.ndarray,
            transfers: list[Transfer] | None = None, *,
            every_layer: bool = False) -> dict[str, np.ndarray]:
    """Run `plan` part by part with `transfers` (default: the optimized ones) and
    return each model output as reassembled on the host. With `every_layer`, also
    every other layer's output, pieced together from all devices' parts (a check,
    not a transfer of the plan), so a wrong cell nobody reads later still shows."""
    if transfers is None:
        transfers = optimized_transfers(plan)
    devices = jax.devices()
    nd = plan.num_devices
    store: list[dict[str, tuple[Box, np.ndarray]]] = [{} for _ in range(nd)]
    x = np.asarray(x, np.float32)
    store[plan.host][INPUT] = (tuple((0, s) for s in x.shape[1:]), x)
    for la, pl in zip(plan.layers, plan.placements, strict=True):
        for dev, out in enumerate(pl.out_boxes(la, nd)):
            if box_volume(out) == 0:
                continue
            ins, pads = [], (0, 0, 0, 0)
            for k, src in enumerate(la.inputs):
                box, pad = required_box(la, k, out)
                if k == 0:
                    pads = pad
                local = _assemble(store, transfers, src, dev, box, la.in_shapes[k][0])
                ins.append(jax.device_put(local, devices[dev % len(devices)]))
            y = apply_part_jit(la, params.get(la.name, {}), ins, pads, out)
            store[dev][la.name] = (out, np.asarray(y, np.float32))
    result = {}
    if every_layer:
        for la in plan.layers:
            full = np.full(la.out_shape, np.nan, np.float32)
            for d in range(nd):
                if la.name in store[d]:
                    box, data = store[d][la.name]
                    full[(slice(None), *(slice(a, b) for a, b in box))] = data
            result[la.name] = full
    for name in plan.outputs():
        la = plan.layers[plan.index()[name]]
        result[name] = _assemble(store, transfers, name, plan.host, la.full_box(),
                                 la.out_shape[0])
    return result
