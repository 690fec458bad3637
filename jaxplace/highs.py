"""HiGHS for every jaxplace MIP and LP: one solve of a model given as plain arrays,
the options, model loading and result reading shared by the solvers that drive HiGHS
themselves, and the process-wide task scheduler record (numpy and highspy only).

The one owner of these internals for `bounds`, `exact` and `latency`. Kept free of other
jaxplace imports so that `bounds.worker` (bottleneck-guess runs its k solves in parallel
processes) needs nothing else from the package.
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


class HighsScheduler:
    """The thread count of this process's HiGHS task scheduler.

    HiGHS keeps ONE task scheduler per process (a C++ global, not per `Highs`
    instance): the first `run()` sizes it from its `threads` option, and a later
    instance asking for a different count fails silently (kError, model status
    kNotset, objective 0.0: HiGHS keeps one task scheduler per process). highspy cannot
    report the size, so this object remembers it and resets the scheduler before a
    solve that wants another count. The record is process-wide because the thing it
    describes is; there is exactly one instance, `SCHEDULER`. Solves that need
    different thread counts at the same time belong in different processes (see
    `worker`); within one process, solves with different counts must not overlap.
    """

    def __init__(self) -> None:
        self.threads: int | None = None  # None until this process's first solve

    def use(self, threads: int) -> None:
        """Make the scheduler run `threads` threads (reset it when it has another size)."""
        if self.threads is not None and self.threads != threads:
            highspy.Highs.resetGlobalScheduler(True)
        self.threads = threads


SCHEDULER = HighsScheduler()


def set_option(h: highspy.Highs, name: str, value) -> None:
    """Set one HiGHS option; a rejected option is a bug (RuntimeError), not a user error."""
    if h.setOptionValue(name, value) != highspy.HighsStatus.kOk:
        raise RuntimeError(f"HiGHS rejected option {name}={value!r}")


def new_highs(*, relax: bool, time_limit: float, threads: int, mip_rel_gap: float,
              objective_bound: float | None, scale: float, seed: int) -> highspy.Highs:
    """A silent Highs instance with the solve's options set (each one checked)."""
    h = highspy.Highs()
    set_option(h, "output_flag", False)
    set_option(h, "threads", threads)
    set_option(h, "random_seed", int(seed))
    if time_limit is not None and np.isfinite(time_limit):
        set_option(h, "time_limit", float(max(time_limit, 1e-3)))
    if not relax:
        set_option(h, "mip_rel_gap", float(mip_rel_gap))
        set_option(h, "mip_abs_gap", 0.0)
    if objective_bound is not None and np.isfinite(objective_bound):
        set_option(h, "objective_bound", float(objective_bound / scale))
    return h


def load_arrays(h: highspy.Highs, a: dict, integrality: np.ndarray) -> None:
    """passModel of rowwise CSR arrays (one flat call: the fast path)."""
    st = h.passModel(len(a["cost"]), len(a["row_lo"]), len(a["value"]),
                     int(highspy.MatrixFormat.kRowwise), int(highspy.ObjSense.kMinimize),
                     0.0, a["cost"], a["col_lo"], a["col_hi"], a["row_lo"], a["row_hi"],
                     a["start"], a["index"], a["value"], integrality)
    if st != highspy.HighsStatus.kOk:
        # the builders check the coefficient range first (bounds._numeric_range): a bug if reached
        raise RuntimeError(f"HiGHS passModel failed: {st}")


class _Recorder:
    """HiGHS MIP callbacks -> (time, incumbent, bound) history and `progress` calls."""

    def __init__(self, scale: float, z_floor: float, progress, throttle: float):
        self.scale, self.z_floor = scale, z_floor
        self.progress, self.throttle = progress, throttle
        self.history: list = []
        self.t0 = time.perf_counter()
        self.last = -np.inf

    def record(self, e, force: bool) -> None:
        d = e.data_out
        now = time.perf_counter() - self.t0
        if not force and now - self.last < self.throttle:
            return
        self.last = now
        inc = d.mip_primal_bound * self.scale if np.isfinite(d.mip_primal_bound) else np.inf
        bnd = max(d.mip_dual_bound * self.scale, self.z_floor) if np.isfinite(
            d.mip_dual_bound) else self.z_floor
        self.history.append((now, float(inc), float(bnd)))
        if self.progress is not None:
            self.progress(now, float(inc), float(bnd))

    def on_solution(self, e) -> None:
        self.record(e, True)

    def on_tick(self, e) -> None:
        self.record(e, False)

    def run(self, h: highspy.Highs) -> None:
        """h.run() with the callbacks attached (they persist across runs: detach)."""
        h.cbMipImprovingSolution += self.on_solution
        h.cbMipInterrupt += self.on_tick
        self.t0 = time.perf_counter()
        try:
            h.run()
        finally:
            h.cbMipImprovingSolution -= self.on_solution
            h.cbMipInterrupt -= self.on_tick


