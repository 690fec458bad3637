"""Search for good partitions: BRKGA and any evosax algorithm over the batched decoder.

    import jaxplace as jp
    result = jp.search(problem)                       # the strong default
    result = jp.search(problem, method="brkga", budget=10_000, seed=0)
    result.cost, result.partition, result.priorities, result.history

Methods (`METHODS`): "default", "random", "brkga", "mla", "mla-weighted", "dfs", and
every algorithm of `ALGORITHMS` (BRKGA plus all evosax algorithms, e.g. "SimpleGA",
"CMA_ES", "DifferentialEvolution", "PSO", "Open_ES"; names are case-insensitive).
`budget` counts decoder evaluations (the initial population included).
"""

from __future__ import annotations

import time
import weakref

import evosax.algorithms
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.decoder import device_graph
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem
from jaxplace.reference import decode_reference
from jaxplace.search._programs import (
    EvosaxProgram,
    RandomProgram,
    ShiftSearch,
    arrangement_edges,
    neighbour_table,
)
from jaxplace.search.baselines import dfs_order, order_to_priorities, seed_priorities
from jaxplace.search.brkga import BRKGA
from jaxplace.search.driver import run_program
from jaxplace.search.result import History, Result

#: Every evosax-style algorithm the driver can run, by name.
ALGORITHMS: dict[str, type] = {"BRKGA": BRKGA, **evosax.algorithms.algorithms}

#: Constructor keywords suited to random keys in [0, 1] (evosax defaults otherwise).
ALGORITHM_KWARGS: dict[str, dict] = {
    "SimpleGA": {"std_schedule": optax.constant_schedule(0.1)},
    "Open_ES": {"optimizer": optax.adam(0.05), "std_schedule": optax.constant_schedule(0.1)},
}

#: Methods that are not evosax algorithms.
BASE_METHODS = ("default", "random", "brkga", "mla", "mla-weighted", "dfs")
METHODS: tuple[str, ...] = BASE_METHODS + tuple(a for a in ALGORITHMS if a != "BRKGA")

DEFAULT_BUDGET = 10_000
DEFAULT_POPULATION = 100

_data_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_algo_cache: dict = {}


def _canonical(method: str) -> str:
    m = method.strip()
    low = {name.lower(): name for name in METHODS}
    low["brkga"] = "brkga"
    if m.lower() not in low:
        raise JaxplaceError(f"unknown method {method!r}; choose one of "
                            f"{', '.join(METHODS)}", field="method")
    return low[m.lower()]


def _data(problem: Problem):
    per = _data_cache.get(problem)
    if per is None:
        spec, g = device_graph(problem)
        per = _data_cache[problem] = {"spec": spec, "g": g}
    return per["spec"], per["g"]


def _algorithm(name: str, population: int, N: int, **kwargs):
    key = (name, population, N, tuple(sorted(kwargs.items())))
    if key not in _algo_cache:
        cls = ALGORITHMS[name]
        kw = {**ALGORITHM_KWARGS.get(name, {}), **kwargs}
        try:
            _algo_cache[key] = cls(population_size=population,
                                   solution=jnp.zeros(N, jnp.float32), **kw)
        except (AssertionError, TypeError, ValueError) as e:
            raise JaxplaceError(f"cannot build {name} with population {population}: {e}",
                                field="method") from e
    return _algo_cache[key]


def _pad(X: np.ndarray, N: int) -> np.ndarray:
    out = np.zeros((X.shape[0], N), np.float32)
    out[:, :X.shape[1]] = X
    return out


def _initial(key, P: int, N: int, seeds: np.ndarray | None) -> np.ndarray:
    X0 = np.array(jax.random.uniform(key, (P, N), jnp.float32))
    if seeds is not None and len(seeds):
        s = _pad(np.asarray(seeds, np.float32), N)[:P]
        X0[:len(s)] = s
    return X0


