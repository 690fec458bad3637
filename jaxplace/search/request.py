"""`SearchRequest`: how every search method is called, and `finish`, how it answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import jax
import numpy as np

from jaxplace.cost import simple_lower_bound
from jaxplace.problem import Problem
from jaxplace.reference import decode_reference
from jaxplace.search.driver import Run
from jaxplace.search.result import History, Result
from jaxplace.search.stop import Progress, StopRule


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

    @property
    def key(self) -> jax.Array:
        return jax.random.key(self.seed)

    @cached_property
    def lower_bound(self) -> float:
        return float(simple_lower_bound(self.problem))

    @cached_property
    def device(self):
        """(Spec, DeviceGraph) of the problem, built once per search."""
        from jaxplace.decoder.layout import device_graph

        return device_graph(self.problem)

    @property
    def spec(self):
        return self.device[0]

    @property
    def graph(self):
        return self.device[1]

    def run(self, phase: str, **kw) -> Run:
        """Driver settings for one phase of this search."""
        kw.setdefault("progress", self.progress)
        return Run(stop=self.stop, start=self.start, observer=self.observer,
                   n=self.problem.n, lb=self.lower_bound, phase=phase, **kw)


def finish(req: SearchRequest, method: str, x, evaluations: int, history: History,
           interrupted: bool, info: dict | None = None) -> Result:
    """The `Result` of priorities x, decoded by the float64 reference (exact)."""
    x = np.asarray(x, np.float32)[:req.problem.n]
    part = decode_reference(req.problem, x)
    return Result(cost=float(part.cost), partition=part, priorities=x,
                  evaluations=int(evaluations), wall_time=time.perf_counter() - req.start,
                  history=history, method=method, lower_bound=req.lower_bound,
                  interrupted=interrupted, info=info or {})


def initial_population(key, P: int, width: int, seeds: np.ndarray | None) -> np.ndarray:
    """(P, width) float32 uniform keys, the first rows replaced by `seeds`."""
    X0 = np.array(jax.random.uniform(key, (P, width)), np.float32)
    if seeds is not None and len(seeds):
        s = np.asarray(seeds, np.float32)[:P]
        X0[:len(s), :s.shape[1]] = s
        X0[:len(s), s.shape[1]:] = 0.0
    return X0


__all__ = ["SearchRequest", "finish", "initial_population"]
