"""Latency of a spatial plan on a cluster.

Compute: each device's part of a layer costs its roofline time on the device's
profile by the rule `jaxplace.importers.from_onnx` costs the whole op with
(`jaxplace.importers.roofline.op_time`: max(FLOPs / peak, bytes / memory bandwidth)
+ launch overhead; convolutions and Gemm/MatMul on the matrix units at the fp32
rate, everything else on the vector units), counting the FLOPs of its output box,
the bytes of the input boxes it reads and of its output, and the weights it holds
(a channel split holds 1/N of a convolution's weights and bias; a row or column
split all of them). On a whole layer the two agree.
Transfers: latency + bytes / bandwidth over the cluster's directed link.

`simulate` runs the plan event by event: a device computes its layers in order;
a layer starts when the device is free and all its inputs have arrived; each
device receives one transfer at a time (one link in), in the order the data
became ready; sending does not stall computing (DMA). This is the latency the
CLI and the benchmark report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.cluster import Cluster
from jaxplace.importers.roofline import classify, op_time
from jaxplace.spatial.layers import Box, Layer, box_volume, layer_flops, required_box
from jaxplace.spatial.plan import INPUT, Plan, Transfer, optimized_transfers

DTYPE = "fp32"


def part_time(layer: Layer, out: Box, profile, itemsize: int = 4) -> float:
    """Seconds for one device to compute output box `out` of `layer` (0 if empty)."""
    if box_volume(out) == 0:
        return 0.0
    n = layer.out_shape[0] if layer.out_shape else 1
    if not layer.splittable:
        if classify(layer.detail) == "view":  # metadata only, as in the importer
            return 0.0
        moved = (sum(float(np.prod(s)) for s in layer.in_shapes)
                 + float(np.prod(layer.out_shape))) * itemsize + layer.param_bytes
        return op_time(layer_flops(layer), moved, profile, DTYPE, matrix=layer.matrix)
    moved = box_volume(out) * n
    for k in range(len(layer.inputs)):
        box, _ = required_box(layer, k, out)
        moved += box_volume(box) * n
    moved *= itemsize
    w = layer.weight_shape
    if w is not None:
        oc = out[0][1] - out[0][0]
        moved += oc * w[1] * w[2] * w[3] * itemsize + layer.param_bytes * oc / w[0]
    return op_time(layer_flops(layer, out), moved, profile, DTYPE,
                   matrix=layer.op == "conv")


def device_speeds(layer: Layer, cluster: Cluster, itemsize: int = 4) -> list[float]:
    """Relative speed of each device on the whole layer (1 / roofline time)."""
    full = layer.full_box()
    return [1.0 / max(part_time(layer, full, d.profile, itemsize), 1e-15)
            for d in cluster.devices]


def compute_times(plan: Plan, cluster: Cluster) -> np.ndarray:
    """(layers, devices) seconds of compute."""
    t = np.zeros((len(plan.layers), plan.num_devices))
    for i, (layer, pl) in enumerate(zip(plan.layers, plan.placements, strict=True)):
        for d, box in enumerate(pl.out_boxes(layer, plan.num_devices)):
            t[i, d] = part_time(layer, box, cluster.devices[d].profile, plan.itemsize)
    return t


@dataclass(frozen=True)
class Timing:
    """Result of `simulate`.

    Attributes:
        latency: seconds until the host holds every output.
        finish: (layers, devices) finish time of each device's part (nan: idle).
        compute: (layers, devices) compute seconds.
        comm_bytes: bytes moved in total.
    """

    latency: float
    finish: np.ndarray
    compute: np.ndarray
    comm_bytes: float


def simulate(plan: Plan, cluster: Cluster, transfers: list[Transfer] | None = None
             ) -> Timing:
    """Event-by-event latency of `plan` (see the module docstring)."""
    if cluster.num_devices != plan.num_devices:
        raise ValueError("cluster and plan have different device counts")
    if transfers is None:
        transfers = optimized_transfers(plan)
    comp = compute_times(plan, cluster)
    index = plan.index()
    nd = plan.num_devices
    finish = np.full((len(plan.layers), nd), np.nan)
    ready = {}  # (tensor, device) -> time the device's own part is done

    def own_ready(tensor: str, dev: int) -> float:
        return 0.0 if tensor == INPUT else ready.get((tensor, dev), 0.0)

    by_dst: dict[int, list[Transfer]] = {}
    for t in transfers:
        by_dst.setdefault(t.dst, []).append(t)
    recv_free = [0.0] * nd
    dev_free = [0.0] * nd
    arrived: dict[tuple[str, int], float] = {}  # (tensor, dst) -> all pieces in

    def arrive(tensor: str, dst: int) -> float:
        """Time all transfers of `tensor` into `dst` are in, running them now in
        source-ready order if they have not run yet."""
        key = (tensor, dst)
        if key in arrived:
            return arrived[key]
        pending = sorted((t for t in by_dst.get(dst, []) if t.tensor == tensor),
                         key=lambda t: own_ready(t.tensor, t.src))
        end = 0.0
        for t in pending:
            start = max(recv_free[dst], own_ready(t.tensor, t.src))
            recv_free[dst] = start + cluster.transfer_time(t.nbytes, t.src, dst)
            end = max(end, recv_free[dst])
        arrived[key] = end
        return end

    for i, (layer, pl) in enumerate(zip(plan.layers, plan.placements, strict=True)):
        for d, box in enumerate(pl.out_boxes(layer, nd)):
            if box_volume(box) == 0:
                continue
            start = dev_free[d]
            for src in layer.inputs:
                start = max(start, own_ready(src, d), arrive(src, d))
            finish[i, d] = start + comp[i, d]
            dev_free[d] = finish[i, d]
            ready[(layer.name, d)] = finish[i, d]
    done = 0.0
    for name in plan.outputs():
        i = index[name]
        done = max(done, np.nanmax(finish[i]), arrive(name, plan.host))
    return Timing(float(done), finish, comp, float(sum(t.nbytes for t in transfers)))
