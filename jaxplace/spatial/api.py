"""One call from a layer graph and a cluster to a reported spatial plan.

`plan_spatial` compares, by simulated latency (`cost.simulate`):
- "one": the whole model on the fastest device (the host);
- "spatial": every splittable layer split over all devices, axes chosen among
  h, w, c (`SpatialProblem.choose_axes`);
- "auto": axes chosen among h, w, c and "whole on the host" per layer;
- "hybrid": the best cut of `hybrid_sweep` (split prefix, whole suffix);
and keeps the fastest as `plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.cluster import Cluster
from jaxplace.spatial.cost import simulate
from jaxplace.spatial.layers import AXES, Layer, box_volume, required_box, validate_layers
from jaxplace.spatial.optimize import ALL_AXES, SpatialProblem, best_hybrid
from jaxplace.spatial.plan import (
    INPUT,
    OUTPUT,
    Plan,
    cases,
    initial_transfers,
    optimized_transfers,
    sync_points,
)


@dataclass
class SpatialResult:
    """What `plan_spatial` found (latencies in seconds, sizes in bytes)."""

    problem: SpatialProblem
    plan: Plan
    kind: str
    latency: float
    latency_one: float
    latency_spatial: float
    latency_auto: float
    hybrid: dict  # best cut: {"cut", "latency", "axes"}
    hybrid_curve: list[float]  # latency per cut 0..layers
    halo_initial: float  # bytes between layers, initial (full sync) plan
    halo_optimized: float  # bytes between layers after the optimizer
    io_bytes: float  # input scatter + output gather of the chosen plan
    syncs_initial: int
    syncs_optimized: int
    cases: dict
    unsupported: list[str]
    impossible: list[dict]


def _between_layers(transfers) -> float:
    return float(sum(t.nbytes for t in transfers
                     if t.tensor != INPUT and t.consumer != OUTPUT))


def plan_spatial(layers: Sequence[Layer], cluster: Cluster, *,
                 axes: Sequence[str | None] = ALL_AXES, shares: str = "speed",
                 hybrid: bool = True) -> SpatialResult:
    """Choose and report a spatial plan of `layers` on `cluster` (module docstring).
    `axes` limits the split axes (e.g. ("c",) for BBGraP's channel-only runtime)."""
    layers = list(layers)
    validate_layers(layers)
    sp = SpatialProblem(layers, cluster, shares=shares)
    split_axes = tuple(a for a in axes if a is not None) or (None,)
    n = len(layers)
    cands = {"one": tuple([None] * n)}
    cands["spatial"] = sp.choose_axes(split_axes)
    cands["auto"] = sp.choose_axes(tuple(axes) + ((None,) if None not in axes else ()))
    curve, best_h = [], {"cut": 0, "latency": None, "axes": cands["one"]}
    if hybrid:
        sweep = sp.hybrid_sweep(split_axes)
        curve = [r["latency"] for r in sweep]
        best_h = best_hybrid(sweep)
        cands["hybrid"] = best_h["axes"]
    lat = {k: sp.latency(v) for k, v in cands.items()}
    if not hybrid:
        best_h["latency"] = lat["one"]
    kind = min(lat, key=lambda k: (lat[k], ["one", "spatial", "auto", "hybrid"].index(k)))
    plan = sp.plan(cands[kind])
    spatial_plan = sp.plan(cands["spatial"])
    init = initial_transfers(spatial_plan)
    opt = optimized_transfers(spatial_plan)
    chosen = optimized_transfers(plan)
    impossible = []
    for la in layers:
        if la.splittable:
            short = [a for a in AXES if la.axis_size(a) < sp.nd]
            if short:
                impossible.append({"layer": la.name, "axes": short,
                                   "sizes": {a: la.axis_size(a) for a in short}})
    return SpatialResult(
        problem=sp, plan=plan, kind=kind, latency=lat[kind], latency_one=lat["one"],
        latency_spatial=lat["spatial"], latency_auto=lat["auto"],
        hybrid={"cut": best_h["cut"], "latency": best_h["latency"],
                "axes": list(best_h["axes"])},
        hybrid_curve=curve, halo_initial=_between_layers(init),
        halo_optimized=_between_layers(opt),
        io_bytes=float(sum(t.nbytes for t in chosen)) - _between_layers(chosen),
        syncs_initial=sync_points(init), syncs_optimized=sync_points(opt),
        cases=cases(spatial_plan),
        unsupported=[la.name for la in layers if not la.splittable],
        impossible=impossible)


def weight_bytes(plan: Plan) -> list[float]:
    """(devices,) parameter bytes each device holds: a convolution's weights for the
    output channels it computes (all of them for a row or column split), and the
    parameters of the layers it runs whole. Activations are not counted."""
    held = [0.0] * plan.num_devices
    for la, pl in zip(plan.layers, plan.placements, strict=True):
        for dev, box in enumerate(pl.out_boxes(la, plan.num_devices)):
            if not box_volume(box):
                continue
            w = la.weight_shape
            if w is not None:
                oc = box[0][1] - box[0][0]
                held[dev] += oc * w[1] * w[2] * w[3] * plan.itemsize + \
                    la.param_bytes * oc / w[0]
            else:
                held[dev] += la.param_bytes
    return held


def layer_rows(plan: Plan, cluster: Cluster) -> list[dict]:
    """Per layer: the JSON fields of the plan file (see `to_json`)."""
    transfers = optimized_transfers(plan)
    halo: dict[str, float] = {}
    for t in transfers:
        first = t.consumer.split(",")[0]
        halo[first] = halo.get(first, 0.0) + t.nbytes
    timing = simulate(plan, cluster, transfers)
    rows = []
    for i, (la, pl) in enumerate(zip(plan.layers, plan.placements, strict=True)):
        devs = []
        boxes = pl.out_boxes(la, plan.num_devices)
        if pl.axis is None:
            devs.append({"device": cluster.names[pl.owner], "out": None, "in": None})
        else:
            d = AXES.index(pl.axis)
            for dev, box in enumerate(boxes):
                entry = {"device": cluster.names[dev], "out": list(box[d]) if box_volume(box)
                         else [0, 0], "in": [0, 0]}
                if box_volume(box):
                    entry["in"] = list(required_box(la, 0, box)[0][d])
                    if len(la.inputs) > 1:
                        entry["inputs"] = [list(required_box(la, k, box)[0][d])
                                           for k in range(len(la.inputs))]
                devs.append(entry)
        rows.append({
            "name": la.name, "op": la.op, "detail": la.detail, "axis": pl.axis,
            "kernel": list(la.kernel), "stride": list(la.stride),
            "dilation": list(la.dilation), "padding": list(la.padding),
            "groups": la.groups, "inputs": list(la.inputs),
            "input_shape": list(la.in_shape), "output_shape": list(la.out_shape),
            "devices": devs, "halo_bytes": halo.get(la.name, 0.0),
            "compute_s": float(timing.compute[i].max()),
            "finish_s": _finish(timing.finish[i]),
        })
    return rows


def _finish(row) -> float:
    done = row[~np.isnan(row)]
    return float(done.max()) if done.size else 0.0


def to_json(result: SpatialResult, source: str) -> dict:
    """The plan file: `layers` (per layer: name, op, axis, kernel, stride, dilation
    as [h, w], padding [top, left, bottom, right], input_shape, output_shape NCHW,
    devices with `out` and `in` as [start, end) along the axis, `in` in unpadded
    input coordinates; null for a layer run whole), `latency`, `latency_one` and
    the comparison figures."""
    sp = result.problem
    cl = sp.cluster
    return {
        "source": source, "cluster": cl.name, "devices": cl.names,
        "host": cl.names[sp.host], "plan": result.kind, "shares": sp.shares,
        "latency": result.latency, "latency_one": result.latency_one,
        "latency_spatial": result.latency_spatial, "latency_auto": result.latency_auto,
        "speedup": result.latency_one / result.latency if result.latency else None,
        "hybrid": {"cut": result.hybrid["cut"], "latency": result.hybrid["latency"],
                   "cut_layer": (sp.layers[result.hybrid["cut"]].name
                                 if result.hybrid["cut"] < len(sp.layers) else None),
                   "latency_per_cut": result.hybrid_curve},
        "halo_bytes_initial": result.halo_initial,
        "halo_bytes_optimized": result.halo_optimized,
        "io_bytes": result.io_bytes,
        "sync_points_initial": result.syncs_initial,
        "sync_points_optimized": result.syncs_optimized,
        "cases": result.cases,
        "unsupported": result.unsupported,
        "impossible": result.impossible,
        "weight_bytes": weight_bytes(result.plan),
        "memory": [d.memory for d in cl.devices],
        "layers": layer_rows(result.plan, cl),
    }