def _finish(problem, method, x, evaluations, start, history, interrupted, info=None):
    x = np.asarray(x, np.float32)[:problem.n]
    part = decode_reference(problem, x)  # float64 oracle: no compile, ms per call
    lb = simple_lower_bound(problem)
    return Result(cost=float(part.cost), partition=part, priorities=x,
                  evaluations=int(evaluations), wall_time=time.perf_counter() - start,
                  history=history, method=method, lower_bound=float(lb),
                  interrupted=interrupted, info=info or {})


def search(problem: Problem, method: str | None = None, *, budget: int | None = None,
           seed: int = 0, time_limit: float | None = None,
           target_ratio: float | None = None, progress: bool | None = None,
           population_size: int | None = None, seeds=None, **options) -> Result:
    """Best partition of `problem` found by `method` within `budget` evaluations.

    Args:
        problem: the instance.
        method: a name of `METHODS` (default: "default", the strongest).
        budget: decoder evaluations to spend (default: per method; 10,000 for the
            population methods).
        seed: PRNG seed; the same seed gives the same result.
        time_limit: seconds; the search stops after the compiled chunk that crosses it.
        target_ratio: stop once cost <= target_ratio * simple lower bound. The search
            always stops when it reaches the lower bound (optimal).
        progress: progress bar on stderr (None: only on a terminal).
        population_size: for population methods (default 100).
        seeds: optional (S, n) priority vectors put into the initial population.
        options: algorithm constructor keywords (e.g. elite_fraction for BRKGA), or
            for "default": see `default_search`.

    Returns:
        A `Result`.
    """
    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field="problem")
    method = _canonical(method or "default")
    if budget is not None and budget < 1:
        raise JaxplaceError("must be at least 1", field="budget")
    lb = float(simple_lower_bound(problem))
    target = lb * (1 + 1e-6) if target_ratio is None else lb * max(target_ratio, 1.0)
    common = dict(seed=seed, time_limit=time_limit, target=target, progress=progress,
                  lb=lb)
    if method == "default":
        from jaxplace.search.default import default_search

        return default_search(problem, budget=budget, seeds=seeds, **common, **options)
    if method == "dfs":
        start = time.perf_counter()
        x = order_to_priorities(dfs_order(problem.graph))
        res = _finish(problem, "dfs", x, 1, start, History.empty(), False)
        return res
    if method == "random":
        return _random(problem, budget or DEFAULT_BUDGET, **common)
    if method in ("mla", "mla-weighted"):
        return _mla(problem, method, budget or DEFAULT_BUDGET,
                    population_size or DEFAULT_POPULATION, **common, **options)
    name = "BRKGA" if method == "brkga" else method
    return run_evosax(problem, name, budget=budget or DEFAULT_BUDGET,
                      population_size=population_size or DEFAULT_POPULATION,
                      seeds=seeds, label=method, **common, **options)


