"""A certificate for objectives outside the throughput ladder: a few named bounds,
each a function `(problem, ctx) -> MethodResult`, against the given partition's cost.

Every bound is valid on its own; the certificate is optimal only when the largest of
them meets a cost that the objective's own `evaluate_partition` confirmed.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from collections.abc import Callable, Mapping

from jaxplace.errors import JaxplaceError


def certify_with(objective, problem, partition, methods, bounds: Mapping[str, Callable],
                 *, time_limit: float | None = 60.0, threads: int = 1,
                 mip_rel_gap: float = 1e-6, progress=None, samples: int = 0,
                 seed: int = 0, rung_time_limit: float | None = None, **_ignored):
    """The `Certificate` of `partition` (None: the objective's first solution) under
    `bounds`, run in the objective's order; `time_limit` covers them all (None: no
    limit on the whole), `rung_time_limit` caps each (None: no cap)."""
    from jaxplace.bounds.base import BoundContext
    from jaxplace.bounds.certificate import OPTIMAL_RTOL, Certificate

    for name, value in (("time_limit", time_limit), ("rung_time_limit", rung_time_limit)):
        if value is not None and not (isinstance(value, numbers.Real)
                                      and 0 < value < math.inf):
            raise JaxplaceError(f"must be positive and finite, got {value!r}", field=name)
    if time_limit is None and rung_time_limit is None:
        raise JaxplaceError("give a time limit for the whole call or rung_time_limit",
                            field="time_limit")
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    cap = math.inf if rung_time_limit is None else rung_time_limit
    todo = objective.check_bound_methods(
        objective.default_bounds if methods is None else methods)
    if partition is None:
        partition, source = objective.start_partition(problem), "first solution"
    else:
        source = "given"
    costs = objective.evaluate_partition(problem, partition)
    ub = float(costs.cost)
    ctx = BoundContext(time_limit=min(deadline - time.perf_counter(), cap),
                       threads=int(threads),
                       mip_rel_gap=mip_rel_gap, assignment=None, upper_bound=ub)
    results, best, best_name = [], -math.inf, "none"
    for name in todo:
        t0 = time.perf_counter()
        # every bound gets what is left of the one limit (at least a sliver: each
        # returns a valid bound, if a weak one, when its time runs out)
        ctx = dataclasses.replace(ctx, time_limit=min(max(deadline - t0, 0.05), cap))
        r = bounds[name](problem, ctx, partition)
        r.time = r.time or time.perf_counter() - t0
        results.append(r)
        if progress is not None:
            progress(name, r.time, ub, r.bound)
        if r.bound > best:
            best, best_name = r.bound, name
    lb = max(best, 0.0) if best > -math.inf else 0.0
    if ub < lb <= ub * (1 + 1e-6):  # solver tolerances; never above a confirmed cost
        lb = ub
    if lb > ub * (1 + 1e-6) + 1e-12:
        raise JaxplaceError(f"bound {best_name} ({lb!r}) exceeds the partition's cost "
                            f"({ub!r}) under {objective.label}: a defect, please report "
                            "it", field="methods")
    assignment = getattr(costs, "assignment", None)
    settings = {"time_limit": time_limit, "rung_time_limit": rung_time_limit,
                "threads": int(threads),
                "mip_rel_gap": mip_rel_gap, "methods": list(todo),
                "objective": objective.name}
    return Certificate(lower_bound=float(lb), upper_bound=ub, partition=assignment,
                       partition_source=source, method=best_name, results=results,
                       tolerance=OPTIMAL_RTOL + mip_rel_gap, settings=settings)


class ClosedFormCertify:
    """Mixin for an `Objective`: `certify` with its closed-form `lower_bound` as the
    one bound "simple" (`class Energy(ClosedFormCertify, Objective)`)."""

    bound_methods: tuple[str, ...] = ("simple",)
    default_bounds: tuple[str, ...] = ("simple",)

    def certify(self, problem, partition=None, methods=None, **settings):
        return certify_with(self, problem, partition, methods,
                            {"simple": self.simple_bound}, **settings)

    def simple_bound(self, problem, ctx, partition):
        """The closed-form `lower_bound` as a certificate bound."""
        from jaxplace.bounds.base import MethodResult

        return MethodResult("simple", float(self.lower_bound(problem)), "closed form",
                            0.0, kind="closed-form")


__all__ = ["ClosedFormCertify", "certify_with"]
