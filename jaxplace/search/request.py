"""`SearchRequest`: how every search method is called, and `finish`, how it answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import jax
import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.api import simple_lower_bound
from jaxplace.objectives.registry import objective_of
from jaxplace.problem import Problem
from jaxplace.search.driver import Run
from jaxplace.search.result import History, Result
from jaxplace.search.stop import Progress, StopRule

#: Size classes per doubling of the search's padded shapes (0: the decoder's own
#: buckets, 8 per doubling); see `jaxplace.decoder.layout.search_spec`.
SPEC_STEPS = 2


@dataclass
class SearchRequest:
    """Everything a method gets: problem, key, budget, stop rule and reporting.

    Attributes:
        problem: the instance.
        seed: the integer seed; `key` is jax.random.key(seed).
        budget: decoder evaluations to spend (already defaulted by the method entry).
        stop: the stop rule (time limit, target, patience, cancel event).
        observer: called with a `Progress` after every compiled chunk.
        progress: progress bar on stderr (None: only on a terminal).
        seeds: (S, n) priority vectors to start from, or None.
        population_size: for population methods (None: the method's default).
        options: method-specific keywords (e.g. BRKGA's elite_fraction).
        start: perf_counter() when the search started (the time limit counts from it).
        windowed: score candidates with a block window derived from the first
            solution (`window`); False: the full DP for every candidate.
    """

    problem: Problem
    seed: int
    budget: int
    stop: StopRule = field(default_factory=StopRule)
    observer: Callable[[Progress], None] | None = None
    progress: bool | None = None
    seeds: np.ndarray | None = None
    population_size: int | None = None
    options: dict = field(default_factory=dict)
    start: float = field(default_factory=time.perf_counter)
    windowed: bool = True

    @property
    def key(self) -> jax.Array:
        return jax.random.key(self.seed)

    @cached_property
    def objective(self):
        """The problem's `jaxplace.objectives.Objective`: it answers everything below."""
        return objective_of(self.problem)

    @cached_property
    def lower_bound(self) -> float:
        return simple_lower_bound(self.problem)

    @cached_property
    def fitness(self):
        """What a candidate costs under the objective (a hashable `fitness(data, X)`)."""
        return self.objective.fitness(self)

    @cached_property
    def device(self):
        """(spec, device graph) of the objective's compiled fitness, built once per
        search (throughput: padded to the coarse `search_spec`, so one compiled program
        serves a whole class of graphs unless `SPEC_STEPS` is 0)."""
        return self.objective.device(self)

    @cached_property
    def first_solution(self) -> Result | None:
        """A first solution found before anything compiles (throughput: the DFS
        linearization sliced once by the float64 reference, or on larger graphs cut
        into k pieces of equal work, `jaxplace.objectives.throughput.search`; latency:
        the EFT greedy)."""
        return self.objective.first_solution(self)

    @cached_property
    def window(self) -> int | None:
        """Static block window of the objective's fitness (None: the full DP)."""
        return self.objective.window(self)

    @property
    def spec(self):
        return self.device[0]

    @property
    def graph(self):
        return self.device[1]

    def run(self, phase: str, **kw) -> Run:
        """Driver settings for one phase of this search."""
        kw.setdefault("progress", self.progress)
        n = self.objective.row_width(self.problem)
        return Run(stop=self.stop, start=self.start, observer=self.observer,
                   n=n, lb=self.lower_bound, phase=phase, **kw)


def finish(req: SearchRequest, method: str, x, evaluations: int, history: History,
           interrupted: bool, info: dict | None = None) -> Result:
    """The `Result` of search row x, decoded by the objective's float64 reference."""
    return req.objective.finish(req, method, x, evaluations, history, interrupted, info)


def initial_population(key, P: int, width: int, seeds: np.ndarray | None) -> np.ndarray:
    """(P, width) float32 uniform keys, the first rows replaced by `seeds`."""
    X0 = np.array(jax.random.uniform(key, (P, width)), np.float32)
    if seeds is not None and len(seeds):
        s = np.asarray(seeds, np.float32)[:P]
        X0[:len(s), :s.shape[1]] = s
        X0[:len(s), s.shape[1]:] = 0.0
    return X0


def check_seeds(problem: Problem, seeds) -> np.ndarray:
    """(S, n) float32 priority vectors from (S, n), (n,) or a flat (S * n,) array of
    finite numbers; anything else is a one-line JaxplaceError naming `seeds`."""
    try:
        a = np.asarray(seeds, dtype=np.float32)
    except (TypeError, ValueError):
        raise JaxplaceError(f"must be an (S, {problem.n}) array of numbers (one priority "
                            "per node per seed)", field="seeds") from None
    n = problem.n
    if not (a.ndim == 2 and a.shape[1] == n) and not (a.ndim == 1 and a.size % n == 0):
        raise JaxplaceError(f"has shape {a.shape}, expected (S, {n}): one priority per "
                            "node per seed", field="seeds")
    if not np.isfinite(a).all():
        raise JaxplaceError("must hold finite priorities (NaN or inf found)", field="seeds")
    return a.reshape(-1, n)


__all__ = ["SearchRequest", "check_seeds", "finish", "initial_population"]
