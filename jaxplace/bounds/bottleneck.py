"""Three-superblock relaxations of MTPP (Archer et al., ICML 2024; docs/problem.md section 3).

The heaviest-work block P_j of an optimal partition (work >= the simple bound L) with
superblocks before and after it: minimize f(middle) subject to work(middle) >= L.
Variants drop the acyclic-quotient rows (`no-dag`) or the tensor terms (`no-io`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from jaxplace.bounds._model import BlockModel, BlockSpec, build_block_model, solve_model
from jaxplace.bounds.base import (
    BoundContext,
    MethodResult,
    Relaxable,
    from_solve,
    skipped,
    unmodelled,
)
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.problem import Problem

VARIANTS = ("full", "no-dag", "no-io")


def bottleneck_spec(problem: Problem, variant: str = "full") -> BlockSpec:
    """min f(middle) over 3 superblocks in DAG order with work(middle) >= L."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    k = problem.k
    inf = np.inf
    return BlockSpec(
        3, div=np.array([inf, 1.0, inf]),
        mem_scale=np.array([max(k - 1, 0), 1, max(k - 1, 0)], dtype=float),
        dag=variant != "no-dag", io=variant != "no-io",
        work_rows=((np.array([0.0, 1.0, 0.0]), throughput_lower_bound(problem)),),
        empty=tuple(b for b in (0, 2) if k == 1))


def bottleneck_model(problem: Problem, variant: str = "full", *,
                     relax: bool = False) -> BlockModel:
    """The bottleneck relaxation (or its LP relaxation) as a BlockModel."""
    return build_block_model(problem, bottleneck_spec(problem, variant), relax=relax)


def bottleneck_bound(problem: Problem, variant: str = "full", *, relax: bool = False,
                     time_limit: float = 60.0, threads: int = 1, mip_rel_gap: float = 1e-6):
    """(SolveResult, BlockModel) of the bottleneck relaxation; `.bound` is valid."""
    model = bottleneck_model(problem, variant, relax=relax)
    res = solve_model(model, relax=relax, time_limit=time_limit, threads=threads,
                      mip_rel_gap=mip_rel_gap)
    return res, model


@dataclass(frozen=True)
class BottleneckBound(Relaxable):
    """The bottleneck relaxation `variant` as a ladder method (its LP when `relax`)."""

    name: str
    variant: str = "full"
    relax: bool = False

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := unmodelled(problem):
            return skipped(self, why)
        t0 = time.perf_counter()
        res, model = bottleneck_bound(problem, self.variant, relax=self.relax,
                                      time_limit=context.time_limit,
                                      threads=context.threads,
                                      mip_rel_gap=context.mip_rel_gap)
        return from_solve(self, res, model, time.perf_counter() - t0)
