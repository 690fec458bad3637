"""jp.search's flat throughput search through search_many's one-problem bucket on CPUs
(`jaxplace.objectives.throughput.bucket`): the same search as search_many, the seed,
the observer, the time limit, the cancel event, Ctrl-C, and the driver's path where
an option needs it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from strategies import same_cost, small_graph

import jaxplace as jp
from jaxplace.objectives.throughput import bucket
from jaxplace.search import search
from jaxplace.search.stop import StopRule

# one graph (one size class): every test after the first reuses its compiled program
P8 = jp.Problem(small_graph(3, n=40), 8)
KW = dict(budget=3000, progress=False, search_only=True)


def _check(p, r):
    cost = jp.evaluate_partition(p, r.partition.assignment)
    assert cost.feasible and same_cost(r.cost, cost.bottleneck)
    assert same_cost(jp.reference.decode_reference(p, r.priorities).cost, r.cost)


def test_jp_search_is_search_many_of_one_problem():
    assert bucket.old_path_reason(_req(P8)) is None
    seen = []
    a = search(P8, seed=3, observer=seen.append, **KW)
    b = search(P8, seed=3, **KW)
    (m,) = jp.search_many([P8], seed=3, budget=KW["budget"], exact=False)
    assert a.method == "default" and "bucket" in a.info
    assert a.cost == b.cost == m.cost and np.array_equal(a.priorities, m.priorities)
    assert a.evaluations == m.evaluations <= KW["budget"]
    _check(P8, a)
    # the observer: the first answer, then BRKGA coupled with the policy (k = 8), then
    # the local search, never worse than before
    phases = [e.phase for e in seen]
    assert phases[0] == "dfs" and "policy+brkga" in phases
    costs = [e.best_cost for e in seen]
    assert all(y <= x for x, y in zip(costs, costs[1:], strict=False))
    assert a.cost <= costs[-1] * (1 + 1e-5)
    info = a.info
    assert info["policy"] == "gnn-v3" and info["found_by"]
    assert info["brkga_evaluations"] <= a.evaluations
    assert (len(info["local_best"]) == 1) == ("local" in phases)
    assert a.history.evaluations[-1] == a.evaluations


def _req(p, **kw):
    from jaxplace.search.request import SearchRequest

    return SearchRequest(p, 0, kw.pop("budget", 3000), **kw)


def test_options_only_the_driver_knows_take_its_path():
    assert bucket.old_path_reason(_req(P8, options={"moves": 2})) == "option(s) moves"
    assert bucket.old_path_reason(_req(P8, population_size=20)) == "population_size"
    assert bucket.old_path_reason(_req(P8, budget=200)) is not None
    assert bucket.old_path_reason(_req(P8, windowed=False)) == "windowed=False"
    # (the driver's path itself: tests/search/test_search.py, with population_size=20)


def test_time_limit_cancel_and_ctrl_c_keep_the_best_so_far():
    big = dict(budget=10**7, progress=False, search_only=True, brkga_patience=10**9,
               patience=10**9)
    search(P8, seed=1, budget=3000, progress=False, search_only=True)  # compiled
    t0 = time.perf_counter()
    r = search(P8, seed=1, time_limit=1.5, **big)
    assert r.interrupted and r.evaluations < 10**7
    assert time.perf_counter() - t0 < 1.5 * 1.25 + 0.5  # generous: CI machines are noisy
    _check(P8, r)

    ev = threading.Event()

    def stop_after_two(e, n=[0]):  # noqa: B006
        n[0] += e.phase != "dfs"
        if n[0] >= 2:
            ev.set()

    r = search(P8, seed=1, stop=StopRule(cancel=ev), observer=stop_after_two, **big)
    assert r.interrupted and r.evaluations < 10**7 and "polish" not in r.info
    _check(P8, r)

    def ctrl_c(e):
        if e.phase != "dfs":
            raise KeyboardInterrupt

    r = search(P8, seed=1, observer=ctrl_c, **big)
    assert r.interrupted and np.isfinite(r.cost)
    _check(P8, r)


@pytest.mark.heavy  # another program to compile, and HiGHS
@pytest.mark.parametrize("k", [3])
def test_polish_rule_and_reference_costs_at_small_k(k):
    # k <= 4: the MIP polish runs after the search (a node count, no clock)
    p = jp.Problem(small_graph(5, n=30), k)
    a = search(p, seed=0, **KW)
    b = search(p, seed=0, **KW)
    assert "bucket" in a.info and a.cost == b.cost
    assert np.array_equal(a.partition.assignment, b.partition.assignment)
    _check(p, a)
    off = search(p, seed=0, polish=False, **KW)
    assert "polish" not in off.info and a.cost <= off.cost * (1 + 1e-9)
