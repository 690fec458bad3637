"""Predicted forward and backward times of pipeline stages from a device profile.

The forward of an op is the importers' roofline time (`roofline.op_time`: max(FLOPs /
peak, bytes / memory bandwidth) + the launch overhead; views are free), the number the
planner's graph holds as `work`. Its backward computes two products per matrix op
(the input and the weight gradient) and reads and writes about twice the bytes, so it
is costed as max(2 FLOPs / peak, 2 bytes / bandwidth) + the profile's backward launch
overhead (`backward_launch_s`, else `launch_s`). A stage's time is the sum over its ops.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.graph import CompGraph
from jaxplace.importers.devices import DeviceProfile

#: ATen ops costed on the matrix units (`torch.aten_costs`'s matrix ops)
MATRIX_ATEN = frozenset({"linear", "mm", "bmm", "addmm", "matmul", "baddbmm", "conv1d",
                         "conv2d", "conv3d", "convolution", "scaled_dot_product_attention"})


@dataclass(frozen=True)
class OpTable:
    """The cost-model inputs of a traced program's ops.

    Attributes:
        flops, nbytes: (n,) float64 FLOPs and bytes moved of each op (forward).
        matrix: (n,) bool, costed on the matrix units.
        launched: (n,) bool, a kernel (not a view): pays the launch overhead.
        stage: (n,) int64 the stage of each op.
    """

    flops: np.ndarray
    nbytes: np.ndarray
    matrix: np.ndarray
    launched: np.ndarray
    stage: np.ndarray

    @property
    def num_stages(self) -> int:
        return int(self.stage.max()) + 1

    def restrict(self, stage: np.ndarray) -> OpTable:
        return OpTable(self.flops, self.nbytes, self.matrix, self.launched,
                       np.asarray(stage, np.int64))


def op_table(graph: CompGraph, stage) -> OpTable:
    """The op table of a traced torch program (`jaxplace.torch.from_torch`'s graph, which
    keeps FLOPs and bytes per op) with `stage` (n,) the stage of every op."""
    attrs = graph.node_attrs
    ops = graph.op_types or ("",) * graph.num_nodes
    return OpTable(np.asarray(attrs["flops"], float), np.asarray(attrs["bytes_moved"], float),
                   np.asarray([o in MATRIX_ATEN for o in ops]),
                   np.asarray(graph.work, float) > 0, np.asarray(stage, np.int64))


def _params(profile: DeviceProfile) -> tuple[float, float, float, float, float]:
    lb = profile.launch_s if profile.backward_launch_s is None else profile.backward_launch_s
    return (profile.peak("fp32", matrix=True), profile.peak("fp32", matrix=False),
            profile.mem_bw, profile.launch_s, lb)


def op_times(table: OpTable, params) -> tuple[np.ndarray, np.ndarray]:
    """(fwd, bwd) (n,) seconds of every op under (matrix peak, vector peak, memory
    bandwidth, launch, backward launch)."""
    pm, pv, bw, launch, launch_b = params
    peak = np.where(table.matrix, pm, pv)
    fwd = np.maximum(table.flops / peak, table.nbytes / bw) + launch
    bwd = np.maximum(2 * table.flops / peak, 2 * table.nbytes / bw) + launch_b
    return np.where(table.launched, fwd, 0.0), np.where(table.launched, bwd, 0.0)


def stage_times(table: OpTable, profile: DeviceProfile | tuple) -> tuple[np.ndarray,
                                                                          np.ndarray]:
    """(fwd, bwd) (stages,) predicted seconds per microbatch of every stage."""
    params = _params(profile) if isinstance(profile, DeviceProfile) else profile
    f, b = op_times(table, params)
    k = table.num_stages
    return (np.bincount(table.stage, weights=f, minlength=k),
            np.bincount(table.stage, weights=b, minlength=k))


def send_times(out_bytes, profile: DeviceProfile) -> np.ndarray:
    """(boundaries,) seconds to send each stage's output to the next: latency plus
    bytes / link bandwidth."""
    b = np.asarray(out_bytes, float)
    return profile.link_latency_s + b / profile.link_bw
