"""Searching node priorities and the device order together (the `jp.search` side).

A candidate row holds N node priorities and D device keys (`objectives.throughput_unequal.decoder`);
every method that scores through `SearchRequest.fitness` (default, random, brkga,
every evosax algorithm) searches both. `hetero_result` decodes the best row by the
float64 reference. The default search:

1. BRKGA (population 100) whose first population holds the heuristic node orders of
   `search.baselines.seed_priorities` (DFS linearization, layerings), each with the
   devices fastest first and, for the DFS order, every other device order too (up to
   SEED_ORDERS); half the budget, stopped after PATIENCE stale evaluations.
2. The (1 + batch) key-shift local search (`jaxplace.search.key_shift.KeyShift`) on the
   node priorities; the rest of the budget.
3. Every device order (d! <= POLISH_ORDERS; else each device moved to the front)
   re-sliced on the best node order by the reference DP, and the best kept. A result
   from node priorities alone (the "dfs" method, the first solution) gets the same
   device choice.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from jaxplace.objectives.throughput.reference import kahn
from jaxplace.objectives.throughput_unequal.model import device_sequence
from jaxplace.objectives.throughput_unequal.reference import decode, slice_on_devices

BRKGA_SHARE = 0.5
POPULATION = 100
PATIENCE = 6000
#: Device orders of the DFS seed in BRKGA's first population, at most.
SEED_ORDERS = 24
#: Device orders tried on the final node order, at most (d! larger: skipped).
POLISH_ORDERS = 120


def speed_keys(inst) -> np.ndarray:
    """(d,) float32 device keys ranking the devices fastest first (least total op
    time), ties to the smaller index."""
    tot = inst.times.sum(axis=0)
    rank = np.lexsort((np.arange(len(tot)), tot))  # fastest first
    keys = np.empty(len(tot), np.float32)
    keys[rank] = (len(tot) - np.arange(len(tot))) / len(tot)
    return keys


def order_keys(devices) -> np.ndarray:
    """(d,) float32 device keys whose sequence is `devices` (a permutation)."""
    d = len(devices)
    keys = np.empty(d, np.float32)
    keys[np.asarray(devices)] = (d - np.arange(d)) / d
    return keys


def search_row(problem, x, spec=None) -> np.ndarray:
    """(n + d,) float32 node priorities and device keys from a search row (width N + D
    of `spec`, by default `make_spec`'s), an (n + d,) row, or (n,) node priorities
    (devices fastest first)."""
    from jaxplace.objectives.throughput_unequal.decoder import make_spec

    inst = problem.pipeline_instance
    n, d = inst.n, inst.num_devices
    x = np.asarray(x, np.float32).reshape(-1)
    if len(x) == n + d:
        return x
    spec = make_spec(inst, problem.k) if spec is None and len(x) > n + d else spec
    if spec is not None and len(x) == spec.width:
        return np.concatenate([x[:n], x[spec.N:spec.N + d]])
    return np.concatenate([x[:n], speed_keys(inst)])


def split_row(req, x) -> np.ndarray:
    """`search_row` of a search request's row."""
    return search_row(req.problem, x, req.spec)


def hetero_result(req, method: str, x, evaluations: int, history, interrupted: bool,
                  info: dict | None = None):
    """The `Result` of a row x: the reference decode (exact float64 bottleneck); its
    partition's `devices` is the stage -> device map, `priorities` the (n + d,) row."""
    from jaxplace.search.result import Result

    inst, k = req.problem.pipeline_instance, req.problem.k
    xr = split_row(req, x)
    if np.asarray(x).size == req.problem.n:  # node priorities only: pick the devices
        xr, _ = polish(inst, k, xr)
    part = decode(inst, xr, k)
    return Result(cost=float(part.cost), partition=part, priorities=xr,
                  evaluations=int(evaluations), wall_time=time.perf_counter() - req.start,
                  history=history, method=method, lower_bound=req.lower_bound,
                  interrupted=interrupted, info=info or {})


def hetero_first(req):
    """The DFS linearization on the devices fastest first (a first solution)."""
    from jaxplace.search.baselines import dfs_order, order_to_priorities
    from jaxplace.search.request import finish
    from jaxplace.search.result import History

    x = order_to_priorities(dfs_order(req.problem.graph))
    return finish(req, "dfs", x, 1, History.empty(), False)


def hetero_seeds(req) -> np.ndarray:
    """(S, width) float32 seed rows (module docstring, step 1)."""
    from jaxplace.search.baselines import seed_priorities

    inst, spec = req.problem.pipeline_instance, req.spec
    n, d = inst.n, inst.num_devices
    nodes = np.asarray(seed_priorities(req.problem.graph), np.float32).reshape(-1, n)
    if req.seeds is not None:
        nodes = np.concatenate([np.asarray(req.seeds, np.float32).reshape(-1, n), nodes])
    fast = speed_keys(inst)
    first = np.argsort(-fast, kind="stable")
    orders = [first] + [np.asarray(p) for p in itertools.islice(
        itertools.permutations(first), 1, SEED_ORDERS)]
    rows = [(x, fast) for x in nodes] + [(nodes[0], order_keys(o)) for o in orders[1:]]
    out = np.zeros((len(rows), spec.width), np.float32)
    for i, (x, keys) in enumerate(rows):
        out[i, :n] = x
        out[i, spec.N:spec.N + d] = keys
    return out


def device_orders(inst, x: np.ndarray):
    """The device sequences `polish` tries: all d! when d! <= POLISH_ORDERS, else x's
    own order with each device moved to the front (every device gets to hold a single
    stage, which is all k = 1 can use)."""
    d = inst.num_devices
    if np.prod(np.arange(1, d + 1)) <= POLISH_ORDERS:
        return itertools.permutations(range(d))
    own = [int(p) for p in device_sequence(x[inst.n:], d)]
    return ([p] + [q for q in own if q != p] for p in own)


def polish(inst, k: int, x: np.ndarray) -> tuple[np.ndarray, float]:
    """(row, cost): x's node order re-sliced on other device orders (`device_orders`),
    the best by the reference DP (x itself when none is better)."""
    n = inst.n
    best = decode(inst, x, k)
    order = kahn(inst.graph, x[:n])
    cost, keys = best.cost, x[n:]
    for perm in device_orders(inst, x):
        c = slice_on_devices(inst, order, perm, k).cost
        if c < cost:
            cost, keys = c, order_keys(perm)
    return np.concatenate([x[:n], keys]).astype(np.float32), cost


def hetero_default(req):
    """The default search of a throughput problem on unequal devices (module doc)."""
    from jaxplace.search.key_shift import brkga_then_shift
    from jaxplace.search.request import finish

    problem, opt = req.problem, dict(req.options)
    budget = req.budget
    P = max(2, min(req.population_size or POPULATION, budget // 3))
    seeds = hetero_seeds(req)
    patience = opt.get("patience", PATIENCE)
    gens = max(int(budget * opt.get("brkga_share", BRKGA_SHARE)) // P, 1)
    best_x, best_f, evals, history, interrupted, info = brkga_then_shift(
        req, seeds, budget_brkga=gens * P, population=P, patience=patience)
    x, _ = polish(problem.pipeline_instance, problem.k, split_row(req, best_x))
    res = finish(req, "default", x, evals, history, interrupted, info=info)
    for row in seeds:  # float32 ranking may differ from float64: keep the exact best
        r = finish(req, "default", row, evals, history, interrupted,
                   info={**info, "from_seed": True})
        if r.cost < res.cost:
            res = r
    return res


__all__ = ["hetero_default", "hetero_first", "hetero_result", "hetero_seeds",
           "order_keys", "polish", "search_row", "speed_keys", "split_row"]
