"""The simple bound L = max(max_v work(v), sum_v work(v) / k) (docs/problem.md section 3).

Communication ignored; with CPU blocks or colocation it is taken per placement unit
(see `jaxplace.objectives.throughput.cost.throughput_lower_bound`). Closed form: no solver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from jaxplace.bounds.base import BoundContext, MethodResult
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.problem import Problem


@dataclass(frozen=True)
class SimpleBound:
    """The closed-form simple bound (valid for every problem, CPU blocks included)."""

    name: str = "simple"
    kind: str = "closed-form"

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        t0 = time.perf_counter()
        L = throughput_lower_bound(problem)
        return MethodResult(self.name, L, "closed form", time.perf_counter() - t0,
                            kind=self.kind)
