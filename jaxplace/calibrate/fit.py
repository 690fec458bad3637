"""Fit a device profile to measured stage times.

The unknowns are the profile's matrix and vector peaks (fp32), memory bandwidth,
launch overhead and backward launch overhead; the data are the forward and backward
seconds of measured pipeline stages with their op tables (`costs.op_table`). The fit
minimizes the squared log-ratio of predicted to measured times (relative errors, so
small and large stages weigh alike) with scipy's least_squares, in log-parameters.

Which parameters it fits is the caller's choice (`free`). With microbenchmarks, the
rates (peaks, bandwidth) are theirs and the stages fit only the two overheads: the
per-op cost of running an op inside a pipeline stage (a traced GraphModule, under
autograd for the backward) is what a tiny eager op does not show, while a few models'
stages cannot tell a slow matrix unit from a slow memory (a model that never waits on
memory says nothing of the bandwidth), so rates fitted to them do not carry over to
another model (`jaxplace calibrate --loo` prints a held-out model's errors under both fits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from jaxplace.calibrate.costs import OpTable, stage_times
from jaxplace.errors import JaxplaceError
from jaxplace.importers.devices import DeviceProfile

PARAMS = ("matrix_flops", "vector_flops", "mem_bw", "launch_s", "backward_launch_s")


@dataclass(frozen=True)
class StageSample:
    """One measured plan: its op table and (stages,) measured fwd / bwd seconds."""

    table: OpTable
    fwd: np.ndarray
    bwd: np.ndarray
    model: str = ""


def profile_params(profile: DeviceProfile) -> np.ndarray:
    lb = profile.launch_s if profile.backward_launch_s is None else profile.backward_launch_s
    return np.array([profile.peak("fp32", matrix=True), profile.peak("fp32", matrix=False),
                     profile.mem_bw, profile.launch_s, lb])


def with_params(base: DeviceProfile, p: Sequence[float], *, name: str,
                calibration: dict) -> DeviceProfile:
    """`base` with every matrix/vector rate scaled to the fitted fp32 peaks (dtype
    ratios kept) and the fitted bandwidth and launch overheads."""
    pm, pv, bw, launch, launch_b = (float(x) for x in p)
    sm = pm / base.peak("fp32", matrix=True)
    sv = pv / base.peak("fp32", matrix=False)
    return replace(base, name=name, description=f"measured: {base.description}",
                   matrix={k: v * sm for k, v in base.matrix.items()},
                   vector={k: v * sv for k, v in base.vector.items()}, mem_bw=bw,
                   launch_s=launch, backward_launch_s=launch_b, overrides={},
                   calibration=dict(calibration))


#: the overheads: what measured stages fit when microbenchmarks give the rates
OVERHEADS = ("launch_s", "backward_launch_s")


def residuals(logp: np.ndarray, samples: Sequence[StageSample], fixed: np.ndarray,
              free: np.ndarray) -> np.ndarray:
    p = fixed.copy()
    p[free] = np.exp(logp)
    out = []
    for s in samples:
        f, b = stage_times(s.table, tuple(p))
        out.append(np.log(np.maximum(f, 1e-300) / s.fwd))
        out.append(np.log(np.maximum(b, 1e-300) / s.bwd))
    return np.concatenate(out)


def fit_params(samples: Sequence[StageSample], start: np.ndarray,
               free: Sequence[str] = PARAMS) -> np.ndarray:
    """(matrix peak, vector peak, bandwidth, launch, backward launch): those named in
    `free` fitted to `samples` from `start`, the others kept at `start`."""
    from scipy.optimize import least_squares

    if not samples:
        raise JaxplaceError("no measured stages to fit", field="samples")
    unknown = sorted(set(free) - set(PARAMS))
    if unknown or not free:
        raise JaxplaceError(f"unknown parameters {unknown}; known: {', '.join(PARAMS)}",
                            field="free")
    for s in samples:
        if np.any(~np.isfinite(s.fwd) | (s.fwd <= 0)) or np.any(~np.isfinite(s.bwd) |
                                                                 (s.bwd <= 0)):
            raise JaxplaceError("measured times must be positive", field=s.model or "sample")
    fixed = np.asarray(start, float).copy()
    fixed[3:] = np.maximum(fixed[3:], 1e-9)  # a zero overhead has no log: start at 1 ns
    idx = np.asarray([PARAMS.index(f) for f in free])
    res = least_squares(residuals, np.log(fixed[idx]), args=(samples, fixed, idx),
                        method="trf", max_nfev=400)
    fixed[idx] = np.exp(res.x)
    return fixed


def fit_profile(samples: Sequence[StageSample], base: DeviceProfile, *,
                rates: np.ndarray | None = None, name: str = "measured",
                calibration: dict | None = None) -> DeviceProfile:
    """A profile fitted to `samples`, the rest (dtypes, link, memory) from `base`.

    With `rates` (the microbenchmarks' parameters, `MicroResult.params()`) the rates
    are kept and only the overheads fitted; without, all five from `base`'s."""
    start = profile_params(base) if rates is None else np.asarray(rates, float)
    free = PARAMS if rates is None else OVERHEADS
    p = fit_params(samples, start, free)
    idx = np.asarray([PARAMS.index(f) for f in free])
    err = residuals(np.log(p[idx]), samples, p, idx)
    cal = {"fitted": dict(zip(PARAMS, (float(x) for x in p), strict=True)),
           "free": list(free), "models": sorted({s.model for s in samples}),
           "stages": int(sum(len(s.fwd) for s in samples)),
           "rms_log_error": float(np.sqrt(np.mean(err ** 2))),
           **(calibration or {})}
    return with_params(base, p, name=name, calibration=cal)
