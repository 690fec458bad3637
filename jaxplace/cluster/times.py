"""`instance_from(graph, cluster)`: the latency model's arrays for a graph on a cluster.

Units: seconds for every time, bytes for every size.

Per-op time on device p, the first source that applies:

1. node attributes `flops` and `bytes_moved` (imported ONNX/JAX graphs): the roofline
   of p's profile (`jaxplace.importers.roofline.op_time`): matrix units for dot and
   conv ops, vector units otherwise, dtype `graph.meta["dtype"]` (default fp32), plus
   the profile's `launch_s`; view ops (reshape, squeeze, ...) cost 0, as in the
   importers.
2. node attributes `time_<device name>` for every device of the cluster: those values
   (in the graph's time unit, see below).
3. otherwise `graph.work` is the time on the cluster's first device, and device p takes
   `work * peak_0 / peak_p` (peak: fp32 matrix FLOP/s of the profiles). A graph with
   only abstract work cannot say more than "p is x times faster".

The graph's time unit is microseconds when its meta says so (imported graphs:
`time_unit == "us"`; generated ones: `units` starting with "work and size_out in us"),
else seconds.

Memory per op: `size_param` in bytes (imported and generated graphs store bytes),
unless `graph.meta["size_param_unit"]` names another unit, in which case ops need no
memory (the cluster's capacities are then not checked).

Tensor bytes: imported graphs store tensor sizes as link times in us on their
profile's link (`size_out_unit` "us ...", `meta["device"]["link_bw"]` bytes/s), turned
back into bytes here; generated graphs store us on a `meta["link_gbs"]` GB/s link;
any other graph's tensor sizes are taken as bytes.
"""

from __future__ import annotations

import numpy as np

from jaxplace.cluster.model import Cluster
from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.roofline import classify
from jaxplace.objectives.latency.instance import LatencyInstance

#: Seconds per microsecond (elsewhere `US = 1e6` is microseconds per second).
SECONDS_PER_US = 1e-6
#: Lower-case op types that run on the matrix units besides roofline.MATRIX_OPS (the
#: generators' names).
MATRIX_NAMES = frozenset({"matmul", "conv", "conv_transpose", "gemm", "einsum"})


def time_scale(graph: CompGraph) -> float:
    """Seconds per unit of `graph.work` (1e-6 for graphs in microseconds, else 1)."""
    m = graph.meta
    if str(m.get("time_unit", "")).startswith("us"):
        return SECONDS_PER_US
    if str(m.get("units", "")).startswith("work and size_out in us"):
        return SECONDS_PER_US
    return 1.0


def tensor_bytes(graph: CompGraph) -> np.ndarray:
    """(T,) float64 bytes of every tensor (see the module docstring for the units)."""
    m = graph.meta
    size = np.asarray(graph.tensor_size, np.float64)
    dev = m.get("device")
    if str(m.get("size_out_unit", "")).startswith("us") and isinstance(dev, dict):
        return size * float(dev["link_bw"]) * SECONDS_PER_US
    if "link_gbs" in m and str(m.get("units", "")).startswith("work and size_out in us"):
        return size * float(m["link_gbs"]) * 1e3  # 1 GB/s = 1e3 bytes per us
    return size


def is_matrix(op_type: str | None) -> bool:
    if not op_type:
        return False
    return classify(op_type) == "matrix" or op_type.split("+")[0].lower() in MATRIX_NAMES


def op_times(graph: CompGraph, cluster: Cluster) -> np.ndarray:
    """(n, d) float64 seconds of every op on every device (module docstring)."""
    n, d = graph.num_nodes, cluster.num_devices
    attrs = graph.node_attrs
    if "flops" in attrs and "bytes_moved" in attrs:
        dtype = graph.meta.get("dtype") or "fp32"
        ops = graph.op_types or ("",) * n
        flops = np.asarray(attrs["flops"], np.float64)
        moved = np.asarray(attrs["bytes_moved"], np.float64)
        kinds = {op: (is_matrix(op), bool(op) and classify(op) == "view") for op in set(ops)}
        matrix = np.array([kinds[op][0] for op in ops], bool)
        view = np.array([kinds[op][1] for op in ops], bool)
        out = np.empty((n, d))
        for p, prof in enumerate(cluster.profiles):  # roofline.op_time, vectorized
            peak = np.where(matrix, prof.peak(dtype, matrix=True),
                            prof.peak(dtype, matrix=False))
            t = np.maximum(flops / peak, moved / prof.mem_bw) + prof.launch_s
            out[:, p] = np.where(view, 0.0, t)
        return out
    scale = time_scale(graph)
    keys = [f"time_{name}" for name in cluster.names]
    if all(k in attrs for k in keys):
        out = np.stack([np.asarray(attrs[k], np.float64) for k in keys], axis=1) * scale
        if np.any(np.isnan(out)) or np.any(out < 0):
            bad = next(k for k in keys if np.any(~(np.asarray(attrs[k], float) >= 0)))
            raise JaxplaceError("must be non-negative seconds", field=bad)
        return out
    peaks = np.array([p.peak("fp32", matrix=True) for p in cluster.profiles])
    return np.outer(graph.work * scale, peaks[0] / peaks)


def op_memory(graph: CompGraph) -> np.ndarray:
    """(n,) float64 bytes each op needs on its device (module docstring)."""
    unit = str(graph.meta.get("size_param_unit", "bytes"))
    if not unit.startswith("bytes"):
        return np.zeros(graph.num_nodes)
    return np.asarray(graph.size_param, np.float64)


def instance_from(graph: CompGraph, cluster: Cluster, *, check_memory: bool = True
                  ) -> LatencyInstance:
    """The `LatencyInstance` of `graph` on `cluster` (module docstring for the units).

    With `check_memory`, a graph whose ops cannot fit the cluster's total memory, or
    with an op larger than every device, is a JaxplaceError naming the field.
    """
    if not isinstance(graph, CompGraph):
        raise JaxplaceError(f"expected a CompGraph, got {type(graph).__name__}",
                            field="graph")
    if not isinstance(cluster, Cluster):
        raise JaxplaceError(f"expected a Cluster, got {type(cluster).__name__}",
                            field="cluster")
    memory = op_memory(graph)
    cap = cluster.memory
    if check_memory:
        check_fits(memory, cap, graph)
    return LatencyInstance(graph=graph, times=op_times(graph, cluster), memory=memory,
                           capacity=cap, bandwidth=cluster.bandwidth,
                           link_latency=cluster.latency, tensor_bytes=tensor_bytes(graph),
                           device_names=tuple(cluster.names))


def check_fits(memory: np.ndarray, capacity: np.ndarray, graph: CompGraph) -> None:
    """Raise when the ops cannot fit: more bytes than all devices together, or one op
    larger than the largest device."""
    total, cap = float(memory.sum()), float(capacity.sum())
    if total > cap:
        raise JaxplaceError(f"the graph needs {total:.4g} bytes, more than the cluster's "
                            f"{cap:.4g} bytes in total", field="devices.memory")
    big = int(np.argmax(memory)) if len(memory) else 0
    if len(memory) and memory[big] > capacity.max():
        raise JaxplaceError(f"op {graph.label(big)} needs {memory[big]:.4g} bytes, more "
                            f"than any device holds ({capacity.max():.4g})",
                            field="devices.memory")


__all__ = ["instance_from", "op_memory", "op_times", "tensor_bytes", "time_scale"]