def read_lp(h: highspy.Highs, *, scale: float, z_floor: float, exact_lp: bool):
    """(bound, primal, col_value) of a solved LP; the bound is valid at any status."""
    ms = h.getModelStatus()
    info = h.getInfo()
    if ms == highspy.HighsModelStatus.kOptimal:
        primal = info.objective_function_value * scale if exact_lp else np.inf
        bound = max(info.objective_function_value * scale, z_floor)
        return bound, primal, np.asarray(h.getSolution().col_value)
    if ms == highspy.HighsModelStatus.kInfeasible:
        return np.inf, np.inf, None
    return z_floor, np.inf, None  # stopped early: its objective means nothing


def read_mip(h: highspy.Highs, *, scale: float, z_floor: float,
             objective_bound: float | None):
    """(bound, primal, gap, nodes, col_value) of a MIP; the dual bound is always valid."""
    info = h.getInfo()
    has = info.primal_solution_status == 2
    primal = info.objective_function_value * scale if has else np.inf
    col = np.asarray(h.getSolution().col_value) if has else None
    if h.getModelStatus() == highspy.HighsModelStatus.kInfeasible:
        # nothing at all, or nothing below the cutoff: the optimum is at least it
        bound = np.inf if objective_bound is None else float(objective_bound)
    else:
        db = info.mip_dual_bound
        bound = max(db * scale, z_floor) if np.isfinite(db) else z_floor
        if np.isfinite(primal):
            bound = min(bound, primal)
    gap = float(info.mip_gap) if has else np.inf
    return bound, primal, gap, int(info.mip_node_count), col


def solve_arrays(arrays: dict, *, relax: bool, time_limit: float, threads: int = 1,
                 mip_rel_gap: float = 1e-6, z_floor: float = 0.0, scale: float = 1.0,
                 start: np.ndarray | None = None, objective_bound: float | None = None,
                 progress=None, throttle: float = 0.5, seed: int = 0,
                 options: dict | None = None) -> SolveResult:
    """Load and solve one model given as plain arrays (also the worker's entry).

    The returned `bound` is valid whatever happens: the MIP dual bound (or the LP optimum
    when the LP is solved to optimality), never below `z_floor` (z's column bound, in
    time units), +inf when the model is proven infeasible. `options`: more HiGHS
    options (each checked), e.g. deterministic work limits such as `mip_max_nodes`.
    """
    threads = max(1, int(threads))
    SCHEDULER.use(threads)
    h = new_highs(relax=relax, time_limit=time_limit, threads=threads,
                  mip_rel_gap=mip_rel_gap, objective_bound=objective_bound, scale=scale,
                  seed=seed)
    for name, value in (options or {}).items():
        set_option(h, name, value)
    integ = arrays["integrality"] if not relax else np.zeros_like(arrays["integrality"])
    exact_lp = not relax and not integ.any()  # no integer column: the LP is the problem
    relax = relax or exact_lp
    load_arrays(h, arrays, integ)
    ncol = len(arrays["cost"])
    if start is not None and not relax:
        h.setSolution(ncol, np.arange(ncol, dtype=np.int32), np.asarray(start, np.float64))
    rec = _Recorder(scale, z_floor, progress, throttle)
    t0 = time.perf_counter()
    if relax:
        h.run()
    else:
        rec.run(h)
    elapsed = time.perf_counter() - t0
    status = h.modelStatusToString(h.getModelStatus())
    if relax:
        bound, primal, col = read_lp(h, scale=scale, z_floor=z_floor, exact_lp=exact_lp)
        gap, nodes = np.inf, 0
    else:
        bound, primal, gap, nodes, col = read_mip(h, scale=scale, z_floor=z_floor,
                                                  objective_bound=objective_bound)
        rec.history.append((elapsed, float(primal), float(bound)))
    return SolveResult(status=status, bound=float(bound), primal=float(primal), gap=gap,
                       time=elapsed, nodes=nodes, col_value=col, history=rec.history)


def result_to_dict(res: SolveResult) -> dict:
    """A SolveResult as a picklable dict (the worker's reply)."""
    return asdict(res)


def result_from_dict(d: dict) -> SolveResult:
    """The inverse of `result_to_dict`."""
    return SolveResult(**d)
