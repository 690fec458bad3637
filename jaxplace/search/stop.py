"""When a search stops, and what it reports while it runs."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StopRule:
    """Stop conditions, checked between compiled chunks.

    Attributes:
        time_limit: seconds since the search started (compile time included).
        target: stop once the best cost is <= this (absolute cost).
        patience: stop once this many evaluations passed without improvement (a
            phase of the default search may use its own patience).
        cancel: set it (from any thread, e.g. a SIGINT handler) to stop the search
            after the chunk in flight; the best result so far is returned.
    """

    time_limit: float | None = None
    target: float | None = None
    patience: int | None = None
    cancel: threading.Event | None = None

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def out_of_time(self, start: float) -> bool:
        return self.time_limit is not None and time.perf_counter() - start >= self.time_limit

    def reached(self, best: float) -> bool:
        return self.target is not None and best <= self.target

    def should_stop(self, best: float, start: float) -> bool:
        return self.reached(best) or self.out_of_time(start) or self.cancelled()


@dataclass(frozen=True)
class Progress:
    """What a search reports to its observer after every compiled chunk.

    Attributes:
        evaluations: decoder evaluations spent so far (all phases).
        best_cost: best (float32 decoder) cost so far; inf before the first chunk.
        best_x: (n,) float32 priorities of the incumbent, or None.
        elapsed: seconds since the search started.
        phase: e.g. "brkga", "local", "random".
        partition: the incumbent's `Partition` when the search already has it (the
            first solution); otherwise decode `best_x` (NumPy reference) to get it.
    """

    evaluations: int
    best_cost: float
    best_x: np.ndarray | None
    elapsed: float
    phase: str
    partition: object = None


__all__ = ["Progress", "StopRule"]
