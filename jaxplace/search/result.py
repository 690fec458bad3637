"""The outcome of a search: best partition, its priorities, evaluations, time, history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxplace.objectives.throughput.reference import Partition


@dataclass(frozen=True)
class History:
    """Best cost so far after each step of a search (steps are generations or batches).

    Attributes:
        evaluations: (H,) int64 decoder evaluations spent after each step.
        time: (H,) float64 seconds since the search started (per compiled chunk, so
            steps of one chunk share the chunk's end time; compile time included).
        best: (H,) float64 best cost found so far (float32 decoder cost).
    """

    evaluations: np.ndarray
    time: np.ndarray
    best: np.ndarray

    @staticmethod
    def empty() -> History:
        return History(np.zeros(0, np.int64), np.zeros(0), np.zeros(0))

    def __len__(self) -> int:
        return len(self.best)

    def concat(self, other: History, evaluations: int = 0, time: float = 0.0) -> History:
        """This history followed by `other` shifted by (evaluations, time)."""
        best = other.best
        if len(self.best):
            best = np.minimum(best, self.best[-1])
        return History(np.concatenate([self.evaluations, other.evaluations + evaluations]),
                       np.concatenate([self.time, other.time + time]),
                       np.concatenate([self.best, best]))


@dataclass(frozen=True)
class Result:
    """Best partition found by `jaxplace.search`.

    Attributes:
        cost: bottleneck of `partition`, float64 (exact for that partition).
        partition: the `jaxplace.Partition` (order, cuts, assignment, cost).
        priorities: (n,) float32 priority vector that decodes to `partition`; on
            unequal devices (`objectives.throughput_unequal`) (n + d,): then the d device keys.
        evaluations: decoder evaluations spent (for "mla"/"mla-weighted": arrangement
            evaluations, plus the one final decode).
        wall_time: seconds, compile time included.
        history: best cost after every step (`History`).
        method: the method name.
        lower_bound: the simple lower bound of the problem.
        interrupted: True when Ctrl-C or the time limit stopped the search early.
        info: method details: for "policy", "policy+brkga" and a default search
            coupled with the policy, "policy" (the shipped policy's name, or the path
            given) and, when the policy's means were anchored to the DFS order,
            "dfs_anchor"; for the default search its phases' bests and the MIP
            polish.
        schedule: for latency problems, the `jaxplace.objectives.latency.Schedule` (device,
            start and finish of every op, the transfers); `cost` is its makespan and
            `partition.assignment` the device of every op. For method
            "noncontiguous", the `jaxplace.exact.pieces.VirtualPieces` of the split
            (`partition.cuts` start its virtual pieces, `partition.assignment` is the
            device of every op). None otherwise.
    """

    cost: float
    partition: Partition
    priorities: np.ndarray
    evaluations: int
    wall_time: float
    history: History
    method: str
    lower_bound: float
    interrupted: bool = False
    info: dict = field(default_factory=dict)
    schedule: Any = None

    @property
    def ratio(self) -> float:
        """cost / simple lower bound (>= 1; 1 proves optimality)."""
        return self.cost / self.lower_bound if self.lower_bound > 0 else float("nan")

    @property
    def assignment(self) -> np.ndarray:
        return self.partition.assignment

    def __repr__(self) -> str:
        return (f"Result(method={self.method!r}, cost={self.cost:.6g}, "
                f"ratio={self.ratio:.4f}, evaluations={self.evaluations}, "
                f"wall_time={self.wall_time:.2f}s)")

    def _repr_html_(self) -> str:
        """Notebooks show the plan (`jaxplace.view`; its costs per stage need the
        problem: `view.html(result, problem=problem)`)."""
        import importlib

        return importlib.import_module("jaxplace.view").html_fragment(self)


__all__ = ["History", "Result"]
