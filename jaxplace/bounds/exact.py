"""The exact MTPP MIP (Archer et al., ICML 2024).

k blocks numbered in DAG order, per-tensor crossing variables, linear overflow and hard
capacity (see `_model`). Strengthened with z >= the best bound known so far (the simple
bound at least), an aggregated symmetry-breaking row (empty blocks come last), a MIP
start from the best partition (renumbered to DAG order) and an objective cutoff.

With CPU blocks or nodes unsupported on accelerators (the NeurIPS 2020 model,
docs/problem.md section 5) the k + cpus blocks in DAG order each get a binary
accelerator/CPU type (`BlockSpec.cpu_blocks`): a CPU block costs its nodes' CPU latency
and pays no transfers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

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
)
from jaxplace.objectives.throughput.cost import evaluate_partition, throughput_lower_bound
from jaxplace.problem import Problem


def exact_model(problem: Problem, *, relax: bool = False, z_lb: float | None = None,
                symmetry: bool = True) -> BlockModel:
    """The exact MIP (or its LP relaxation) as a BlockModel.

    Args:
        z_lb: a valid lower bound on OPT to put on z (default: the simple bound).
        symmetry: add the empty-blocks-last row.
    """
    typed = has_cpu_blocks(problem)
    nb = problem.num_blocks if typed else problem.k
    L = throughput_lower_bound(problem)
    zl = L if z_lb is None else max(L, float(z_lb))
    if not math.isfinite(zl):  # infeasible; the model says so (a node fits no block)
        zl = 0.0
    spec = BlockSpec(nb, div=np.ones(nb), mem_scale=np.ones(nb), z_lb=zl,
                     empty_last=symmetry and nb > 1, cpu_blocks=typed)
    return build_block_model(problem, spec, relax=relax)


def has_cpu_blocks(problem: Problem) -> bool:
    """CPU blocks or nodes unsupported on accelerators: the typed-block model."""
    return problem.cpus > 0 or not bool(problem.supported.all())


def _start(model: BlockModel, problem: Problem, pc):
    """The MIP start of a feasible partition: blocks renumbered to DAG order (and, with
    CPU blocks, which positions are CPUs: the partition's, the spare CPUs on the empty
    positions at the end)."""
    a = dag_numbering(pc.assignment, pc.block_order)
    if model.t0 < 0:
        return start_vector(model, problem, a, pc.bottleneck)
    cpu = np.zeros(model.nb, dtype=bool)
    cpu[a] = pc.assignment >= problem.k
    spare = problem.cpus - int(cpu.sum())
    empty = np.setdiff1d(np.arange(model.nb), a)
    cpu[empty[len(empty) - spare:] if spare > 0 else []] = True
    return start_vector(model, problem, a, pc.bottleneck, cpu)


def exact_bound(problem: Problem, assignment=None, *, relax: bool = False,
                time_limit: float = 60.0, threads: int = 1, mip_rel_gap: float = 1e-6,
                z_lb: float | None = None, progress=None, cutoff: bool = True,
                model: BlockModel | None = None, highs_options: dict | None = None,
                confirm: bool = True):
    """Solve the exact MIP, warm-started from `assignment` when given
    (`highs_options`: more HiGHS options, e.g. deterministic node limits).

    `confirm`: when the warm-started solve claims that nothing beats its start (and
    found nothing cheaper), solve again without the start and keep that bound
    (`confirm_without_start`): HiGHS 1.15's presolve can fix z at its lower bound and
    then accept the start's image in the presolved model as optimal, returning the
    start's objective as a proven optimum although a cheaper partition exists. A
    caller that only wants better partitions, not a bound (the MIP polish), may skip it.

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
            ub = pc.bottleneck
            start = _start(model, problem, pc)
    obj_bound = None
    if cutoff and ub is not None and not relax:
        obj_bound = ub * (1 + 1e-7) + 1e-12
    t0 = time.perf_counter()
    res = solve_model(model, relax=relax, time_limit=time_limit, threads=threads,
                      mip_rel_gap=mip_rel_gap, start=start, objective_bound=obj_bound,
                      progress=progress, options=highs_options)
    if obj_bound is not None and res.bound > ub:
        # "infeasible below the cutoff" with our own partition under it: trust the partition
        res.bound = float(ub)
    found = None
    if not relax and res.col_value is not None:
        found = model.assignment(res.col_value)
    if confirm and start is not None and not relax and proves_start(res, ub, mip_rel_gap):
        left = time_limit - (time.perf_counter() - t0)
        res, found = confirm_without_start(
            problem, model, res, found, ub, time_limit=left, threads=threads,
            mip_rel_gap=mip_rel_gap, cutoff=cutoff, progress=progress,
            highs_options=highs_options)
    return res, found, model


