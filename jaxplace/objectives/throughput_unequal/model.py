"""The pipeline model on unequal devices: what a stage costs, and the checks.

A pipeline of S stages runs stage s on device `devices[s]` (distinct devices of the
cluster). Per-op times, op memory, tensor bytes and the links come from
`jaxplace.cluster.times.instance_from` (a `LatencyInstance`), so both objectives of a
cluster read the same numbers. Stage s costs, per sample,

    compute(s) + in(s) + out(s),   +inf when its ops' memory exceeds its device's,

- compute(s): the sum of `times[v, devices[s]]` over its ops;
- the cut between stages s-1 and s carries every tensor produced before the cut and
  consumed after it (producer in a stage < s, some consumer in a stage >= s), once,
  over the link devices[s-1] -> devices[s]: `count * latency[a, b] + bytes /
  bandwidth[a, b]` (per-transfer latency of the cluster file, row = sender). The
  receiver pays it as in(s), the sender as out(s-1), as `objectives.throughput.cost` charges a
  tensor once leaving and once entering a block, and as
  `jaxplace.llm.cluster_split` charges a layer chain's activation;
- a tensor needed two or more stages later is forwarded by the stages between (a
  pipeline stage talks to the next stage only, as in GPipe, Megatron-LM and
  torch.distributed.pipelining): it is counted at every cut it crosses.

Forwarding is what makes the slicing DP exact: a stage's cost depends only on its
first and last position in the order and on its device and its neighbours' devices
(`objectives.throughput_unequal.reference`). On a chain every tensor crosses one cut and the cost is
the block cost of docs/problem.md section 1 with per-link bandwidth; on a DAG whose
tensors skip a whole stage it charges the forwarding that MTPP's all-to-all network
does not.

Memory is the ops' `memory` (parameters) on the stage's device, with a relative slack
of CAPACITY_RTOL (sums of float64 prefix differences must not turn an exact fit
infeasible). The objective is the bottleneck max_s cost(s): time per sample.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.problem import CAPACITY_RTOL  # device memory's slack is the capacity's


def capacity_limit(capacity: np.ndarray) -> np.ndarray:
    """(d,) the largest stage memory treated as fitting each device."""
    return np.asarray(capacity, np.float64) * (1 + CAPACITY_RTOL)


def link_times(inst, count, nbytes, src: int, dst: int):
    """Seconds to move `count` tensors of `nbytes` bytes in total over src -> dst (0
    when src == dst); arrays broadcast."""
    if src == dst:
        return np.zeros_like(np.asarray(nbytes, np.float64))
    return (np.asarray(count, np.float64) * inst.link_latency[src, dst]
            + np.asarray(nbytes, np.float64) / inst.bandwidth[src, dst])


def check_devices(devices, d: int, stages: int | None = None) -> np.ndarray:
    """Validate a device sequence: distinct indices in 0..d-1 (at least `stages`)."""
    a = np.asarray(devices)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise JaxplaceError(f"must be a list of device indices, got {devices!r}",
                            field="devices")
    a = a.astype(np.int64)
    if np.any((a < 0) | (a >= d)):
        raise JaxplaceError(f"must hold device indices in 0..{d - 1}, got {a.tolist()}",
                            field="devices")
    if len(np.unique(a)) != len(a):
        raise JaxplaceError(f"must name distinct devices, got {a.tolist()}",
                            field="devices")
    if stages is not None and len(a) < stages:
        raise JaxplaceError(f"names {len(a)} devices for {stages} stages", field="devices")
    return a


def device_sequence(keys, d: int) -> np.ndarray:
    """(d,) int64 devices by key, largest first, ties to the smaller index (compared in
    the keys' dtype, like Kahn's node priorities)."""
    k = np.asarray(keys)[:d]
    if k.shape != (d,):
        raise JaxplaceError(f"has shape {k.shape}, expected ({d},)", field="device_keys")
    return np.lexsort((np.arange(d), -k + 0)).astype(np.int64)


def cut_traffic(graph, tensor_bytes: np.ndarray, order) -> tuple[np.ndarray, np.ndarray]:
    """((n+1,) tensors, (n+1,) bytes) crossing each cut of a topological order: cut c
    lies before position c; a tensor crosses cuts p+1..q (producer at p, last consumer
    at q). Cuts 0 and n carry nothing."""
    n = graph.num_nodes
    pos = np.empty(n, np.int64)
    pos[np.asarray(order, np.int64)] = np.arange(n)
    T = graph.num_tensors
    cnt = np.zeros(n + 2)
    byt = np.zeros(n + 2)
    if T:
        ncons = np.diff(graph.tensor_ptr)
        has = ncons > 0
        t_of = np.repeat(np.arange(T), ncons)
        last = np.full(T, -1, np.int64)
        np.maximum.at(last, t_of, pos[graph.tensor_consumers])
        p = pos[graph.tensor_producer]
        has &= last > p
        np.add.at(cnt, p[has] + 1, 1.0)
        np.add.at(cnt, last[has] + 1, -1.0)
        np.add.at(byt, p[has] + 1, tensor_bytes[has])
        np.add.at(byt, last[has] + 1, -tensor_bytes[has])
    return np.cumsum(cnt)[:n + 1], np.cumsum(byt)[:n + 1]


__all__ = ["CAPACITY_RTOL", "capacity_limit", "check_devices", "check_problem", "cut_traffic",
           "device_sequence", "link_times"]


def check_problem(problem) -> None:
    """The checks of a `Problem` with objective "throughput" on unequal devices: k at
    most the device count, no CPU blocks, no placement units, finite op times, and the
    ops fit the cluster (built here, so a bad graph fails at construction)."""
    c = problem.cluster
    if problem.k > c.num_devices:
        raise JaxplaceError(f"must be at most the cluster's {c.num_devices} devices (one "
                            f"stage per device), got {problem.k}", field="k")
    if problem.cpus:
        raise JaxplaceError("CPU blocks do not apply to throughput on a cluster (give k "
                            "without a cluster for the identical-device model)",
                            field="cpus")
    if not problem.graph.units.trivial:
        raise JaxplaceError("colocation classes and training graphs are not supported "
                            "for throughput on a cluster (give k without a cluster for "
                            "the identical-device model)", field="graph")
    inst = problem.pipeline_instance
    if not np.all(np.isfinite(inst.times)):
        v, p = (int(i) for i in np.argwhere(~np.isfinite(inst.times))[0])
        raise JaxplaceError(f"op {problem.graph.label(v)} cannot run on device "
                            f"{inst.device_names[p]}; pipeline stages need every op "
                            "runnable on every device", field="times")
