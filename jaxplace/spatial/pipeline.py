"""Pipeline-only baseline: contiguous stages of the layer order, one device each.

Devices are taken fastest first (by their time on the whole model); stage s runs
on the s-th. `best_pipeline` is a DP over (layers done, stages used) that
minimises the period (the slowest stage: its compute plus receiving every tensor
that crosses its starting cut, skip connections included), at most one stage per
device. For that split it reports the latency of one input (the sum of the stage
times, plus returning the output to the first device) and the period (1 /
throughput). With one input at a time a pipeline cannot beat the fastest device
alone; it raises throughput, which is what it is for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.cluster import Cluster
from jaxplace.spatial.cost import part_time
from jaxplace.spatial.layers import Layer, shape_box
from jaxplace.spatial.plan import INPUT


@dataclass(frozen=True)
class PipelineResult:
    """cuts: stage boundaries (layer indices, first 0, last len(layers));
    devices: device index per stage; latency and period in seconds."""

    cuts: tuple[int, ...]
    devices: tuple[int, ...]
    latency: float
    period: float


def _tensor_bytes(layers: list[Layer], itemsize: int) -> dict[str, float]:
    out = {}
    for la in layers:
        for src, shape in zip(la.inputs, la.in_shapes, strict=True):
            box = shape_box(tuple(shape))
            out[src] = float(shape[0] * np.prod([b - a for a, b in box]) * itemsize)
    return out


def best_pipeline(layers: list[Layer], cluster: Cluster, itemsize: int = 4
                  ) -> PipelineResult:
    layers = list(layers)
    n, nd = len(layers), cluster.num_devices
    times = np.array([[part_time(la, la.full_box(), d.profile, itemsize) for la in layers]
                      for d in cluster.devices])  # (devices, layers)
    order = [int(i) for i in np.argsort(times.sum(axis=1), kind="stable")]
    prefix = np.concatenate([np.zeros((nd, 1)), np.cumsum(times, axis=1)], axis=1)
    pos = {la.name: i for i, la in enumerate(layers)}
    last_use: dict[str, int] = {}
    for j, la in enumerate(layers):
        for s in la.inputs:
            last_use[s] = j
    size = _tensor_bytes(layers, itemsize)
    # bytes crossing cut c (between layer c-1 and c): produced before c, read at >= c
    cross = np.zeros(n + 1)
    for name, last in last_use.items():
        first = 0 if name == INPUT else pos[name] + 1
        if name != INPUT:
            cross[first:last + 1] += size[name]
    out_bytes = sum(size.get(la.name, float(np.prod(la.out_shape)) * itemsize)
                    for la in layers if la.name not in last_use)

    def stage(s: int, a: int, b: int) -> float:
        dev = order[s]
        t = prefix[dev, b] - prefix[dev, a]
        if s > 0:
            t += cluster.transfer_time(cross[a], order[s - 1], dev)
        return t

    inf = float("inf")
    # best[s][b] = (period, latency, cuts) with layers [0, b) in stages 0..s
    best = [[(inf, inf, ())] * (n + 1) for _ in range(nd)]
    for b in range(1, n + 1):
        t = stage(0, 0, b)
        best[0][b] = (t, t, (0, b))
    for s in range(1, nd):
        for b in range(s + 1, n + 1):
            cand = best[s][b]
            for a in range(s, b):
                p, lat, cuts = best[s - 1][a]
                if p == inf:
                    continue
                t = stage(s, a, b)
                key = (max(p, t), lat + t, cuts + (b,))
                if key[:2] < cand[:2]:
                    cand = key
            best[s][b] = cand
    period, lat, cuts, s_used = inf, inf, (), 0
    for s in range(nd):
        p, la_, c = best[s][n]
        back = cluster.transfer_time(out_bytes, order[s], order[0])
        if (p, la_ + back) < (period, lat):
            period, lat, cuts, s_used = p, la_ + back, c, s + 1
    return PipelineResult(tuple(cuts), tuple(order[:s_used]), float(lat), float(period))
