"""One HiGHS solve of a model given as plain arrays (numpy and highspy only).

Kept free of jaxplace imports so that `_worker.py` can run it in a fresh process
without importing the package (bottleneck-guess runs its k solves in parallel).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import highspy
import numpy as np

INF = highspy.kHighsInf


@dataclass
class SolveResult:
    """Outcome of one HiGHS solve, in time units (model units times scale)."""

    status: str  # HiGHS model status string, e.g. "Optimal", "Time limit reached"
    bound: float  # valid lower bound on the model's optimum (dual bound, or LP optimum)
    primal: float  # incumbent objective, inf when none
    gap: float  # HiGHS mip_gap (inf when unknown)
    time: float  # solve seconds (run() only)
    nodes: int
    col_value: np.ndarray | None  # incumbent (None when none)
    history: list = field(default_factory=list)  # [(time, incumbent, bound)]


_scheduler_threads: list[int] = []  # threads of this process's HiGHS scheduler, once set


def _set(h: highspy.Highs, name: str, value) -> None:
    if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS rejected option {name}={value!r}")


def solve_arrays(arrays: dict, *, relax: bool, time_limit: float, threads: int = 1,
                 mip_rel_gap: float = 1e-6, z_floor: float = 0.0, scale: float = 1.0,
                 start: np.ndarray | None = None, objective_bound: float | None = None,
                 progress=None, throttle: float = 0.5, seed: int = 0) -> SolveResult:
    """Load and solve one model given as plain arrays (also the worker of process pools).

    The returned `bound` is valid whatever happens: the MIP dual bound (or the LP optimum
    when the LP is solved to optimality), never below `z_floor` (z's column bound, in
    time units), +inf when the model is proven infeasible.
    """
    threads = max(1, int(threads))
    if _scheduler_threads and _scheduler_threads[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
        _scheduler_threads.clear()
    if not _scheduler_threads:
        _scheduler_threads.append(threads)
    h = highspy.Highs()
    _set(h, "output_flag", False)
    _set(h, "threads", threads)
    _set(h, "random_seed", int(seed))
    if time_limit is not None and np.isfinite(time_limit):
        _set(h, "time_limit", float(max(time_limit, 1e-3)))
    if not relax:
        _set(h, "mip_rel_gap", float(mip_rel_gap))
        _set(h, "mip_abs_gap", 0.0)
    if objective_bound is not None and np.isfinite(objective_bound):
        _set(h, "objective_bound", float(objective_bound / scale))
    a = arrays
    integ = a["integrality"] if not relax else np.zeros_like(a["integrality"])
    exact_lp = not relax and not integ.any()  # no integer column: the LP is the problem
    relax = relax or exact_lp
    ncol, nrow = len(a["cost"]), len(a["row_lo"])
    st = h.passModel(ncol, nrow, len(a["value"]), int(highspy.MatrixFormat.kRowwise),
                     int(highspy.ObjSense.kMinimize), 0.0, a["cost"], a["col_lo"],
                     a["col_hi"], a["row_lo"], a["row_hi"], a["start"], a["index"],
                     a["value"], integ)
    if st != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS passModel failed: {st}")
    if start is not None and not relax:
        h.setSolution(ncol, np.arange(ncol, dtype=np.int32), np.asarray(start, np.float64))

    history: list = []
    t0 = time.perf_counter()
    last = [-np.inf]

    def record(e, force):
        d = e.data_out
        now = time.perf_counter() - t0
        if not force and now - last[0] < throttle:
            return
        last[0] = now
        inc = d.mip_primal_bound * scale if np.isfinite(d.mip_primal_bound) else np.inf
        bnd = max(d.mip_dual_bound * scale, z_floor) if np.isfinite(
            d.mip_dual_bound) else z_floor
        history.append((now, float(inc), float(bnd)))
        if progress is not None:
            progress(now, float(inc), float(bnd))

    def on_sol(e):
        return (record(e, True))
    def on_tick(e):
        return (record(e, False))
    if not relax:
        h.cbMipImprovingSolution += on_sol
        h.cbMipInterrupt += on_tick
    try:
        h.run()
    finally:
        if not relax:
            h.cbMipImprovingSolution -= on_sol
            h.cbMipInterrupt -= on_tick
    elapsed = time.perf_counter() - t0
    ms = h.getModelStatus()
    status = h.modelStatusToString(ms)
    info = h.getInfo()
    col = None
    if relax:
        primal = np.inf
        nodes = 0
        if ms == highspy.HighsModelStatus.kOptimal:
            bound = max(info.objective_function_value * scale, z_floor)
            col = np.asarray(h.getSolution().col_value)
            if exact_lp:
                primal = info.objective_function_value * scale
        elif ms == highspy.HighsModelStatus.kInfeasible:
            bound = np.inf
        else:
            bound = z_floor
        gap = np.inf
    else:
        nodes = int(info.mip_node_count)
        has = info.primal_solution_status == 2
        primal = info.objective_function_value * scale if has else np.inf
        if has:
            col = np.asarray(h.getSolution().col_value)
        if ms == highspy.HighsModelStatus.kInfeasible:
            # nothing at all, or nothing below the cutoff: the optimum is at least it
            bound = np.inf if objective_bound is None else float(objective_bound)
        else:
            db = info.mip_dual_bound
            bound = max(db * scale, z_floor) if np.isfinite(db) else z_floor
            if np.isfinite(primal):
                bound = min(bound, primal)
        gap = float(info.mip_gap) if has else np.inf
    if not relax:
        history.append((elapsed, float(primal), float(bound)))
    return SolveResult(status=status, bound=float(bound), primal=float(primal), gap=gap,
                       time=elapsed, nodes=nodes, col_value=col, history=history)


def result_to_dict(res: SolveResult) -> dict:
    return asdict(res)


def result_from_dict(d: dict) -> SolveResult:
    return SolveResult(**d)
