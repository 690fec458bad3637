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
import threading
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
from jaxplace.highs import result_from_dict
from jaxplace.objectives.throughput.cost import throughput_lower_bound
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


#: A solve's share of the method's time never drops below this (k solves splitting a
#: small limit); a solve that would start with less than MIN_START left is not run.
MIN_SHARE = 0.05
MIN_START = 0.02
#: How long a worker process may run past the method's deadline (HiGHS noticing its
#: limit, the reply) before it is killed and its solve counts as not run.
WORKER_GRACE = 0.5
#: The status of a solve not run (or killed) because the method's time was up, and of
#: one not run because another solve's bound is already the lowest any can report.
NOT_RUN = "skipped (time limit)"
NOT_NEEDED = "skipped (another guess at the floor)"


def _not_run(z_floor: float, status: str = NOT_RUN) -> SolveResult:
    """A solve not run: z's column bound is a valid (weak) bound on its model."""
    return SolveResult(status=status, bound=z_floor, primal=np.inf, gap=np.inf, time=0.0,
                       nodes=0, col_value=None)


def _solve_one(args, timeout: float | None) -> SolveResult:
    """One solve in this process (HiGHS keeps its own time limit: no `timeout`)."""
    arrays, kwargs = args
    res = solve_arrays(arrays, **kwargs)
    res.col_value = None
    return res


def _solve_in_process(args, timeout: float | None) -> SolveResult:
    """One solve in a fresh Python process (`python -m jaxplace.bounds.worker`, same
    interpreter): HiGHS's thread count is process-wide, and a fresh process neither
    forks a multithreaded parent nor re-imports the caller's __main__ the way
    multiprocessing's spawn does. Killed after `timeout` seconds (result: not run)."""
    try:
        proc = subprocess.run([sys.executable, "-m", WORKER_MODULE], input=pickle.dumps(args),
                              capture_output=True, check=False, cwd=_PACKAGE_ROOT,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return _not_run(args[1]["z_floor"])
    if proc.returncode != 0:
        raise RuntimeError("HiGHS worker failed: "
                           + proc.stderr.decode(errors="replace")[-2000:])
    return result_from_dict(pickle.loads(proc.stdout))


class _Deadline:
    """Hands each solve, as it starts, its share of the time left: the time left times
    the workers over the solves not yet started (so time a solve did not use goes to the
    later ones), at least MIN_SHARE, at most what is left. The share also leaves, for
    this solve and the later ones, the most start-up seen so far (a solve's wall less
    the time HiGHS was given: loading the model, a worker process's start, HiGHS
    noticing its limit), which HiGHS's clock does not count. Under a time limit,
    once a solve reports `floor` (no solve can report less) the rest are not needed:
    the minimum is decided, and the time goes to the ladder's next rungs."""

    def __init__(self, time_limit: float, workers: int, solves: int, t0: float,
                 floor: float):
        self.end = t0 + time_limit if np.isfinite(time_limit) else np.inf
        self.workers, self.left, self.floor = workers, solves, floor
        self.startup = 0.0
        self.decided = False
        self.lock = threading.Lock()

    def rest(self) -> float:
        """Seconds left for HiGHS to work in a solve started now."""
        return self.end - time.perf_counter() - self.startup

    def skip(self) -> None:
        with self.lock:
            self.left -= 1

    def share(self) -> float | None:
        """The next solve's HiGHS time limit (inf when unlimited), or None: skip it."""
        with self.lock:
            self.left -= 1
            if not np.isfinite(self.end):
                return np.inf
            rest = self.rest()
            if rest < MIN_START or self.decided:
                return None
            # the solves after this one start up too (each worker runs left/workers)
            later = rest - math.ceil(self.left / self.workers) * self.startup
            return min(max(MIN_SHARE, later * self.workers / (self.left + 1)), rest)

    def seen(self, wall: float, limit: float, res: SolveResult) -> None:
        with self.lock:  # HiGHS may overrun its limit a little: that counts too
            self.startup = max(self.startup, wall - min(res.time, limit))
            self.decided |= bool(np.isfinite(self.end) and res.bound <= self.floor)


def guess_bound(problem: Problem, *, relax: bool = False, time_limit: float = 60.0,
                workers: int = 1, mip_rel_gap: float = 1e-6, progress=None):
    """min_j LB_j with the k solves spread over `workers` processes.

    `time_limit` is the budget of the whole method, the models' builds included: each
    solve gets its share of what is left when it starts (`_Deadline`). A solve the
    deadline cuts (not started: its model is not even built; or a worker killed
    WORKER_GRACE s past the deadline) counts with z's column bound, a valid bound on
    its model, so the minimum stays a valid bound; under a time limit, so does one not
    started once another solve reported that floor (the minimum is decided). With no
    time limit every solve runs to its end, as before.

    Returns:
        (bound, per_j list of SolveResult, build seconds).
    """
    t0 = time.perf_counter()
    specs = [guess_spec(problem, j) for j in range(1, problem.k + 1)]
    clock = _Deadline(time_limit, max(1, min(int(workers), problem.k)), problem.k, t0,
                      floor=min(max(s.z_lb, 0.0) for s in specs))
    solve = _solve_in_process if clock.workers > 1 else _solve_one
    builds: list[float] = []

    def run(j: int) -> SolveResult:
        spec = specs[j - 1]
        if clock.decided or clock.rest() < MIN_START:  # not worth building the model
            clock.skip()
            return _not_run(max(spec.z_lb, 0.0), NOT_NEEDED if clock.decided else NOT_RUN)
        m = build_block_model(problem, spec, relax=relax)
        builds.append(m.build_time)
        z_floor = float(m.col_lo[0]) * m.scale
        limit = clock.share()
        if limit is None:
            return _not_run(z_floor, NOT_NEEDED if clock.decided else NOT_RUN)
        job = (m.arrays(), dict(relax=relax, time_limit=limit, threads=1,
                                mip_rel_gap=mip_rel_gap, scale=m.scale, z_floor=z_floor))
        start = time.perf_counter()
        timeout = clock.end - start + WORKER_GRACE if np.isfinite(clock.end) else None
        res = solve(job, timeout)
        if res.status != NOT_RUN:  # a worker killed at its timeout tells nothing
            clock.seen(time.perf_counter() - start, limit, res)
        return res

    k = problem.k
    results: list[SolveResult] = []
    with ThreadPoolExecutor(max_workers=clock.workers) if clock.workers > 1 \
            else nullcontext() as pool:
        js = range(1, k + 1)
        for j, r in enumerate(pool.map(run, js) if pool else map(run, js), 1):
            results.append(r)
            if progress is not None:
                progress(j, k, r)
    bound = float(min(r.bound for r in results))
    return bound, results, sum(builds)


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
                            nodes=sum(s.nodes for s in per),
                            solves=sum(s.status not in (NOT_RUN, NOT_NEEDED) for s in per))
