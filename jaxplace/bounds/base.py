"""The calling convention of lower-bound methods: `BoundMethod`, `BoundContext`,
`MethodResult`.

Every method of the ladder is an object with a `name`, a `kind` and
`run(problem, context) -> MethodResult`; `registry.BOUNDS` maps names to them and
`certify` runs them in the registry's order. A method reads what the ladder knows so
far from the context (time budget, threads, the best bound proven and the best
partition known) and reports everything in one `MethodResult`, including a better
partition when it finds one (certify adopts it after checking its cost).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from jaxplace.problem import Problem

KINDS = ("closed-form", "dp", "lp", "mip")
SKIPPED_CPU = "skipped: CPU blocks not modelled"


def _num(x):
    """JSON number: None for None and non-finite values."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass
class MethodResult:
    """One rung of the ladder.

    Attributes:
        name: method name, e.g. "exact" or "bottleneck-lp".
        bound: a valid lower bound on OPT (time units); +inf when proven infeasible.
        status: solver status ("Optimal", "Time limit reached", ...) or "closed form".
        time: wall seconds including the model build.
        gap: the MIP's relative gap between its incumbent and its bound (None for LPs
            and closed forms); a gap > 0 means the bound is a dual bound at a limit.
        kind: "closed-form", "lp" or "mip".
        build_time: seconds spent building the model(s).
        nodes: branch-and-bound nodes (sum over solves).
        solves: number of HiGHS solves (k for bottleneck-guess).
        size: (columns, rows, non-zeros) of the (first) model.
        assignment: (n,) int64 block per node of a partition the method found (the
            exact MIP's incumbent), or None; not part of `to_dict`.
        history: (time, incumbent, bound) of the solve, from HiGHS callbacks, when the
            method keeps one (the exact MIP); not part of `to_dict`.
    """

    name: str
    bound: float
    status: str
    time: float
    gap: float | None = None
    kind: str = "mip"
    build_time: float = 0.0
    nodes: int = 0
    solves: int = 0
    size: tuple[int, int, int] | None = None
    assignment: np.ndarray | None = field(default=None, repr=False, compare=False)
    history: list = field(default_factory=list, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"name": self.name, "bound": _num(self.bound), "status": self.status,
                "time": round(self.time, 4), "gap": _num(self.gap), "kind": self.kind,
                "build_time": round(self.build_time, 4), "nodes": self.nodes,
                "solves": self.solves, "size": list(self.size) if self.size else None}


@dataclass(frozen=True)
class BoundContext:
    """What a method may use: its budget and what the ladder has found so far.

    Attributes:
        time_limit: seconds for the method (bottleneck-guess splits it over its solves).
        threads: HiGHS threads for single solves; worker processes for several solves.
        mip_rel_gap: relative gap at which a MIP stops.
        progress: optional callable(elapsed, incumbent, bound) for this method, called
            as its solves progress (throttled).
        lower_bound: the best lower bound proven by the methods before it (-inf: none).
        assignment: (n,) int64 block per node of the best partition known, or None.
        upper_bound: its cost (inf when none).
    """

    time_limit: float = 60.0
    threads: int = 1
    mip_rel_gap: float = 1e-6
    progress: Callable[[float, float, float], None] | None = None
    lower_bound: float = -math.inf
    assignment: np.ndarray | None = None
    upper_bound: float = math.inf

    def replace(self, **changes) -> BoundContext:
        return dataclasses.replace(self, **changes)

    def report(self, elapsed: float, incumbent: float, bound: float) -> None:
        """Forward to `progress` when one is set."""
        if self.progress is not None:
            self.progress(elapsed, incumbent, bound)


class BoundMethod(Protocol):
    """A lower-bound method: `run` returns a bound valid on its own (see MethodResult)."""

    @property
    def name(self) -> str:
        """The name `certify` and the CLI know it by, e.g. "bottleneck-lp"."""
        ...

    @property
    def kind(self) -> str:
        """One of KINDS: "closed-form", "dp", "lp" or "mip"."""
        ...

    def run(self, problem: Problem, context: BoundContext) -> MethodResult: ...


class Relaxable:
    """Mixin of the block-MIP methods: kind "lp" for the relaxation, else "mip"."""

    relax: bool

    @property
    def kind(self) -> str:
        return "lp" if self.relax else "mip"


def unmodelled(problem: Problem) -> str | None:
    """Why the block MIPs cannot model `problem` (None when they can).

    They model accelerator blocks only (colocation and forward-only contiguity
    included); with CPU blocks or CPU-only ops a method built on them reports bound 0,
    which is still valid.
    """
    if problem.cpus > 0 or not bool(problem.supported.all()):
        return SKIPPED_CPU
    return None


def skipped(method: BoundMethod, why: str) -> MethodResult:
    """The trivially valid result of a method that does not apply."""
    return MethodResult(method.name, 0.0, why, 0.0, kind=method.kind)


def from_solve(method: BoundMethod, res, model, elapsed: float, **extra) -> MethodResult:
    """MethodResult of one HiGHS solve (`jaxplace.highs.SolveResult`) of one `BlockModel`."""
    lp = method.kind == "lp"
    return MethodResult(method.name, res.bound, res.status, elapsed,
                        gap=None if lp else _num(res.gap), kind=method.kind,
                        build_time=model.build_time, nodes=res.nodes, solves=1,
                        size=(model.ncol, model.nrow, model.nnz), **extra)
