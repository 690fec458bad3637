"""The latency model of one inference on a cluster (MOIRAI, Zhang et al. 2023, Sec. III).

Every solver of the latency objective (the NumPy reference scheduler, the batched JAX
decoder, the MILPs, brute force) uses this model and `validate_schedule` below:

- op v runs on one device p for `times[v, p]` seconds; a device runs one op at a time;
- a tensor e (producer u, consumers C_e, `tensor_bytes[e]` bytes) whose consumer sits on
  a device q other than the producer's p is sent once from p to q, whatever the number
  of its consumers on q; the transfer starts after u finishes and lasts
  `link_latency[p, q] + tensor_bytes[e] / bandwidth[p, q]`;
- each device has one send port and one receive port: two transfers out of the same
  device never overlap, nor two transfers into the same device (MOIRAI's congestion
  constraints (8)); computation overlaps transfers;
- an op starts once every input is on its device (its producer finished there, or the
  transfer to its device arrived);
- the ops of a device need `memory[v]` bytes each, and their sum must fit the device's
  `capacity`;
- the makespan is the latest finish of an op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph

#: Relative slack when validating times (float64 sums of different association).
TIME_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class LatencyInstance:
    """Plain arrays of the latency model (module docstring); all float64.

    Attributes:
        graph: the op graph (structure: tensors as hyperedges, names).
        times: (n, d) seconds of op v on device p (inf: the op cannot run there).
        memory: (n,) bytes each op needs on its device.
        capacity: (d,) bytes per device (inf: unlimited).
        bandwidth: (d, d) bytes/s from row to column (diagonal ignored).
        link_latency: (d, d) seconds per transfer (diagonal ignored).
        tensor_bytes: (T,) bytes of every tensor of `graph` (tensor order of the graph).
        device_names: d labels.
    """

    graph: CompGraph
    times: np.ndarray
    memory: np.ndarray
    capacity: np.ndarray
    bandwidth: np.ndarray
    link_latency: np.ndarray
    tensor_bytes: np.ndarray
    device_names: tuple[str, ...] = field(default=())

    def __post_init__(self):
        n, T = self.graph.num_nodes, self.graph.num_tensors
        times = np.asarray(self.times, dtype=np.float64)
        if times.ndim != 2 or times.shape[0] != n:
            raise JaxplaceError(f"must be (n={n}, d), got shape {times.shape}", field="times")
        d = times.shape[1]
        checks = {"memory": (n,), "capacity": (d,), "bandwidth": (d, d),
                  "link_latency": (d, d), "tensor_bytes": (T,)}
        for name, shape in checks.items():
            a = np.asarray(getattr(self, name), dtype=np.float64)
            if a.shape != shape:
                raise JaxplaceError(f"must have shape {shape}, got {a.shape}", field=name)
            object.__setattr__(self, name, a)
        if np.any(np.isnan(times)) or np.any(times < 0):
            raise JaxplaceError("must be non-negative numbers (inf: not runnable)",
                                field="times")
        off = ~np.eye(d, dtype=bool)
        if np.any(~(self.bandwidth[off] > 0)):
            raise JaxplaceError("must be positive off the diagonal", field="bandwidth")
        if np.any(~(self.link_latency[off] >= 0)) or np.any(np.isinf(self.link_latency[off])):
            raise JaxplaceError("must be non-negative and finite", field="link_latency")
        for name in ("memory", "tensor_bytes"):
            a = getattr(self, name)
            if np.any(~np.isfinite(a)) or np.any(a < 0):
                raise JaxplaceError("must be non-negative and finite", field=name)
        if np.any(np.isnan(self.capacity)) or np.any(self.capacity < 0):
            raise JaxplaceError("must be non-negative", field="capacity")
        object.__setattr__(self, "times", times)
        names = tuple(self.device_names) or tuple(f"dev{p}" for p in range(d))
        if len(names) != d:
            raise JaxplaceError(f"must name {d} devices, got {len(names)}",
                                field="device_names")
        object.__setattr__(self, "device_names", names)

    @property
    def n(self) -> int:
        return self.graph.num_nodes

    @property
    def num_devices(self) -> int:
        return self.times.shape[1]

    def transfer_time(self, tensor: int, src: int, dst: int) -> float:
        """Seconds to send a tensor from src to dst (0 when src == dst)."""
        if src == dst:
            return 0.0
        return float(self.link_latency[src, dst]
                     + self.tensor_bytes[tensor] / self.bandwidth[src, dst])

    def tensor_consumers(self, tensor: int) -> np.ndarray:
        g = self.graph
        return g.tensor_consumers[g.tensor_ptr[tensor]:g.tensor_ptr[tensor + 1]]


@dataclass(frozen=True)
class Transfer:
    """One tensor sent between two devices."""

    tensor: int
    src: int
    dst: int
    start: float
    finish: float


@dataclass(frozen=True)
class Schedule:
    """A full schedule: device, start and finish of every op, and the transfers."""

    device: np.ndarray  # (n,) int
    start: np.ndarray  # (n,) float64
    finish: np.ndarray  # (n,) float64
    transfers: tuple[Transfer, ...]

    @property
    def makespan(self) -> float:
        return float(self.finish.max()) if len(self.finish) else 0.0


def validate_schedule(inst: LatencyInstance, s: Schedule, *, rtol: float = TIME_RTOL) -> None:
    """Raise AssertionError naming the first violated rule of the model; else None."""
    n, d = inst.n, inst.num_devices
    g = inst.graph
    dev = np.asarray(s.device)
    scale = max(1.0, float(np.max(np.abs(s.finish))) if n else 1.0)
    eps = rtol * scale
    assert dev.shape == (n,) and np.all((dev >= 0) & (dev < d)), "device out of range"
    for v in range(n):
        want = inst.times[v, dev[v]]
        assert np.isfinite(want), f"op {v} on device {dev[v]} where it cannot run"
        assert s.start[v] >= -eps, f"op {v} starts before 0"
        assert abs(s.finish[v] - s.start[v] - want) <= eps, f"op {v} duration"
    for p in range(d):
        used = inst.memory[dev == p].sum()
        assert used <= inst.capacity[p] * (1 + rtol), f"device {p} memory {used}"
        ops = np.flatnonzero(dev == p)
        # by (start, finish): a zero-time op may share its start with the next op
        ops = ops[np.lexsort((s.finish[ops], s.start[ops]))]
        for a, b in zip(ops[:-1], ops[1:], strict=True):
            assert s.start[b] >= s.finish[a] - eps, f"ops {a} and {b} overlap on device {p}"
    arrival: dict[tuple[int, int], float] = {}
    for t in s.transfers:
        p = int(g.tensor_producer[t.tensor])
        assert t.src == dev[p], f"tensor {t.tensor} sent from a device without it"
        assert t.src != t.dst, f"tensor {t.tensor} sent to its own device"
        assert (t.tensor, t.dst) not in arrival, f"tensor {t.tensor} sent twice to {t.dst}"
        assert t.start >= s.finish[p] - eps, f"tensor {t.tensor} sent before it exists"
        dur = inst.transfer_time(t.tensor, t.src, t.dst)
        assert abs(t.finish - t.start - dur) <= eps, f"tensor {t.tensor} transfer duration"
        arrival[(t.tensor, t.dst)] = t.finish
    for port, key in (("send", "src"), ("receive", "dst")):
        for p in range(d):
            ts = sorted((t for t in s.transfers if getattr(t, key) == p),
                        key=lambda t: (t.start, t.finish))
            for a, b in zip(ts[:-1], ts[1:], strict=True):
                assert b.start >= a.finish - eps, f"{port} port of device {p} overlaps"
    for e in range(g.num_tensors):
        p = int(g.tensor_producer[e])
        for w in inst.tensor_consumers(e):
            q = dev[w]
            ready = s.finish[p] if q == dev[p] else arrival.get((e, int(q)))
            assert ready is not None, f"tensor {e} never reaches device {q} of op {w}"
            assert s.start[w] >= ready - eps, f"op {w} starts before tensor {e} arrives"
