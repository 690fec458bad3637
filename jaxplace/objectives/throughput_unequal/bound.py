"""A valid lower bound on the pipeline bottleneck on unequal devices.

Every stage's cost is at least its compute time, and the stages use at most
K = min(k, d) distinct devices. For the set U of devices used, any weights lambda >= 0
on U summing to 1 give

    bottleneck >= sum_p lambda_p load_p >= sum_v min_{p in U} lambda_p times[v, p],

(the dual of the fractional assignment LP). With times proportional to one work per
op (speed s_p) and lambda_p ~ s_p this is total work / total speed. The bound takes
the minimum over the sets U of K devices of the best lambda found by exponentiated
supergradient ascent from lambda_p ~ 1 / (total time on p) (any lambda is valid, the
ascent only tightens it), and at least the largest single op on its fastest device.
Transfers and memory are ignored, so it is the "simple" bound of this objective.
"""

from __future__ import annotations

import itertools

import numpy as np

#: Supergradient steps per device set.
STEPS = 200
#: Device sets tried at most (beyond: all devices, a weaker but valid bound).
MAX_SETS = 256


def _dual(t: np.ndarray, lam: np.ndarray) -> tuple[float, np.ndarray]:
    """(sum_v min_p lam_p t[v, p], supergradient (d,))."""
    w = t * lam[None, :]
    j = np.argmin(w, axis=1)
    return float(w[np.arange(len(t)), j].sum()), np.bincount(j, weights=t[np.arange(len(t)), j],
                                                              minlength=t.shape[1])


def load_bound(t: np.ndarray, steps: int = STEPS) -> float:
    """max over lambda (tried) of sum_v min_p lambda_p t[v, p], t (n, |U|)."""
    tot = t.sum(axis=0)
    if np.any(tot <= 0):
        return 0.0  # a device runs everything in no time
    lam = (1.0 / tot) / np.sum(1.0 / tot)
    best, g = _dual(t, lam)
    eta = 1.0
    for _ in range(steps):
        scale = max(float(np.max(np.abs(g))), 1e-300)
        lam = lam * np.exp(eta * (g / scale - np.mean(g / scale)))
        lam /= lam.sum()
        val, g = _dual(t, lam)
        if val > best:
            best = val
        else:
            eta *= 0.7
    return best


def lower_bound(inst, k: int) -> float:
    """A valid lower bound on the best bottleneck of at most k stages (module doc)."""
    t = np.asarray(inst.times, np.float64)
    d = t.shape[1]
    K = max(1, min(int(k), d))
    single = float(np.max(np.min(t, axis=1))) if len(t) else 0.0
    sets = list(itertools.combinations(range(d), K))
    if len(sets) > MAX_SETS:
        sets = [tuple(range(d))]
    return max(single, min(load_bound(t[:, list(U)]) for U in sets))


__all__ = ["lower_bound", "load_bound"]
