"""The DP over ideals as a rung of the certificate ladder (`registry.BOUNDS["ideals"]`).

What it bounds: the optimum over the partitions `objectives.throughput.cost.evaluate_partition`
accepts, i.e. contiguous splits (acyclic quotient of the forward graph, one piece per
device) with colocation classes, hard capacity, CPU blocks and unsupported nodes.
That is jaxplace's OPT, so when the DP finishes its bound is OPT itself and the
certificate is optimal. It says nothing about non-contiguous splits (one device holding
several pieces whose quotient has a cycle), which can be cheaper (Tarnawski et al.,
NeurIPS 2020, Table 1) and which jaxplace does not produce.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from jaxplace.bounds.base import BoundContext, MethodResult
from jaxplace.errors import JaxplaceError
from jaxplace.exact.dp import solve_ideals
from jaxplace.exact.lattice import DEFAULT_MAX_IDEALS
from jaxplace.problem import Problem


@dataclass(frozen=True)
class IdealsBound:
    """Exact DP over ideals (valid for every problem, CPU blocks included).

    Pruned by the context's best partition. Outcomes, all valid lower bounds on the
    optimum over contiguous splits:
    - finished: bound = OPT (status "Optimal"), its split as `assignment`;
    - no split at most the context's upper bound U: bound U ("Infeasible below cutoff");
      no feasible split at all: bound inf ("Infeasible");
    - stopped by `context.time_limit` (the DP phase): bound 0, "Time limit reached
      (unfinished)";
    - orphan backward units whose relaxation is not tight and too many ideals for the
      full DP (`solve_ideals`, `orphans`): bound = the relaxation's value, "Lower bound
      (orphan relaxation)", with the repaired split as `assignment`;
    - more than `max_ideals` ideals: bound 0, "skipped: ..." with the count reached.
    """

    name: str = "ideals"
    kind: str = "dp"
    max_ideals: int = DEFAULT_MAX_IDEALS

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        t0 = time.perf_counter()
        try:
            res = solve_ideals(problem, context.upper_bound, partition=context.assignment,
                               search=False, max_ideals=self.max_ideals,
                               time_limit=context.time_limit)
        except JaxplaceError as exc:
            if exc.field != "max_ideals":
                raise
            return MethodResult(self.name, 0.0, f"skipped: {exc.message}",
                                time.perf_counter() - t0, kind=self.kind)
        extra = {}
        if res.status == "optimal":
            bound, status, extra = res.cost, "Optimal", {"assignment": res.assignment}
        elif res.status == "above upper bound":
            bound, status = res.upper_bound, "Infeasible below cutoff"
        elif res.status == "infeasible":
            bound, status = math.inf, "Infeasible"
        elif res.status == "gap":  # orphan relaxation not tight, no full DP possible
            bound, status = res.lower_bound, "Lower bound (orphan relaxation)"
            extra = {"assignment": res.assignment}
        else:
            bound, status = 0.0, "Time limit reached (unfinished)"
        gap = 0.0
        if res.status == "gap":
            gap = (res.cost - bound) / res.cost if math.isfinite(res.cost) else None
        return MethodResult(self.name, bound, status, time.perf_counter() - t0,
                            gap=gap if res.finished else None, kind=self.kind,
                            build_time=res.times.get("tables", 0.0), solves=1, **extra)
