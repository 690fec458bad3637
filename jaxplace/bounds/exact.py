"""The exact MTPP MIP (Archer et al., ICML 2024; ../shared/docs/mtpp.md section 3).

k blocks numbered in DAG order, per-tensor crossing variables, linear overflow and hard
capacity (see `_model`). Strengthened with z >= the best bound known so far (the simple
bound at least), an aggregated symmetry-breaking row (empty blocks come last), a MIP
start from the best partition (renumbered to DAG order) and an objective cutoff.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.bounds._model import (
    BlockModel,
    BlockSpec,
    build_block_model,
    dag_numbering,
    solve_model,
    start_vector,
)
from jaxplace.bounds.base import (
    BoundContext,
    MethodResult,
    Relaxable,
    from_solve,
    skipped,
    unmodelled,
)
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.problem import Problem


def exact_model(problem: Problem, *, relax: bool = False, z_lb: float | None = None,
                symmetry: bool = True) -> BlockModel:
    """The exact MIP (or its LP relaxation) as a BlockModel.

    Args:
        z_lb: a valid lower bound on OPT to put on z (default: the simple bound).
        symmetry: add the empty-blocks-last row.
    """
    k = problem.k
    L = simple_lower_bound(problem)
    zl = L if z_lb is None else max(L, float(z_lb))
    spec = BlockSpec(k, div=np.ones(k), mem_scale=np.ones(k), z_lb=zl,
                     empty_last=symmetry and k > 1)
    return build_block_model(problem, spec, relax=relax)


def exact_bound(problem: Problem, assignment=None, *, relax: bool = False,
                time_limit: float = 60.0, threads: int = 1, mip_rel_gap: float = 1e-6,
                z_lb: float | None = None, progress=None, cutoff: bool = True,
                model: BlockModel | None = None):
    """Solve the exact MIP, warm-started from `assignment` when given.

    Returns:
        (SolveResult, assignment or None, BlockModel): the solve (its `bound` is the dual
        bound, valid even at a time limit), the MIP's incumbent as a checked block
        assignment (blocks in DAG order) when it has one, and the model.
    """
    if model is None:
        model = exact_model(problem, relax=relax, z_lb=z_lb)
    start = ub = None
    if assignment is not None:
        pc = evaluate_partition(problem, assignment)
        if pc.feasible:
            a = dag_numbering(pc.assignment, pc.block_order)
            ub = pc.bottleneck
            start = start_vector(model, problem, a, ub)
    obj_bound = None
    if cutoff and ub is not None and not relax:
        obj_bound = ub * (1 + 1e-7) + 1e-12
    res = solve_model(model, relax=relax, time_limit=time_limit, threads=threads,
                      mip_rel_gap=mip_rel_gap, start=start, objective_bound=obj_bound,
                      progress=progress)
    if obj_bound is not None and res.bound > ub:
        # "infeasible below the cutoff" with our own partition under it: trust the partition
        res.bound = float(ub)
    found = None
    if not relax and res.col_value is not None:
        found = model.assignment(res.col_value)
    return res, found, model


@dataclass(frozen=True)
class ExactBound(Relaxable):
    """The exact MIP as a ladder method (its LP relaxation when `relax`).

    The MIP starts from the context's best partition, with z >= the best bound proven
    so far; its incumbent comes back as `MethodResult.assignment`, its (time,
    incumbent, bound) trace as `MethodResult.history`.
    """

    name: str
    relax: bool = False

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := unmodelled(problem):
            return skipped(self, why)
        t0 = time.perf_counter()
        lb = context.lower_bound
        z_lb = None if self.relax or not math.isfinite(lb) else max(
            lb, simple_lower_bound(problem))
        model = exact_model(problem, relax=self.relax, z_lb=z_lb)
        res, found, _ = exact_bound(problem, None if self.relax else context.assignment,
                                    relax=self.relax, time_limit=context.time_limit,
                                    threads=context.threads,
                                    mip_rel_gap=context.mip_rel_gap, model=model,
                                    progress=context.progress)
        extra = {} if self.relax else {"assignment": found, "history": list(res.history)}
        return from_solve(self, res, model, time.perf_counter() - t0, **extra)
