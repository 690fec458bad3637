"""A partitioning instance: a graph, the number of blocks and the cost parameters."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph


def _plain(v) -> str:
    """A value for an error message: numbers plainly (2.5, nan), not np.float64(2.5)."""
    if hasattr(v, "item") and getattr(v, "ndim", None) == 0:
        v = v.item()
    return repr(v)


def _whole(v) -> bool:
    """Is `v` a whole number (an int, a NumPy integer, or an integral finite float)?"""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return False
    return isinstance(v, numbers.Integral) or (math.isfinite(v) and v == int(v))


#: Relative slack on the hard capacity (see `Problem.capacity_limit`).
CAPACITY_RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class Problem:
    """MTPP instance (Archer et al., ICML 2024).

    Args:
        graph: the computation graph.
        k: at most this many blocks (pipeline stages), k >= 1.
        bandwidth: inter-block bandwidth B > 0; transfers and overflow are divided by it.
        memory: overflow budget M: a block pays max(0, param - M) / B extra. None: no
            overflow term.
        capacity: hard per-block parameter limit: a block whose parameters exceed it
            costs +inf. None: no limit.
        cpus: CPU blocks in addition to the k accelerator blocks (the NeurIPS 2020 model): a
            CPU block costs the sum of the nodes' `cpu_latency` (a graph node
            attribute) and pays no transfers; nodes whose `supported_on_accel` is false
            may only go to a CPU. Blocks 0..k-1 are accelerators, k..k+cpus-1 CPUs.
        cluster: a `jaxplace.cluster.Cluster`; k then defaults to its device count.
            Required by the latency objective. With "throughput", any cluster,
            uniform or not, makes it a pipeline over distinct devices whose order is
            searched too (`objectives.throughput_unequal`; k <= its device count, costs from the
            cluster's devices and links, so bandwidth, memory, capacity, CPU blocks
            and colocation do not apply); the identical-device model above is
            throughput without a cluster.
        objective: "throughput" (the MTPP bottleneck, above) or "latency" (the makespan
            of one inference on `cluster`, `jaxplace.objectives.latency`; k = its device count).
    """

    graph: CompGraph
    k: int | None = None
    bandwidth: float = 1.0
    memory: float | None = None
    capacity: float | None = None
    cpus: int = 0
    cluster: Any = None
    objective: str = "throughput"

    def __post_init__(self):
        if not isinstance(self.graph, CompGraph):
            raise JaxplaceError(f"expected a CompGraph, got {type(self.graph).__name__}",
                                field="graph")
        self._check_objective()
        k = self.k
        if not _whole(k):
            raise JaxplaceError(f"must be an integer, got {_plain(k)}", field="k")
        if k < 1:
            raise JaxplaceError(f"must be at least 1, got {int(k)}", field="k")
        object.__setattr__(self, "k", int(k))
        b = float(self.bandwidth)
        if not (math.isfinite(b) and b > 0):
            raise JaxplaceError(f"must be positive and finite, got {_plain(self.bandwidth)}",
                                field="bandwidth")
        object.__setattr__(self, "bandwidth", b)
        for name in ("memory", "capacity"):
            v = getattr(self, name)
            if v is None:
                continue
            v = float(v)
            if math.isnan(v) or v < 0:
                raise JaxplaceError(f"must be non-negative, got {_plain(getattr(self, name))}",
                                    field=name)
            object.__setattr__(self, name, None if math.isinf(v) else v)
        c = self.cpus
        if not _whole(c) or c < 0:
            raise JaxplaceError(f"must be a non-negative integer, got {_plain(c)}",
                                field="cpus")
        object.__setattr__(self, "cpus", int(c))
        if self.cpus and "cpu_latency" not in self.graph.node_attrs:
            raise JaxplaceError("CPU blocks need the node attribute 'cpu_latency', which "
                                "the graph lacks", field="cpus")
        self.objective_impl.validate(self)
        self._check_cpu_only_ops()

    def _check_cpu_only_ops(self) -> None:
        """An op that may not run on an accelerator needs a CPU block to go to: without
        one no partition exists (every search would return cost inf)."""
        if self.cpus or "supported_on_accel" not in self.graph.node_attrs:
            return
        bad = [int(v) for v in (~self.supported).nonzero()[0]]
        if bad:
            raise JaxplaceError(
                f"is 0, but {len(bad)} op(s) may only run on a CPU (supported_on_accel "
                f"false, e.g. {self.graph.label(bad[0])}): give at least one CPU block",
                field="cpus")

    @cached_property
    def objective_impl(self):
        """The `jaxplace.objectives.Objective` serving this problem (by its objective
        name and cluster): every question about costs, bounds and methods goes to it."""
        from jaxplace.objectives.registry import objective_of

        return objective_of(self)

    def _check_objective(self) -> None:
        from jaxplace.objectives.registry import problem_objectives

        names = problem_objectives()
        if self.objective not in names:
            raise JaxplaceError(f"must be one of {', '.join(names)}, got "
                                f"{self.objective!r}", field="objective")
        c = self.cluster
        if c is not None:
            from jaxplace.cluster.model import Cluster

            if not isinstance(c, Cluster):
                raise JaxplaceError(f"expected a Cluster, got {type(c).__name__}",
                                    field="cluster")
            if self.k is None:
                object.__setattr__(self, "k", c.num_devices)
        if self.k is None:
            raise JaxplaceError("missing: give k or a cluster", field="k")

    @cached_property
    def instance(self):
        """The objective's precomputed model of this problem (`Objective.instance`):
        the `LatencyInstance` (per-op times on every device, memory, links) on a
        cluster of unequal devices or for latency; None for identical accelerators."""
        return self.objective_impl.instance(self)

    @property
    def latency(self):
        """The `LatencyInstance` of a latency problem (`instance`; kept by name)."""
        return self.instance

    @property
    def pipeline_instance(self):
        """The `LatencyInstance` of a pipeline on unequal devices (`instance`; kept
        by name): its stages cost `jaxplace.objectives.throughput_unequal.model`'s."""
        return self.instance

    @property
    def capacity_limit(self) -> float:
        """The largest block parameter sum treated as fitting the capacity (inf: none).

        Parameter sums of segments are differences of prefix sums, which carry float64
        rounding (3.8 + 3.5 + 3.5 - 3.8 = 7.000000000000001): a block that fits exactly
        must not turn infeasible, so a relative slack of CAPACITY_RTOL is allowed.
        """
        if self.capacity is None:
            return math.inf
        total = float(self.graph.size_param.sum())
        return self.capacity + CAPACITY_RTOL * max(self.capacity, total)

    @property
    def num_blocks(self) -> int:
        """k accelerator blocks plus the CPU blocks."""
        return self.k + self.cpus

    @property
    def cpu_latency(self):
        """(n,) float64 CPU time per node (zeros when the graph has none)."""
        import numpy as np

        a = self.graph.node_attrs.get("cpu_latency")
        return np.zeros(self.n) if a is None else np.asarray(a, dtype=np.float64)

    @property
    def supported(self):
        """(n,) bool: may the node run on an accelerator."""
        import numpy as np

        a = self.graph.node_attrs.get("supported_on_accel")
        return np.ones(self.n, dtype=bool) if a is None else np.asarray(a, dtype=bool)

    @property
    def n(self) -> int:
        return self.graph.num_nodes

    def replace(self, **changes) -> Problem:
        """A copy with some fields changed (validated again)."""
        fields = dict(graph=self.graph, k=self.k, bandwidth=self.bandwidth,
                      memory=self.memory, capacity=self.capacity, cpus=self.cpus,
                      cluster=self.cluster, objective=self.objective)
        fields.update(changes)
        return Problem(**fields)
