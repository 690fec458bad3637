"""Thin host entry points over `Evaluator`: `evaluate`, `decode`, `evaluate_graphs`,
`make_evaluator`, and the one bounded cache of evaluators they share.

Each call looks its evaluator up in `EVALUATORS` (an explicit, bounded LRU cache
keyed by the problem object and the settings), so repeated calls on one problem do
not rebuild the padded arrays. `evaluate` picks its block window within each call
(`SampledWindow`: a first round of rows with the full DP, the rest with the window
their costs need, exactness checked), so a call's speed never depends on earlier
calls; `window=None` forces the full DP, and an `Evaluator` with `window="auto"`
adapts to the costs it has seen. On a single CPU device the chunks of a call run on
one host thread per core.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

import jax.numpy as jnp
import numpy as np

from jaxplace.decoder.batching import DEFAULT_MEMORY_BUDGET
from jaxplace.decoder.evaluator import AUTO_IMPL, Evaluator
from jaxplace.decoder.layout import DeviceGraph
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem


class EvaluatorCache:
    """At most `maxsize` evaluators, least recently used dropped first.

    Keys hold the problem object itself (identity, not equality), so an entry keeps
    its problem alive until it is evicted or `clear()` is called.
    """

    def __init__(self, maxsize: int = 8):
        self.maxsize = int(maxsize)
        self._items: OrderedDict = OrderedDict()

    def get(self, problem: Problem, **settings) -> Evaluator:
        if not isinstance(problem, Problem):
            raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                                field="problem")
        key = (id(problem), tuple(sorted((k, _hashable(v)) for k, v in settings.items())))
        hit = self._items.get(key)
        if hit is not None and hit[0] is problem:
            self._items.move_to_end(key)
            return hit[1]
        ev = Evaluator(problem, **settings)
        self._items[key] = (problem, ev)
        while len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return ev

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


#: The evaluators behind `evaluate` and `decode` (bounded; `EVALUATORS.clear()`).
EVALUATORS = EvaluatorCache()


def evaluate(problem: Problem, X, *, precision: str = "float32",
             chunk_size: int | None = None, devices: Sequence | None = None,
             memory_budget: int = DEFAULT_MEMORY_BUDGET, impl: str = AUTO_IMPL,
             window: int | str | None = "sample", threads: int | None = None
             ) -> np.ndarray:
    """(P,) float64 bottleneck costs of SliceGraph(Kahn(x)) for every row x of X.

    Same semantics as `objectives.throughput.reference.evaluate_reference` (ties to the smaller
    node index, overflow, hard capacity -> +inf, placement units, CPU blocks).
    `precision`: "float32" (within FLOAT32_RTOL) or "float64" (to rounding).
    `impl`: "auto" (the fused kernel on GPUs where it applies, else "lanes";
    `decoder.evaluator.resolve_impl`), "lanes", "simple" or "fused".
    `window`: "sample" (chosen within the call from a first round of full-DP rows),
    None (full DP) or an int (blocks of at most that many units); windowed costs are
    checked and recomputed with the full DP where the restriction may be inexact, so
    the costs do not depend on it. `threads`: host threads on a single CPU device
    (None: one per core). See `Evaluator` for the other settings.
    """
    obj = problem.objective_impl
    if not obj.supports("identical_devices"):  # the problem's own objective decodes
        return obj.evaluate(problem, X, precision=precision)
    devices = None if devices is None else tuple(devices)
    ev = EVALUATORS.get(problem, precision=precision, chunk_size=chunk_size,
                        devices=devices, memory_budget=memory_budget, impl=impl,
                        window=window, threads=threads)
    return ev(X)


def decode(problem: Problem, x, *, precision: str = "float32"):
    """The `Partition` of SliceGraph(Kahn(x)) for one (n,) x, or a list for (P, n).
    On unequal devices x may carry d device keys after the n priorities (float64
    reference decode; the Partition's `devices` maps stages to devices)."""
    obj = problem.objective_impl
    if not obj.supports("identical_devices"):
        return obj.decode(problem, x, precision=precision)
    return EVALUATORS.get(problem, precision=precision, window=None).decode(x)


def evaluate_graphs(problems: Sequence[Problem], X, *, precision: str = "float32"
                    ) -> np.ndarray:
    """(G, P) costs for G problems at once, X (G, P, n_max) (row i uses its first n_i).

    Pads all graphs to one Spec (`stack_graphs`) and runs one compiled function;
    graphs of different padded sizes, with or without placement units, mix freely.
    """
    return Evaluator(list(problems), precision=precision, window=None)(X)


def make_evaluator(problem: Problem, *, precision: str = "float32", impl: str = AUTO_IMPL
                   ) -> tuple[Callable[[jnp.ndarray], jnp.ndarray], DeviceGraph]:
    """(pure fn X (P, n) -> (P,) costs, its DeviceGraph): `Evaluator.score_fn`.

    Kept for existing code; prefer `Evaluator(problem).score_fn()`.
    """
    ev = Evaluator(problem, precision=precision, impl=impl, window=None)
    return ev.score_fn(), ev.graph


__all__ = ["EVALUATORS", "EvaluatorCache", "decode", "evaluate", "evaluate_graphs",
           "make_evaluator"]
