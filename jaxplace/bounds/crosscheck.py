"""A certificate's bounds checked against plans whose cost is known.

A lower bound is a claim about every partition; one partition that costs less refutes
it. Solvers can be wrong (HiGHS's presolve has certified a MIP start that a one-block
plan beats), so a bound above the simple one is never taken on a solver's word alone:
it is compared with the cost of the certificate's own partition and of a few plans that
cost little to build and evaluate (every op in one block, the DFS order sliced
optimally). A rung whose bound exceeds one of them is refuted: its bound becomes 0
(trivially valid), its claim stays in its status, and the certificate notes it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxplace.bounds.base import MethodResult
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import evaluate_partition, throughput_lower_bound
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.orders import seed_priorities
from jaxplace.problem import Problem

__all__ = ["REFUTE_RTOL", "check_rungs", "witness_plans"]

#: A bound above a known plan's cost by more than this (relative) is refuted; below it
#: the difference is solver tolerance (HiGHS's feasibility and gap tolerances).
REFUTE_RTOL = 1e-6
#: The DFS witness is a slicing DP over one order; above this many ops it is skipped
#: (0.7 s at 2,000 ops and k = 16, 1.8 s at 5,000: the check must stay cheap).
DFS_MAX_NODES = 2000


def _cost(problem: Problem, assignment) -> float:
    """Cost of a candidate plan, inf when the problem refuses it (not a valid plan)."""
    try:
        return float(evaluate_partition(problem, assignment).bottleneck)
    except JaxplaceError:
        return math.inf


def witness_plans(problem: Problem) -> list[tuple[str, np.ndarray, float]]:
    """(name, assignment, cost) of cheap plans, feasible ones only: every op in one
    accelerator block, every op in one CPU block (with CPU blocks), and the DFS order of
    the placement units sliced optimally by the reference decoder."""
    n, k = problem.n, problem.k
    out = []
    cands = [("one block", np.zeros(n, dtype=np.int64))]
    if problem.cpus:
        cands.append(("one CPU block", np.full(n, k, dtype=np.int64)))
    for name, a in cands:
        c = _cost(problem, a)
        if math.isfinite(c):
            out.append((name, a, c))
    if n <= DFS_MAX_NODES:
        try:
            p = decode_reference(problem, seed_priorities(problem.graph)[0])
        except JaxplaceError:
            p = None
        if p is not None and math.isfinite(p.cost):
            out.append(("DFS plan", np.asarray(p.assignment, np.int64), float(p.cost)))
    return out


def _refuted(r: MethodResult, name: str, cost: float) -> MethodResult:
    return dataclasses.replace(
        r, bound=0.0, status=f"refuted: {r.status}; bound {r.bound:.10g} is above the "
        f"cost {cost:.10g} of the {name}")


def check_rungs(problem: Problem, results: list[MethodResult], upper_bound: float,
                source: str | None) -> tuple[list[MethodResult], list[str]]:
    """Refute every rung whose bound exceeds the cost of a known plan.

    Args:
        results: the ladder's results.
        upper_bound: the cost of the certificate's partition (inf: none).
        source: where that partition came from ("given", "sampled", a rung).

    Returns:
        (results, notes): the results with the refuted ones replaced (bound 0, the claim
        in the status), and one line per refutation and per rung whose solver disagreed
        with itself or could not confirm its claim (a status starting "disagrees" or
        "unconfirmed", see `bounds.exact`). The plans are only built when a
        bound exceeds the simple bound.
    """
    said = [f"{r.name}: {r.status}" for r in results
            if r.status.startswith(("disagrees", "unconfirmed"))]
    simple = throughput_lower_bound(problem)
    top = max((r.bound for r in results), default=-math.inf)
    if not top > simple * (1 + REFUTE_RTOL):
        return results, said
    plans = [(f"{source or 'known'} partition", upper_bound)] if math.isfinite(
        upper_bound) else []
    plans += [(name, c) for name, _, c in witness_plans(problem)]
    if not plans:
        return results, said
    name, cost = min(plans, key=lambda t: t[1])
    limit = cost * (1 + REFUTE_RTOL) + 1e-12
    out, notes = [], said
    for r in results:
        if math.isfinite(r.bound) and r.bound > limit:
            notes.append(f"{r.name} claimed a lower bound of {r.bound:.10g}, but the "
                         f"{name} costs {cost:.10g}: not used")
            r = _refuted(r, name, cost)
        elif math.isinf(r.bound) and r.bound > 0:
            notes.append(f"{r.name} claimed no partition fits, but the {name} costs "
                         f"{cost:.10g}: not used")
            r = _refuted(r, name, cost)
        out.append(r)
    return out, notes
