"""`SearchRequest`: how every search method is called, and `finish`, how it answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import jax
import numpy as np

from jaxplace.cost import simple_lower_bound
from jaxplace.partition import Partition
from jaxplace.problem import Problem
from jaxplace.reference import decode_reference
from jaxplace.search.driver import Run
from jaxplace.search.result import History, Result
from jaxplace.search.stop import Progress, StopRule

#: Largest graph whose DFS first solution is decoded before the search starts (the
#: NumPy reference DP is O(n^2 k): about 0.2 s at n = 2000, 1.5 s at 5000).
FIRST_SOLUTION_MAX_NODES = 8000
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
    def lower_bound(self) -> float:
        return problem_lower_bound(self.problem)

    @property
    def latency(self) -> bool:
        return self.problem.objective == "latency"

    @property
    def hetero(self) -> bool:
        """Throughput on unequal devices: candidates also carry device keys."""
        return self.problem.hetero

    @cached_property
    def fitness(self):
        """What a candidate costs: the throughput decoder (with the window) or, for
        latency problems, the makespan of the list schedule."""
        from jaxplace.search.programs import DecodeFitness, HeteroFitness, LatencyFitness

        if self.hetero:
            return HeteroFitness(self.spec)
        if self.latency:
            return LatencyFitness(self.spec)
        return DecodeFitness(self.spec, self.window)

    @cached_property
    def device(self):
        """(Spec, DeviceGraph) of the problem, built once per search, padded to the
        coarse `search_spec` (one compiled program serves a whole class of graphs)
        unless `SPEC_STEPS` is 0."""
        from jaxplace.decoder.layout import device_graph, graph_structure, search_spec

        if self.latency:  # (LatencySpec, LatencyGraph) of the list scheduler
            from jaxplace.latency.decoder import latency_graph

            return latency_graph(self.problem.latency)
        if self.hetero:  # (HeteroSpec, HeteroGraph): node and device keys
            from jaxplace.hetero.decoder import hetero_graph

            return hetero_graph(self.problem.pipeline_instance, self.problem.k)
        st = graph_structure(self.problem.graph)
        spec = search_spec(self.problem, st, SPEC_STEPS) if SPEC_STEPS else None
        return device_graph(self.problem, spec, structure=st)

    @cached_property
    def first_solution(self) -> Result | None:
        """The DFS linearization sliced once by the float64 reference; over
        FIRST_SOLUTION_MAX_NODES (where the O(n^2 k) DP takes seconds) cut into k
        pieces of equal work instead (plain problems only, else None). Latency
        problems: the EFT greedy's list schedule."""
        from jaxplace.search.baselines import dfs_order, order_to_priorities

        if self.hetero:  # the DFS linearization on the devices fastest first
            from jaxplace.hetero.search import hetero_first

            return hetero_first(self)
        if self.latency:  # the EFT greedy (HEFT upward ranks)
            from jaxplace.latency.search import latency_seeds

            return finish(self, "eft", latency_seeds(self.problem)[0], 1, History.empty(),
                          False)
        order = dfs_order(self.problem.graph)
        x = order_to_priorities(order)
        if self.problem.n <= FIRST_SOLUTION_MAX_NODES:
            return finish(self, "dfs", x, 1, History.empty(), False)
        part = balanced_cut(self.problem, order)
        if part is None:
            return None
        return Result(cost=float(part.cost), partition=part, priorities=x, evaluations=1,
                      wall_time=time.perf_counter() - self.start, history=History.empty(),
                      method="dfs-balanced", lower_bound=self.lower_bound)

    @cached_property
    def window(self) -> int | None:
        """Static block window for the search's decoder (None: the full DP).

        Blocks of more units than any block of a partition costing at most 1.05x the
        first solution can hold are never scored exactly: candidates that would need
        them are worse than the first solution, and get an achievable over-estimate.
        The window is the padded class's own (`jaxplace.decoder.window.search_window`:
        one per (N, K), or the full DP when the first solution needs more), so graphs
        of one class share programs.
        """
        if self.latency or self.hetero:
            return None
        first = self.first_solution
        if not self.windowed or first is None or not np.isfinite(first.cost):
            return None
        from jaxplace.decoder.window import block_bounds, search_window

        return search_window(block_bounds(self.problem), self.spec, first.cost)

    @property
    def spec(self):
        return self.device[0]

    @property
    def graph(self):
        return self.device[1]

    def run(self, phase: str, **kw) -> Run:
        """Driver settings for one phase of this search."""
        kw.setdefault("progress", self.progress)
        n = None if self.hetero else self.problem.n  # hetero: device keys come along
        return Run(stop=self.stop, start=self.start, observer=self.observer,
                   n=n, lb=self.lower_bound, phase=phase, **kw)


