"""`search(problem, method)`: the one entry point to every search method."""

from __future__ import annotations

import dataclasses
import numbers
import threading
import time
from collections.abc import Callable

import numpy as np

from jaxplace.code_maps import release_compiled_code
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.api import simple_lower_bound
from jaxplace.objectives.registry import objective_of
from jaxplace.problem import Problem
from jaxplace.search.deadline import call_by, late_seconds
from jaxplace.search.registry import get_method
from jaxplace.search.request import SearchRequest, check_seeds
from jaxplace.search.result import Result
from jaxplace.search.stop import Progress, StopRule


def search(problem: Problem, method: str | None = None, *, budget: int | None = None,
           seed: int = 0, time_limit: float | None = None,
           target_ratio: float | None = None, stop: StopRule | None = None,
           observer: Callable[[Progress], None] | None = None,
           progress: bool | None = None, population_size: int | None = None,
           seeds=None, **options) -> Result:
    """Best partition of `problem` found by `method` within `budget` evaluations.

    For a latency problem (`Problem(..., objective="latency")`) the cost is the
    makespan of one inference and `Result.schedule` holds the schedule
    (`jaxplace.objectives.latency.search`).

    Args:
        problem: the instance.
        method: a name of `METHODS` (default: "default", the strongest).
        budget: decoder evaluations to spend (default: per method; 10,000 for the
            population methods).
        seed: PRNG seed; the same seed gives the same result.
        time_limit: seconds for the whole call (compile time included); the search
            stops after the compiled chunk that crosses it, and when that chunk is
            still compiling `deadline.late_seconds` later the call returns the best
            partition so far (at least the first solution; `info["stopped"]`),
            leaving the compile to finish in its thread (`search.deadline`).
            Overrides `stop.time_limit`.
        target_ratio: stop once cost <= target_ratio * simple lower bound. The search
            always stops when it reaches the lower bound (optimal).
        stop: a `StopRule` (time limit, absolute target, patience, cancel event).
        observer: called with a `Progress` after every compiled chunk.
        progress: progress bar on stderr (None: only on a terminal).
        population_size: for population methods (default 100).
        seeds: optional (S, n) priority vectors put into the initial population.
        options: method keywords (e.g. elite_fraction for BRKGA; see `default_search`).
    """
    start = time.perf_counter()
    # a long session compiling many padded shapes would otherwise run out of memory
    # mappings and crash (jaxplace.code_maps)
    release_compiled_code()
    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field="problem")
    m = get_method(method or "default")
    obj = objective_of(problem)
    obj.check_search_method(m.name)
    obj.check_resources(problem)
    if budget is not None and budget < 1:
        raise JaxplaceError("must be at least 1", field="budget")
    if time_limit is not None and not (isinstance(time_limit, numbers.Real)
                                       and time_limit > 0):  # nan fails too
        raise JaxplaceError(f"must be positive, got {time_limit!r}", field="time_limit")
    if population_size is not None and (isinstance(population_size, bool) or not
                                        isinstance(population_size, int | np.integer)
                                        or population_size < 2):
        raise JaxplaceError(f"must be an integer of at least 2, got {population_size!r}",
                            field="population_size")
    stop = _stop_rule(problem, stop, time_limit, target_ratio)
    if seeds is not None:
        seeds = check_seeds(problem, seeds)
    # under a time limit the best so far is tracked, to answer with it at the limit
    best = BestSoFar(observer) if observer is not None or stop.time_limit else None
    windowed = options.pop("windowed", True)
    budget = budget or m.budget_for(problem, stop.time_limit, polish=options.get("polish"))
    req = SearchRequest(problem, int(seed), budget, stop,
                        best, progress, seeds, population_size, dict(options), start,
                        windowed)
    first = _first_solution(req) if best is not None else None
    if stop.time_limit is None:
        result = m.run(req)
    else:
        give_up = start + stop.time_limit + late_seconds(stop.time_limit)
        done, result = call_by(lambda: m.run(req), give_up, lambda: best.best is not None,
                               stop.cancel)
        if not done:
            best.closed = True  # the abandoned search's late reports go nowhere
            why = "interrupted" if stop.cancelled() else "time limit (compiling)"
            return _best_so_far(req, m.name, best.best, first, why)
    if first is not None and first.cost < result.cost:
        label = "heuristic" if first.method == "heuristic" else "dfs"
        result = dataclasses.replace(first, method=result.method,
                                     evaluations=result.evaluations + first.evaluations,
                                     wall_time=result.wall_time, history=result.history,
                                     interrupted=result.interrupted,
                                     info={**result.info, "first_solution": label,
                                           "found_by": label,
                                           # what the named method itself reached
                                           "method_best": float(result.cost)})
    return result


