"""Guess and check: is there a partition whose every block costs at most T?

The exact block model (blocks in DAG order, cumulative y[v, b] = "v in block b or
earlier", see `_model`) with z's column capped at T, no objective (HiGHS stops at the
first feasible point), and the station windows of T fixed as column bounds
(y[v, b] = 0 before v's earliest block, 1 from its latest on; `station`). The
windows and the empty-blocks-last row hold for every partition of cost <= T renumbered
in DAG order, so the checks' answers are exact:

- "infeasible" (HiGHS proved it, or the windows alone did): OPT > T, a lower bound;
- "feasible": a partition of cost <= T, returned (and re-evaluated by the caller);
- "unknown": the time limit struck first; it proves nothing either way.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.bounds._model import BlockModel, BlockSpec, build_block_model, solve_arrays
from jaxplace.bounds.station import SLACK, StationData, overloaded, windows
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.problem import Problem

INFEASIBLE, FEASIBLE, UNKNOWN = "infeasible", "feasible", "unknown"


@dataclass
class CheckResult:
    """One check of a guess T.

    Attributes:
        T: the guess (time units).
        answer: INFEASIBLE, FEASIBLE or UNKNOWN.
        assignment: (n,) int64 block per node when FEASIBLE (blocks in DAG order).
        time: wall seconds (build and solve).
        nodes: branch-and-bound nodes.
        fixed: fraction of the y columns the windows fixed.
        by: "windows" when the windows alone refuted T, else "highs".
    """

    T: float
    answer: str
    assignment: np.ndarray | None
    time: float
    nodes: int = 0
    fixed: float = 0.0
    by: str = "highs"


def check_model(problem: Problem, T: float, lo: np.ndarray, hi: np.ndarray, *,
                relax: bool = False) -> BlockModel:
    """The feasibility model of guess T with windows (lo, hi) fixed (see module doc)."""
    k = problem.k
    spec = BlockSpec(k, div=np.ones(k), mem_scale=np.ones(k),
                     z_lb=throughput_lower_bound(problem), empty_last=k > 1)
    model = build_block_model(problem, spec, relax=relax)
    model.cost[:] = 0.0
    model.col_hi[0] = max(T * (1 + SLACK) / model.scale, model.col_lo[0])
    if k > 1:
        n = problem.n
        b = np.arange(k - 1)[None, :]
        yl = model.col_lo[model.y0:model.c0].reshape(n, k - 1)
        yh = model.col_hi[model.y0:model.c0].reshape(n, k - 1)
        yh[b < lo[:, None]] = 0.0  # v is not in block b or earlier
        yl[b >= hi[:, None]] = 1.0  # v is in block hi[v] or earlier
    return model


def check_guess(problem: Problem, data: StationData, T: float, *, time_limit: float,
                threads: int = 1, relax: bool = False) -> CheckResult:
    """Answer guess T (see module doc); `relax`: the LP only (feasible proves nothing,
    so it reports UNKNOWN)."""
    t0 = time.perf_counter()
    if T < throughput_lower_bound(problem) * (1 - SLACK):
        return CheckResult(T, INFEASIBLE, None, time.perf_counter() - t0, by="simple")
    lo, hi = windows(data, T)
    if (lo > hi).any() or overloaded(data, lo, hi, T):
        return CheckResult(T, INFEASIBLE, None, time.perf_counter() - t0, fixed=1.0,
                           by="windows")
    model = check_model(problem, T, lo, hi, relax=relax)
    k = problem.k
    fixed = float(np.mean(model.col_lo[model.y0:model.c0]
                           == model.col_hi[model.y0:model.c0])) if k > 1 else 1.0
    res = solve_arrays(model.arrays(), relax=relax, time_limit=time_limit,
                       threads=threads, mip_rel_gap=1.0, scale=model.scale)
    elapsed = time.perf_counter() - t0
    if math.isinf(res.bound):  # HiGHS proved the model infeasible
        return CheckResult(T, INFEASIBLE, None, elapsed, res.nodes, fixed)
    if relax or res.col_value is None:
        return CheckResult(T, UNKNOWN, None, elapsed, res.nodes, fixed)
    return CheckResult(T, FEASIBLE, model.assignment(res.col_value), elapsed, res.nodes,
                       fixed)
