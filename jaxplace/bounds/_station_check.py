"""Guess and check on the bottleneck T: a search over guesses with feasibility MIPs
(`feasibility`).

Between the best bound known (the simple bound at least) and the best partition's
cost, guess T (climbing from the bound, see `GuessCheckConfig`) and ask HiGHS whether
a partition of cost <= T exists, with the station windows of T fixed (`station`). A
check proven infeasible raises the lower bound to T; a feasible one returns a
partition of cost <= T (the new upper bound, re-evaluated with `evaluate_partition`);
a check stopped by its time limit proves nothing, and the search goes on below that
guess. The bound is the largest T proven infeasible.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from jaxplace.bounds.base import BoundContext, MethodResult, skipped
from jaxplace.bounds._feasibility import FEASIBLE, INFEASIBLE, check_guess
from jaxplace.bounds.station import station_data, station_skip, station_upper
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import evaluate_partition, throughput_lower_bound
from jaxplace.problem import Problem


@dataclass(frozen=True)
class GuessCheckConfig:
    """How the bisection spends its budget.

    The guesses climb from the lower bound (refuting a guess gets harder near OPT, and
    only refuted guesses count): the next guess is `step` (relative to the bound)
    above the bound, never past the middle of the interval still open; the step
    doubles after a refutation and shrinks to a quarter of the gap after a check that
    ran out of time.

    Attributes:
        rtol: stop when the interval left is this small relative to the upper end.
        step: the first step, relative to the lower bound.
        share: each check gets this fraction of the time left (at least `min_check` s).
        min_check: seconds; below this much time left no check starts.
    """

    rtol: float = 1e-4
    step: float = 0.01
    share: float = 0.5
    min_check: float = 0.5


def _cost(problem: Problem, assignment) -> float:
    """The partition's cost, or inf when it is not a valid partition (a HiGHS
    solution off by its tolerances is dropped, never trusted)."""
    try:
        return evaluate_partition(problem, assignment).bottleneck
    except JaxplaceError:
        return math.inf


def guess_and_check(problem: Problem, context: BoundContext,
                    config: GuessCheckConfig = GuessCheckConfig(), *, relax: bool = False):
    """Bisect on T (see module doc).

    Returns:
        (lower bound, best assignment found or None, its cost, list of CheckResult).
    """
    t0 = time.perf_counter()
    deadline = t0 + context.time_limit
    data = station_data(problem)
    lo = max(throughput_lower_bound(problem), context.lower_bound)
    ub = station_upper(problem, context)
    top = ub  # the upper end of the search: the best cost, or an unanswered guess
    best, best_cost = None, math.inf
    checks = []
    step = max(config.step * lo, config.rtol * top)  # lo may be 0 (no work at all)
    while top - lo > config.rtol * top:
        left = deadline - time.perf_counter()
        if left < config.min_check:
            break
        T = min(lo + step, 0.5 * (lo + top))
        r = check_guess(problem, data, T, time_limit=max(config.min_check,
                                                         left * config.share),
                        threads=context.threads, relax=relax)
        checks.append(r)
        if r.answer == INFEASIBLE:
            lo = T
            step *= 2
        elif r.answer == FEASIBLE and (c := _cost(problem, r.assignment)) <= T * (1 + 1e-6):
            if c < ub:
                best, best_cost, ub = r.assignment, c, c
            top = min(T, ub)
        else:  # unknown (or a rejected solution): search below this guess
            top = T
            step = 0.25 * (T - lo)
    return lo, best, best_cost, checks


@dataclass(frozen=True)
class GuessCheckBound:
    """Guess and check as a ladder method: its bound is the largest T proven
    infeasible (or the best bound known before it); a partition found better than the
    context's comes back as `MethodResult.assignment`."""

    name: str
    relax: bool = False
    config: GuessCheckConfig = GuessCheckConfig()

    @property
    def kind(self) -> str:
        return "lp" if self.relax else "mip"

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := station_skip(problem):
            return skipped(self, why)
        t0 = time.perf_counter()
        if not math.isfinite(throughput_lower_bound(problem)):
            return MethodResult(self.name, math.inf, "Infeasible", time.perf_counter() - t0,
                                kind=self.kind)
        lo, best, _, checks = guess_and_check(problem, context, self.config,
                                              relax=self.relax)
        refuted = sum(c.answer == INFEASIBLE for c in checks)
        feasible = sum(c.answer == FEASIBLE for c in checks)
        status = (f"refuted {refuted} of {len(checks)}"
                  + (f", {feasible} feasible" if feasible else "")) if checks else "no check"
        return MethodResult(self.name, lo, status, time.perf_counter() - t0,
                            kind=self.kind, nodes=sum(c.nodes for c in checks),
                            solves=len(checks), assignment=best)
