"""A small row-by-row MILP builder that hands HiGHS plain CSR arrays, and the pieces
the two latency MILPs share (horizon, scaling, solve and decode)."""

from __future__ import annotations

import numpy as np

from jaxplace.objectives.latency import _events
from jaxplace.objectives.latency.instance import LatencyInstance, Schedule


class ModelBuilder:
    """Columns and rows appended one at a time; `arrays()` gives `solve_arrays` input."""

    def __init__(self) -> None:
        self.col_lo: list[float] = []
        self.col_hi: list[float] = []
        self.cost: list[float] = []
        self.integ: list[int] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []
        self.index: list[np.ndarray] = []
        self.value: list[np.ndarray] = []

    @property
    def num_cols(self) -> int:
        return len(self.cost)

    def cols(self, count: int, lo=0.0, hi=np.inf, *, integer: bool = False,
             cost: float = 0.0) -> np.ndarray:
        first = len(self.cost)
        self.col_lo += list(np.broadcast_to(np.asarray(lo, dtype=np.float64), (count,)))
        self.col_hi += list(np.broadcast_to(np.asarray(hi, dtype=np.float64), (count,)))
        self.cost += [float(cost)] * count
        self.integ += [int(integer)] * count
        return np.arange(first, first + count, dtype=np.int64)

    def row(self, terms: dict, lo: float = -np.inf, hi: float = np.inf) -> None:
        """Add lo <= sum(coef * col) <= hi; `terms` maps column -> coefficient."""
        items = [(int(c), float(v)) for c, v in terms.items() if v != 0.0]
        self.index.append(np.asarray([c for c, _ in items], dtype=np.int32))
        self.value.append(np.asarray([v for _, v in items], dtype=np.float64))
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))

    def arrays(self) -> dict:
        lens = [len(i) for i in self.index]
        return {
            "cost": np.asarray(self.cost, dtype=np.float64),
            "col_lo": np.asarray(self.col_lo, dtype=np.float64),
            "col_hi": np.asarray(self.col_hi, dtype=np.float64),
            "row_lo": np.asarray(self.row_lo, dtype=np.float64),
            "row_hi": np.asarray(self.row_hi, dtype=np.float64),
            "start": np.concatenate([[0], np.cumsum(lens)]).astype(np.int32),
            "index": (np.concatenate(self.index) if self.index
                      else np.zeros(0, np.int32)).astype(np.int32),
            "value": (np.concatenate(self.value) if self.value
                      else np.zeros(0)).astype(np.float64),
            "integrality": np.asarray(self.integ, dtype=np.uint8),
        }


def add(terms: dict, col: int, coef: float) -> dict:
    """terms[col] += coef (rows name a column more than once, e.g. S_u and S_c)."""
    terms[int(col)] = terms.get(int(col), 0.0) + float(coef)
    return terms


def serial_horizon(inst: LatencyInstance) -> float:
    """An upper bound on the optimum whenever some placement fits: every event run
    one after another, each at its slowest runnable device or link."""
    t = inst.times
    ops = float(np.sum(np.max(np.where(np.isfinite(t), t, 0.0), axis=1)))
    d = inst.num_devices
    off = ~np.eye(d, dtype=bool)
    worst = 0.0
    if d > 1:
        lat = float(np.max(inst.link_latency[off]))
        inv_bw = float(np.max(1.0 / inst.bandwidth[off]))
        worst = float(np.sum(lat + inst.tensor_bytes * inv_bw)) * (d - 1)
    return ops + worst


def horizon_and_start(inst: LatencyInstance, warm_start: Schedule | None):
    """(H, schedule or None): H >= the optimum (the big-M of both MILPs) and the best
    schedule known, which becomes the MIP start."""
    cands = [s for s in (warm_start, _events.greedy_schedule(inst)) if s is not None]
    best = min(cands, key=lambda s: s.makespan, default=None)
    if best is None:
        return serial_horizon(inst), None
    return best.makespan, best


def model_scale(inst: LatencyInstance, horizon: float) -> float:
    # HiGHS tolerances are absolute (1e-6 feasibility, 1e-9 dropped coefficients):
    # measure time in units of H/100 so that every time in the model is O(1..100); a
    # horizon of 0 (every event free) keeps seconds: 1 / (H/100) would overflow
    return horizon / 100.0 if horizon > 0 else 1.0