class BestSoFar:
    """An observer wrapper: every `Progress` carries the best incumbent of the whole
    search (phases such as BRKGA then local search, or the first DFS solution, each
    track only their own best). `observer` None: it only keeps `best`; `closed`: the
    reports stop (the call has returned)."""

    def __init__(self, observer: Callable[[Progress], None] | None):
        self.observer = observer
        self.best: Progress | None = None
        self.closed = False

    def __call__(self, ev: Progress) -> None:
        if self.closed:
            return
        if self.best is not None and not ev.best_cost < self.best.best_cost:
            ev = dataclasses.replace(ev, best_cost=self.best.best_cost,
                                     best_x=self.best.best_x,
                                     partition=self.best.partition)
        else:
            self.best = ev
        if self.observer is not None:
            self.observer(ev)


def _best_so_far(req: SearchRequest, method: str, best: Progress, first: Result | None,
                 why: str) -> Result:
    """The answer of `method` at the time limit (or Ctrl-C) while its search is still
    compiling: the best reported partition (float64 reference decode)."""
    from jaxplace.search.result import History

    if first is not None and best.best_cost >= first.cost:
        res = first
    elif best.partition is not None:  # the search's own (exact) partition: no decode
        res = Result(cost=float(best.partition.cost), partition=best.partition,
                     priorities=np.asarray(best.best_x, np.float32),
                     evaluations=int(best.evaluations), wall_time=0.0,
                     history=History.empty(), method=best.phase,
                     lower_bound=req.lower_bound, interrupted=True)
    else:
        res = req.objective.finish(req, best.phase, best.best_x, best.evaluations,
                                   History.empty(), True)
    info = {**res.info, "found_by": res.method, "stopped": why}
    return dataclasses.replace(res, method=method, wall_time=time.perf_counter() - req.start,
                               interrupted=True, info=info)


#: Largest graph whose heuristic orders (`seed_priorities`: DFS, ASAP, ALAP, free
#: units placed) are all sliced by the float64 reference for the first answer (the
#: NumPy DP is O(n^2 k); the multilevel search brings its own above this).
HEURISTIC_FIRST_MAX_NODES = 1000


def _first_solution(req: SearchRequest) -> Result | None:
    """The first answer, reported to the observer before anything compiles, so that a
    user (or Ctrl-C) has a partition within a fraction of a second even when the
    first compiled chunk takes long: the DFS linearization sliced once by the float64
    reference (at once), then, on identical accelerators up to HEURISTIC_FIRST_MAX_NODES
    ops, the best heuristic order (`seed_priorities`) when it is better. NumPy only,
    no clock: the same answer at any load."""
    res = req.first_solution
    if res is None:
        return None
    req.observer(Progress(1, res.cost, res.priorities, time.perf_counter() - req.start,
                          "dfs", res.partition))
    obj, problem = req.objective, req.problem
    if not (obj.supports("identical_devices") and problem.n <= HEURISTIC_FIRST_MAX_NODES):
        return res
    from jaxplace.search.baselines import seed_priorities
    from jaxplace.search.result import History

    seeds = seed_priorities(problem.graph)
    best = res
    for x in seeds:
        r = obj.finish(req, "heuristic", x, 1, History.empty(), False)
        if r.cost < best.cost:
            best = r
    if best is not res:  # counted as one evaluation, as the DFS cut is
        req.observer(Progress(1, best.cost, best.priorities,
                              time.perf_counter() - req.start, "heuristic", best.partition))
    return best


def _stop_rule(problem: Problem, stop: StopRule | None, time_limit, target_ratio
               ) -> StopRule:
    stop = stop or StopRule()
    if time_limit is not None:
        stop = StopRule(time_limit, stop.target, stop.patience, stop.cancel)
    if stop.time_limit is not None and stop.cancel is None:  # Ctrl-C while waiting
        stop = StopRule(stop.time_limit, stop.target, stop.patience, threading.Event())
    if stop.target is None:
        lb = simple_lower_bound(problem)
        target = lb * (1 + 1e-6) if target_ratio is None else lb * max(target_ratio, 1.0)
        stop = StopRule(stop.time_limit, target, stop.patience, stop.cancel)
    return stop


__all__ = ["search"]
