"""`Partition`: a contiguous split of a topological order (what decoders return)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Partition:
    """A contiguous split of a topological order.

    Attributes:
        order: (n,) int64 node indices in topological order.
        cuts: positions in `order` where blocks 1, 2, ... start (blocks are
            order[0:cuts[0]], order[cuts[0]:cuts[1]], ...); len(cuts) = blocks - 1.
        assignment: (n,) int64 block of every node, blocks numbered 0.. in DAG order.
        cost: the bottleneck max_b f(block b).
        devices: on a cluster of unequal devices (`objectives.throughput_unequal`), the device
            (cluster index) of each block in pipeline order; None otherwise.
    """

    order: np.ndarray
    cuts: tuple[int, ...]
    assignment: np.ndarray
    cost: float
    devices: tuple[int, ...] | None = None

    @property
    def num_blocks(self) -> int:
        return len(self.cuts) + 1

    @property
    def blocks(self) -> list[np.ndarray]:
        """Node indices of each block, in order."""
        return np.split(self.order, list(self.cuts))


__all__ = ["Partition"]
