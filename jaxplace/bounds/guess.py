"""bottleneck-guess (Archer et al., ICML 2024).

Guess that block j (1..k) of an optimal partition in DAG order is its heaviest-work
block: superblock 1 stands for blocks 1..j-1, superblock 3 for j+1..k. Then
z >= f(middle), z >= cost(S1)/(j-1), z >= cost(S3)/(k-j) (a superblock's cost counts
its work, the tensors crossing its own boundary once, and overflow beyond (j-1) M),
work(middle) >= L, work(middle) >= work(S1)/(j-1), work(middle) >= work(S3)/(k-j).
LB_j is valid only for the right j, so the bound is min_j LB_j; for k = 2 it is the
exact MIP. The k solves are independent: with several workers they run in worker
processes (`python -m jaxplace.bounds.worker`, one HiGHS thread each) fed by a thread
pool.
"""

from __future__ import annotations

import math
import pickle
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jaxplace.bounds._model import (
    BlockModel,
    BlockSpec,
    SolveResult,
    build_block_model,
    solve_arrays,
)
from jaxplace.bounds.base import BoundContext, MethodResult, Relaxable, skipped, unmodelled
from jaxplace.cost import throughput_lower_bound
from jaxplace.highs import result_from_dict
from jaxplace.problem import Problem

WORKER_MODULE = "jaxplace.bounds.worker"
# the folder that holds this jaxplace package: the workers run there so that `-m` finds
# this very package first (the child's sys.path starts with its working directory)
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def guess_spec(problem: Problem, j: int) -> BlockSpec:
    """LB_j's blocks, j in 1..k (block j of k is the heaviest-work one)."""
    k = problem.k
    if not 1 <= j <= k:
        raise ValueError(f"j must be in 1..{k}, got {j}")
    before, after = j - 1, k - j
    inf = np.inf
    div = np.array([before if before else inf, 1.0, after if after else inf], dtype=float)
    rows = [(np.array([0.0, 1.0, 0.0]), throughput_lower_bound(problem))]
    if before:
        rows.append((np.array([-1.0, before, 0.0]), 0.0))
    if after:
        rows.append((np.array([0.0, after, -1.0]), 0.0))
    empty = tuple(b for b, cnt in ((0, before), (2, after)) if cnt == 0)
    return BlockSpec(3, div=div, mem_scale=np.array([before, 1, after], dtype=float),
                     work_rows=tuple(rows), empty=empty)


def guess_model(problem: Problem, j: int, *, relax: bool = False) -> BlockModel:
    """LB_j's model, j in 1..k (block j of k is the heaviest-work one)."""
    return build_block_model(problem, guess_spec(problem, j), relax=relax)


def _solve_one(args) -> SolveResult:
    arrays, kwargs = args
    res = solve_arrays(arrays, **kwargs)
    res.col_value = None
    return res


def _solve_in_process(args) -> SolveResult:
    """One solve in a fresh Python process (`python -m jaxplace.bounds.worker`, same
    interpreter): HiGHS's thread count is process-wide, and a fresh process neither
    forks a multithreaded parent nor re-imports the caller's __main__ the way
    multiprocessing's spawn does."""
    proc = subprocess.run([sys.executable, "-m", WORKER_MODULE], input=pickle.dumps(args),
                          capture_output=True, check=False, cwd=_PACKAGE_ROOT)
    if proc.returncode != 0:
        raise RuntimeError("HiGHS worker failed: "
                           + proc.stderr.decode(errors="replace")[-2000:])
    return result_from_dict(pickle.loads(proc.stdout))


def guess_bound(problem: Problem, *, relax: bool = False, time_limit: float = 60.0,
                workers: int = 1, mip_rel_gap: float = 1e-6, progress=None):
    """min_j LB_j with the k solves spread over `workers` processes.

    `time_limit` is the budget of the whole method: each solve gets
    time_limit * workers / k seconds (at least 0.5 s).

    Returns:
        (bound, per_j list of SolveResult, build seconds).
    """
    k = problem.k
    models = [guess_model(problem, j, relax=relax) for j in range(1, k + 1)]
    build = sum(m.build_time for m in models)
    workers = max(1, min(int(workers), k))
    per = max(0.5, time_limit * workers / k) if np.isfinite(time_limit) else np.inf
    jobs = [(m.arrays(), dict(relax=relax, time_limit=per, threads=1,
                              mip_rel_gap=mip_rel_gap, scale=m.scale,
                              z_floor=float(m.col_lo[0]) * m.scale)) for m in models]
    results: list[SolveResult] = []
    with ThreadPoolExecutor(max_workers=workers) if workers > 1 else nullcontext() as pool:
        solved = pool.map(_solve_in_process, jobs) if pool else map(_solve_one, jobs)
        for j, r in enumerate(solved, 1):
            results.append(r)
            if progress is not None:
                progress(j, k, r)
    bound = float(min(r.bound for r in results))
    return bound, results, build


@dataclass(frozen=True)
class GuessBound(Relaxable):
    """bottleneck-guess as a ladder method (its LP relaxations when `relax`): the
    context's threads are its worker processes; `time_limit` covers all k solves."""

    name: str
    relax: bool = False

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := unmodelled(problem):
            return skipped(self, why)
        t0 = time.perf_counter()

        def solved(j, k, res):
            context.report(time.perf_counter() - t0, math.inf, res.bound)

        bound, per, build = guess_bound(problem, relax=self.relax,
                                        time_limit=context.time_limit,
                                        workers=context.threads,
                                        mip_rel_gap=context.mip_rel_gap, progress=solved)
        weakest = min(per, key=lambda s: s.bound)
        gaps = [s.gap for s in per if s.gap is not None and math.isfinite(s.gap)]
        return MethodResult(self.name, bound, weakest.status, time.perf_counter() - t0,
                            gap=None if self.relax else (max(gaps) if gaps else None),
                            kind=self.kind, build_time=build,
                            nodes=sum(s.nodes for s in per), solves=len(per))