def run_evosax(problem: Problem, name: str, *, budget: int, population_size: int,
               seed: int = 0, time_limit=None, target=None, progress=None, lb=None,
               seeds=None, label=None, kind: str = "decode", params=None,
               start: float | None = None, raw: bool = False, chunk: int | None = None,
               patience: int | None = None, **kwargs):
    """Run evosax algorithm `name` for budget // population_size generations.

    Returns a `Result`, or with `raw` (always for the arrangement kinds "la" and
    "la-weighted") the driver's `LoopOutcome`.
    """
    start = time.perf_counter() if start is None else start
    spec, g = _data(problem)
    P = population_size
    algo = _algorithm(name, P, spec.width, **kwargs)
    data = {"g": g, "params": algo.default_params if params is None else params}
    if kind != "decode":
        data["la"] = arrangement_edges(problem, weighted=(kind == "la-weighted"))
        kind = "la"
    program = EvosaxProgram(algo, spec, kind)
    key = jax.random.key(seed)
    k_init, k_run = jax.random.split(key)
    X0 = _initial(k_init, P, spec.width, seeds)
    steps = max(budget // P - 1, 0)
    out = run_program(program, data, k_run, X0, steps, time_limit=time_limit,
                      target=target if kind == "decode" else None, progress=progress,
                      desc=label or name, start=start, ratio_to=lb if kind == "decode" else None,
                      chunk=chunk, patience=patience)
    if raw or kind != "decode":
        return out
    return _finish(problem, label or name, out.best_x, out.evaluations, start,
                   out.history, out.interrupted)


def _random(problem, budget, *, seed, time_limit, target, progress, lb):
    start = time.perf_counter()
    spec, g = _data(problem)
    batch = -(-budget // -(-budget // 512))  # <= 512 per step, the budget in equal steps
    key = jax.random.key(seed)
    k_init, k_run = jax.random.split(key)
    X0 = _initial(k_init, batch, spec.width, None)
    out = run_program(RandomProgram(spec, batch), {"g": g}, k_run, X0,
                      (budget - batch) // batch, time_limit=time_limit, target=target,
                      progress=progress, desc="random", start=start, ratio_to=lb)
    return _finish(problem, "random", out.best_x, out.evaluations, start, out.history,
                   out.interrupted)


def _mla(problem, method, budget, population, *, seed, time_limit, target, progress, lb,
         **kwargs):
    start = time.perf_counter()
    kind = "la-weighted" if method == "mla-weighted" else "la"
    out = run_evosax(problem, "BRKGA", budget=budget, population_size=population,
                     seed=seed, time_limit=time_limit, progress=progress, kind=kind,
                     label=method, start=start, **kwargs)
    return _finish(problem, method, out.best_x, out.evaluations + 1, start, out.history,
                   out.interrupted, info={"arrangement_cost": out.best_f})


def bottleneck_pool(problem: Problem, x, width: int):
    """((width,) int32 nodes, () int32 count): the nodes of the bottleneck block of
    Decode(x) and of the blocks next to it in the order (padded with 0)."""
    part = decode_reference(problem, np.asarray(x, np.float32)[:problem.n])
    a = np.asarray(part.assignment)
    total = evaluate_partition(problem, a).total
    b = int(np.argmax(total))
    seq = a[np.asarray(part.order)]
    at = np.flatnonzero(seq == b)
    keep = {b}
    if len(at):
        if at[0] > 0:
            keep.add(int(seq[at[0] - 1]))
        if at[-1] + 1 < len(seq):
            keep.add(int(seq[at[-1] + 1]))
    nodes = np.flatnonzero(np.isin(a, list(keep))).astype(np.int32)
    pool = np.zeros(width, np.int32)
    pool[:len(nodes)] = nodes
    return jnp.asarray(pool), jnp.asarray(len(nodes), jnp.int32)


def shift_search(problem: Problem, x0, *, steps: int, batch: int = 64, moves: int = 3,
                 focus: float = 0.0, seed: int = 0, time_limit=None, target=None,
                 progress=None, lb=None, start=None, pbar=None, evaluations0: int = 0,
                 patience: int | None = None, chunk: int | None = None):
    """Batched local search on the order from priorities x0 (see `ShiftSearch`).

    With `focus` > 0 that share of the moves stays within the incumbent's bottleneck
    block and its neighbours, recomputed on the host between chunks.
    """
    spec, g = _data(problem)
    X0 = _pad(np.asarray(x0, np.float32).reshape(1, -1), spec.width)
    data = {"g": g, "nbr": neighbour_table(problem, spec.width),
            "nn": jnp.asarray(problem.n, jnp.int32)}
    update = None
    if focus > 0:
        data["pool"] = bottleneck_pool(problem, X0[0], spec.width)

        def update(carry, data):
            return {**data, "pool": bottleneck_pool(problem, np.asarray(carry[0]),
                                                    spec.width)}

    return run_program(ShiftSearch(spec, batch, moves, focus), data, jax.random.key(seed),
                       X0, steps, time_limit=time_limit, target=target,
                       progress=progress, desc="local", start=start, ratio_to=lb,
                       pbar=pbar, evaluations0=evaluations0, patience=patience,
                       update=update, chunk=chunk)


__all__ = ["ALGORITHMS", "BRKGA", "METHODS", "History", "Result", "run_evosax",
           "search", "seed_priorities", "shift_search"]