def finish(req: SearchRequest, method: str, x, evaluations: int, history: History,
           interrupted: bool, info: dict | None = None) -> Result:
    """The `Result` of priorities x, decoded by the float64 reference (exact)."""
    if req.hetero:  # x: node priorities and device keys
        from jaxplace.hetero.search import hetero_result

        return hetero_result(req, method, x, evaluations, history, interrupted, info)
    x = np.asarray(x, np.float32)[:req.problem.n]
    if req.latency:
        from jaxplace.latency.search import latency_result

        return latency_result(req, method, x, evaluations, history, interrupted, info)
    part = decode_reference(req.problem, x)
    return Result(cost=float(part.cost), partition=part, priorities=x,
                  evaluations=int(evaluations), wall_time=time.perf_counter() - req.start,
                  history=history, method=method, lower_bound=req.lower_bound,
                  interrupted=interrupted, info=info or {})


def problem_lower_bound(problem: Problem) -> float:
    """The simple lower bound of the problem's objective (bottleneck or makespan)."""
    if problem.hetero:
        from jaxplace.hetero.bound import lower_bound as hetero_lower_bound

        return hetero_lower_bound(problem.pipeline_instance, problem.k)
    if problem.objective == "latency":
        from jaxplace.latency.reference import lower_bound

        return lower_bound(problem.latency)
    return float(simple_lower_bound(problem))


def balanced_cut(problem: Problem, order: np.ndarray) -> Partition | None:
    """`order` cut into min(k, n) contiguous pieces of about equal work (O(n + tensors);
    a first solution for graphs too large for the reference DP). None when the problem
    has placement units, CPU blocks or CPU-only ops, or the cut is infeasible."""
    from jaxplace.cost import evaluate_partition

    g = problem.graph
    if problem.cpus or not g.units.trivial or not bool(problem.supported.all()):
        return None
    k = min(problem.k, g.num_nodes)
    csum = np.cumsum(g.work[order])
    targets = csum[-1] * np.arange(1, k) / k
    cuts = np.unique(np.clip(np.searchsorted(csum, targets, side="right"), 1,
                             g.num_nodes - 1))
    assignment = np.empty(g.num_nodes, np.int64)
    for b, piece in enumerate(np.split(order, cuts)):
        assignment[piece] = b
    cost = evaluate_partition(problem, assignment).bottleneck
    if not np.isfinite(cost):
        return None
    return Partition(np.asarray(order, np.int64), tuple(int(c) for c in cuts), assignment,
                     float(cost))


def initial_population(key, P: int, width: int, seeds: np.ndarray | None) -> np.ndarray:
    """(P, width) float32 uniform keys, the first rows replaced by `seeds`."""
    X0 = np.array(jax.random.uniform(key, (P, width)), np.float32)
    if seeds is not None and len(seeds):
        s = np.asarray(seeds, np.float32)[:P]
        X0[:len(s), :s.shape[1]] = s
        X0[:len(s), s.shape[1]:] = 0.0
    return X0


__all__ = ["SearchRequest", "finish", "initial_population", "problem_lower_bound"]
