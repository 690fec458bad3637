"""A partitioning instance: a graph, the number of blocks and the cost parameters."""

from __future__ import annotations

import math
from dataclasses import dataclass

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph


@dataclass(frozen=True, eq=False)
class Problem:
    """MTPP instance (../shared/docs/mtpp.md section 1).

    Args:
        graph: the computation graph.
        k: at most this many blocks (pipeline stages), k >= 1.
        bandwidth: inter-block bandwidth B > 0; transfers and overflow are divided by it.
        memory: overflow budget M: a block pays max(0, param - M) / B extra. None: no
            overflow term.
        capacity: hard per-block parameter limit: a block whose parameters exceed it
            costs +inf. None: no limit.
    """

    graph: CompGraph
    k: int
    bandwidth: float = 1.0
    memory: float | None = None
    capacity: float | None = None

    def __post_init__(self):
        if not isinstance(self.graph, CompGraph):
            raise JaxplaceError(f"expected a CompGraph, got {type(self.graph).__name__}",
                                field="graph")
        k = self.k
        if isinstance(k, bool) or not isinstance(k, int | float) or k != int(k):
            raise JaxplaceError(f"must be an integer, got {k!r}", field="k")
        if k < 1:
            raise JaxplaceError(f"must be at least 1, got {int(k)}", field="k")
        object.__setattr__(self, "k", int(k))
        b = float(self.bandwidth)
        if not (math.isfinite(b) and b > 0):
            raise JaxplaceError(f"must be positive and finite, got {self.bandwidth!r}",
                                field="bandwidth")
        object.__setattr__(self, "bandwidth", b)
        for name in ("memory", "capacity"):
            v = getattr(self, name)
            if v is None:
                continue
            v = float(v)
            if math.isnan(v) or v < 0:
                raise JaxplaceError(f"must be non-negative, got {getattr(self, name)!r}",
                                    field=name)
            object.__setattr__(self, name, None if math.isinf(v) else v)

    @property
    def n(self) -> int:
        return self.graph.num_nodes

    def replace(self, **changes) -> Problem:
        """A copy with some fields changed (validated again)."""
        fields = dict(graph=self.graph, k=self.k, bandwidth=self.bandwidth,
                      memory=self.memory, capacity=self.capacity)
        fields.update(changes)
        return Problem(**fields)