#: Relative slack within which a MIP's bound "reaches" its incumbent (a claimed proof).
PROOF_RTOL = 1e-9
#: Seconds a confirming solve always gets, even when the first one used the whole limit.
CONFIRM_MIN_SECONDS = 0.05
#: A confirming solve's status when it finished below the first one's bound...
DISAGREES = "disagrees: with the MIP start {first} at {claimed:.10g}, without it {second}"
#: ... and when it stopped (a limit) below it: its own bound stands, unproven.
UNCONFIRMED = ("unconfirmed: with the MIP start {first} at {claimed:.10g}, without it "
               "{second}")


def claims_proof(res, ub: float, mip_rel_gap: float) -> bool:
    """Does the solve claim that nothing is cheaper than its incumbent or `ub`?"""
    best = min(ub, res.primal)
    return math.isfinite(best) and res.bound >= best * (1 - mip_rel_gap - PROOF_RTOL)


def proves_start(res, ub: float, mip_rel_gap: float) -> bool:
    """Does the solve claim its MIP start (cost `ub`) optimal, having found nothing
    cheaper? (The claim HiGHS's presolve has made falsely.)"""
    improved = math.isfinite(res.primal) and res.primal < ub * (1 - PROOF_RTOL)
    return not improved and claims_proof(res, ub, mip_rel_gap)


def confirm_without_start(problem: Problem, model: BlockModel, res, found, ub: float, *,
                          time_limit: float, threads: int, mip_rel_gap: float,
                          cutoff: bool, progress, highs_options: dict | None):
    """Solve `model` again without the MIP start (the cutoff kept) and return its bound.

    The first solve's bound is not used: its claim is what is being checked. When the
    second solve proves less, its status says so (`DISAGREES`: it finished, with a
    cheaper partition; `UNCONFIRMED`: it stopped at a limit) and its smaller bound
    stands; a cheaper incumbent it finds is returned.

    Returns:
        (SolveResult, assignment or None) as `exact_bound`'s first two.
    """
    best = ub if found is None else min(
        ub, evaluate_partition(problem, found).bottleneck)
    obj_bound = best * (1 + 1e-7) + 1e-12 if cutoff else None
    again = solve_model(model, time_limit=max(time_limit, CONFIRM_MIN_SECONDS),
                        threads=threads, mip_rel_gap=mip_rel_gap, start=None,
                        objective_bound=obj_bound, progress=progress,
                        options=highs_options)
    col = res.col_value
    if again.col_value is not None:
        found2 = model.assignment(again.col_value)
        cost2 = evaluate_partition(problem, found2).bottleneck
        if cost2 < best:
            found, best, col = found2, cost2, again.col_value
    bound = min(float(again.bound), best)
    if again.status in ("Optimal", "Infeasible") and bound >= best * (1 - PROOF_RTOL):
        bound = best  # its own optimum, up to the float noise of HiGHS's objective
    status = again.status if again.status != "Infeasible" else res.status
    if bound < res.bound * (1 - mip_rel_gap - PROOF_RTOL):
        finished = again.status in ("Optimal", "Infeasible")
        status = (DISAGREES if finished else UNCONFIRMED).format(
            first=res.status, claimed=res.bound, second=again.status)
    primal = min(res.primal, again.primal)
    gap = 0.0 if bound >= primal else (primal - bound) / primal if primal > 0 else math.inf
    return replace(res, status=status, bound=bound, primal=primal, gap=gap,
                   time=res.time + again.time, nodes=res.nodes + again.nodes,
                   col_value=col, history=res.history + again.history), found


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
        t0 = time.perf_counter()
        if math.isinf(throughput_lower_bound(problem)):  # a node fits no device at all
            return MethodResult(self.name, math.inf, "Infeasible", time.perf_counter() - t0,
                                kind=self.kind)
        lb = context.lower_bound
        z_lb = None if self.relax or not math.isfinite(lb) else max(
            lb, throughput_lower_bound(problem))
        model = exact_model(problem, relax=self.relax, z_lb=z_lb)
        res, found, _ = exact_bound(problem, None if self.relax else context.assignment,
                                    relax=self.relax, time_limit=context.time_limit,
                                    threads=context.threads,
                                    mip_rel_gap=context.mip_rel_gap, model=model,
                                    progress=context.progress)
        extra = {} if self.relax else {"assignment": found, "history": list(res.history)}
        return from_solve(self, res, model, time.perf_counter() - t0, **extra)
