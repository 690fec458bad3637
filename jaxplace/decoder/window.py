"""Window policies: how long a block the lanes decoder considers, chosen explicitly.

The DP over an order of N units looks, at step r, at every block start l < r. When
any L+1 units together cost more than the costs we care about, blocks longer than L
units can never be optimal for those candidates, and the DP can look at the last L
positions only (a static `window` of the compiled program, much less work). The
restriction is exact for every candidate whose restricted cost stays below
`block_bound(L)`; the `Evaluator` recomputes the others with the full DP.

A policy is an explicit object owned by one `Evaluator`:

- `FullWindow()`: always the full DP (history-free; the default of `jp.evaluate`).
- `FixedWindow(L)`: always blocks of at most L units (with the exactness check).
- `AdaptiveWindow()`: the window of the previous call's largest cost times `slack`;
  its state (that cost) lives in the policy object, so two evaluators never share it.
- `SampledWindow()`: within each call, the first rows (one round of chunks) with the
  full DP, the rest with the window their largest cost needs (history-free: a call's
  speed depends on its own rows only; the default of `jp.evaluate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from jaxplace.decoder.layout import Spec, graph_structure
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

#: Windows are chosen so that the bound exceeds the last call's largest cost by this.
WINDOW_SLACK = 1.05
#: A restricted window is used only when it is at most this fraction of N.
WINDOW_MAX_FRACTION = 0.85
#: Relative margin of the exactness check of a restricted window (float32 rounding).
WINDOW_MARGIN = 1e-4


def block_bounds(problem: Problem, structure: dict | None = None) -> np.ndarray:
    """(U,) float64: entry L is a lower bound on the cost of any block of L+1 units.

    An accelerator block costs at least its work (transfers and overflow are >= 0,
    infeasible blocks cost +inf), a CPU block its summed CPU latency, so any L+1
    units cost at least the sum of the L+1 smallest unit works (or CPU latencies).
    """
    st = structure or graph_structure(problem.graph)
    b = np.cumsum(np.sort(st["work"]))
    if problem.cpus:
        cpu = np.bincount(st["unit_of"], weights=problem.cpu_latency, minlength=st["U"])
        b = np.minimum(b, np.cumsum(np.sort(cpu)))
    return b


def block_bound(problem: Problem, window: int | None,
                bounds: np.ndarray | None = None) -> float:
    """Lower bound on the cost of a block of window+1 units (+inf: no restriction)."""
    b = block_bounds(problem) if bounds is None else bounds
    return float(b[window]) if window is not None and window < len(b) else np.inf


def needed_window(bounds: np.ndarray, expected_max: float | None) -> int | None:
    """The shortest window exact for costs up to WINDOW_SLACK * expected_max (not
    rounded); None when there is no usable cost to go by."""
    if expected_max is None or not np.isfinite(expected_max) or expected_max <= 0:
        return None
    return int(np.searchsorted(bounds, WINDOW_SLACK * expected_max, side="right"))


def window_for(bounds: np.ndarray, spec: Spec, expected_max: float | None) -> int | None:
    """Static window exact for costs up to WINDOW_SLACK * expected_max, rounded up
    to a bucket (few compiled variants); None for the full DP."""
    L = needed_window(bounds, expected_max)
    if L is None:
        return None
    step = max(8, (1 << max(spec.N - 1, 1).bit_length()) // 32)
    L = -(-max(L, 1) // step) * step
    if L >= len(bounds) or L > WINDOW_MAX_FRACTION * spec.N:
        return None
    return L


#: The search's block window of a padded class (N units, K table rows) is about
#: N * WINDOW_CLASS_C / sqrt(K): on REGAL-like graphs (n 50-200) the window the first
#: solution needs is at most 0.69 N at k = 4, 0.49 N at 8, 0.34 N at 16 (180 graph/k
#: pairs), about 1.4 / sqrt(k) of N.
WINDOW_CLASS_C = 1.4
#: Class windows over this fraction of N are not used (full DP): at k = 4 a window of
#: 0.7 N scored no faster than the full DP.
WINDOW_CLASS_MAX_FRACTION = 0.5


def class_window(spec: Spec) -> int | None:
    """The one restricted window of the padded class `spec` (N, K): N * WINDOW_CLASS_C
    / sqrt(K) rounded up to a multiple of 16 (the suffix sums' block); None when that
    is over WINDOW_CLASS_MAX_FRACTION of N."""
    L = -(-int(np.ceil(spec.N * WINDOW_CLASS_C / np.sqrt(max(spec.K, 1)))) // 16) * 16
    return None if L > WINDOW_CLASS_MAX_FRACTION * spec.N else L


def search_window(bounds: np.ndarray, spec: Spec, expected_max: float | None
                  ) -> int | None:
    """Static window of a search: the class window (`class_window`) when it is exact
    for costs up to WINDOW_SLACK * expected_max, else None (the full DP). A function
    of the padded class alone, so a class compiles at most two programs (window or
    full DP) whatever the graphs' costs."""
    need, W = needed_window(bounds, expected_max), class_window(spec)
    if need is None or W is None:
        return None
    return W if need <= W and W < len(bounds) else None


def largest_finite(costs: np.ndarray) -> float | None:
    """The largest finite cost, or None when there is none."""
    fin = costs[np.isfinite(costs)]
    return float(fin.max()) if len(fin) else None


class WindowPolicy(Protocol):
    """Chooses the static window of the next call and sees its costs afterwards."""

    def choose(self, bounds: np.ndarray, spec: Spec) -> int | None: ...

    def observe(self, costs: np.ndarray) -> None: ...


@dataclass
class FullWindow:
    """Always the full DP."""

    def choose(self, bounds: np.ndarray, spec: Spec) -> int | None:
        return None

    def observe(self, costs: np.ndarray) -> None:
        return None


@dataclass
class FixedWindow:
    """Blocks of at most `length` units (checked and recomputed where not exact)."""

    length: int

    def choose(self, bounds: np.ndarray, spec: Spec) -> int | None:
        return None if self.length >= spec.N else max(int(self.length), 1)

    def observe(self, costs: np.ndarray) -> None:
        return None


@dataclass
class AdaptiveWindow:
    """The window of the previous call's largest finite cost times WINDOW_SLACK."""

    expected_max: float | None = field(default=None)

    def choose(self, bounds: np.ndarray, spec: Spec) -> int | None:
        return window_for(bounds, spec, self.expected_max)

    def observe(self, costs: np.ndarray) -> None:
        seen = largest_finite(costs)
        if seen is not None:
            self.expected_max = seen


@dataclass
class SampledWindow:
    """Per call: a sample of rows with the full DP, the rest windowed (see module doc).

    The `Evaluator` scores the sample (`sample_rows` of the call's rows, one round of
    its chunks) first and asks `after_sample` for the rest's window; the exactness
    check and full-DP recomputation apply as for any window. Calls with fewer than
    `min_factor` x sample rows use the full DP throughout.
    """

    min_factor: int = 2

    def choose(self, bounds: np.ndarray, spec: Spec) -> int | None:
        return None

    def observe(self, costs: np.ndarray) -> None:
        return None

    def sample_rows(self, rows: int, round_rows: int) -> int:
        """Rows to score with the full DP first (0: the whole call is full DP)."""
        return round_rows if rows >= self.min_factor * round_rows else 0

    def after_sample(self, bounds: np.ndarray, spec: Spec, costs: np.ndarray
                     ) -> int | None:
        return window_for(bounds, spec, largest_finite(costs))


def window_policy(window) -> WindowPolicy:
    """A policy from "auto", "sample", None, an int, or a policy object (returned as
    is)."""
    if window is None:
        return FullWindow()
    if isinstance(window, str):
        if window == "auto":
            return AdaptiveWindow()
        if window == "sample":
            return SampledWindow()
        raise JaxplaceError(f"must be 'auto', 'sample', None or an int, got {window!r}",
                            field="window")
    if isinstance(window, int | np.integer):
        return FixedWindow(int(window))
    if hasattr(window, "choose") and hasattr(window, "observe"):
        return window
    raise JaxplaceError(f"must be 'auto', 'sample', None, an int or a WindowPolicy, got "
                        f"{type(window).__name__}", field="window")


__all__ = ["AdaptiveWindow", "FixedWindow", "FullWindow", "SampledWindow", "WINDOW_MARGIN",
           "WindowPolicy",
           "block_bound", "block_bounds", "class_window", "largest_finite", "needed_window",
           "search_window",
           "window_for",
           "window_policy"]
