"""Branch, bound and remember (`bbr`) as a certificate rung and as an exact method.

- `BbrBound` (`registry.BOUNDS["bbr"]`): guess and check between the best bound and
  the best partition of the ladder so far (`solve_bbr`); its bound is the largest T
  refuted (or the bound it started from), a better partition comes back as the
  result's `assignment`, and a refutation just under the best partition's cost proves
  it optimal. Valid for CPU blocks and CPU-only ops too.
- `CrossBound` (a closed-form rung, not registered here): the forced-crossings bound
  of `cross` alone, in milliseconds; 0 ("skipped") with CPU blocks.
- `bbr_exact`: the same as the planner's exact step (`jaxplace.search._planner`, option
  `exact="bbr"`), answering an `ExactAnswer`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from jaxplace.bounds.base import BoundContext, MethodResult
from jaxplace.exact.bbr.cross import crossing_bound
from jaxplace.exact.bbr.model import build_model
from jaxplace.exact.bbr.solve import BbrConfig, solve_bbr
from jaxplace.objectives.base import ExactAnswer
from jaxplace.objectives.throughput.cost import simple_lower_bound
from jaxplace.problem import Problem


@dataclass(frozen=True)
class BbrBound:
    """BB&R guess and check as a ladder method (see the module doc)."""

    name: str = "bbr"
    kind: str = "dp"
    config: BbrConfig = BbrConfig()

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        t0 = time.perf_counter()
        ub = context.upper_bound if math.isfinite(context.upper_bound) else None
        res = solve_bbr(problem, upper_bound=ub, partition=context.assignment,
                        lower_bound=context.lower_bound, time_limit=context.time_limit,
                        config=self.config)
        status = "Optimal" if res.optimal else (
            "Infeasible" if res.infeasible else res.status)
        gap = None
        if math.isfinite(res.cost) and res.cost > 0:
            gap = max(0.0, (res.cost - res.lower_bound) / res.cost)
        return MethodResult(self.name, res.lower_bound, status, time.perf_counter() - t0,
                            gap=gap, kind=self.kind, nodes=res.nodes,
                            solves=len(res.checks),
                            assignment=res.assignment if res.found else None)


@dataclass(frozen=True)
class CrossBound:
    """The forced-crossings bound (`cross.crossing_bound`) as a ladder method:
    bisection between the simple bound and the best partition known."""

    name: str = "cross"
    kind: str = "closed-form"

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        t0 = time.perf_counter()
        L = float(simple_lower_bound(problem))
        if not math.isfinite(L):
            return MethodResult(self.name, math.inf, "Infeasible",
                                time.perf_counter() - t0, kind=self.kind)
        model = build_model(problem)
        if model.cross is None:
            return MethodResult(self.name, 0.0, "skipped: CPU blocks pay no transfers",
                                time.perf_counter() - t0, kind=self.kind)
        bound = crossing_bound(model.cross, L, context.upper_bound,
                               deadline=t0 + context.time_limit)
        return MethodResult(self.name, bound, "closed form", time.perf_counter() - t0,
                            kind=self.kind)


def bbr_exact(problem: Problem, *, time_limit: float, upper_bound: float | None = None,
              partition=None) -> ExactAnswer:
    """BB&R as an objective's exact step: proven when the best split (or the
    infeasibility) is proven within `time_limit` seconds."""
    t0 = time.perf_counter()
    res = solve_bbr(problem, upper_bound=upper_bound, partition=partition,
                    time_limit=time_limit)
    detail = f"BB&R, {res.nodes:,} nodes, {len(res.checks)} checks"
    dt = time.perf_counter() - t0
    if res.infeasible:
        return ExactAnswer("bbr", math.inf, None, math.inf, True, dt, detail)
    assignment = res.assignment if res.found else None
    return ExactAnswer("bbr", res.cost, assignment,
                       res.cost if res.optimal else res.lower_bound, res.optimal, dt, detail)
