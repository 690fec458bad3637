"""Station windows, the station bound and guess-and-check against brute force on tiny
graphs (memory, capacity, several tensors per op, colocation, training edges), and
what they do with CPU blocks (skip, bound 0)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from brute import brute_force_optimum, direct_block_cost, is_valid
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import tiny_cpu_block_problems, tiny_problems

import jaxplace as jp
from jaxplace.bounds import certify
from jaxplace.bounds._model import dag_numbering
from jaxplace.bounds.base import BoundContext
from jaxplace.bounds._feasibility import FEASIBLE, INFEASIBLE, check_guess
from jaxplace.bounds.registry import BBR_MAX_NODES, BOUNDS, choose_methods
from jaxplace.bounds.station import StationBound, refuted, station_data, windows
from jaxplace.bounds._station_check import GuessCheckBound, guess_and_check
from jaxplace.generators import regal
from jaxplace.objectives.throughput.cost import evaluate_partition, quotient_order

RTOL = 1e-6  # HiGHS's feasibility tolerances, relative


def leq(a: float, b: float) -> bool:
    return math.isinf(b) or a <= b * (1 + RTOL) + 1e-9


def _accelerator_only(problem):
    g = problem.graph
    attrs = {k: v for k, v in g.node_attrs.items() if k != "supported_on_accel"}
    g2 = jp.CompGraph(g.work, g.edges, g.size_param, g.size_out, node_attrs=attrs)
    return problem.replace(graph=g2, cpus=0)


def _partitions(problem):
    """Every valid partition (blocks in DAG order, empty blocks last) with its cost."""
    n, k = problem.n, problem.k
    seen = set()
    for a in itertools.product(range(k), repeat=n):
        a = np.asarray(a, dtype=np.int64)
        if not is_valid(problem, a):
            continue
        d = dag_numbering(a, quotient_order(problem, a))
        if d.tobytes() in seen:
            continue
        seen.add(d.tobytes())
        cost = max(direct_block_cost(problem, np.flatnonzero(d == b)) for b in range(k))
        yield d, cost


def _check_windows(problem, factor):
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt):
        return
    T = opt * factor
    data = station_data(problem)
    lo, hi = windows(data, T)
    assert not refuted(data, T)
    for d, cost in _partitions(problem):
        if cost <= T:
            assert np.all(lo <= d) and np.all(d <= hi), (d, lo, hi, cost, T)


@settings(max_examples=40, deadline=None)
@given(tiny_problems(max_nodes=5, max_k=3, multi_tensor=True),
       st.sampled_from([1.0, 1.2, 2.0]))
def test_windows_admit_every_partition_within_T(problem, factor):
    _check_windows(problem, factor)


@settings(max_examples=40, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=5, training=True), st.sampled_from([1.0, 1.3]))
def test_windows_with_colocation_and_training_edges(problem, factor):
    _check_windows(_accelerator_only(problem).replace(k=3), factor)


def test_station_bound_refutes_a_chain():
    """A chain 2-2-2 on two blocks: the middle op has 4 before or after it, so every
    T < 4 is refuted (OPT = 4) although the simple bound is 3."""
    g = jp.CompGraph([2.0, 2.0, 2.0], [(0, 1), (1, 2)])
    problem = jp.Problem(g, 2)
    assert brute_force_optimum(problem) == 4.0
    cert = certify(problem, methods=("simple", "station"), samples=2)
    assert cert.result("simple").bound == 3.0
    assert 4.0 * (1 - 1e-3) <= cert.result("station").bound <= 4.0


def test_transfers_tighten_the_windows():
    """The middle op's tensor to the last op: blocks 0..s holding ops 0 and 1 pay it
    or hold op 2 (the smaller of the two is added)."""
    g = jp.CompGraph([2.0, 2.0, 2.0], [(0, 1), (1, 2)], size_out=[0.0, 1.0, 0.0])
    problem = jp.Problem(g, 3)
    data = station_data(problem)
    assert data.head[1] == 4.0 + 1.0  # work of {0, 1} plus min(1, work of op 2)
    assert data.tail[1] == 4.0  # nothing enters {1, 2} from outside


def _run(method, problem, seconds=5.0):
    a, ub = certify(problem, methods=("simple",), samples=2).partition, math.inf
    if a is not None:
        ub = evaluate_partition(problem, a).bottleneck
    ctx = BoundContext(time_limit=seconds, assignment=a, upper_bound=ub)
    return method.run(problem, ctx), ub


@settings(max_examples=25, deadline=None)
@given(tiny_problems(max_nodes=5, max_k=3, multi_tensor=True))
def test_new_bounds_below_brute_force(problem):
    opt = brute_force_optimum(problem)
    for name in ("station", "station-check-lp", "station-check"):
        r, ub = _run(BOUNDS[name], problem)
        assert leq(r.bound, opt), (name, r.bound, opt)
        if r.assignment is not None:  # a partition found is real and beats the start
            cost = evaluate_partition(problem, r.assignment).bottleneck
            assert is_valid(problem, r.assignment)
            assert leq(opt, cost) and cost < ub
            assert math.isclose(cost, max(direct_block_cost(
                problem, np.flatnonzero(r.assignment == b)) for b in range(problem.k)),
                rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=25, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_new_bounds_with_colocation_and_training_edges(problem):
    problem = _accelerator_only(problem)
    opt = brute_force_optimum(problem)
    cert = certify(problem, methods=("simple", "station", "station-check"), samples=2,
                   time_limit=5)
    for r in cert.results:
        assert leq(r.bound, opt), (r.name, r.bound, opt)
    assert leq(opt, cert.upper_bound)


@settings(max_examples=15, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=4))
def test_cpu_blocks_are_skipped_and_stay_valid(problem):
    opt = brute_force_optimum(problem)
    cert = certify(problem, methods=("simple", "station", "station-check"), samples=2,
                   time_limit=5)
    for r in cert.results:
        assert leq(r.bound, opt), (r.name, r.bound, opt)
    if problem.cpus or not problem.supported.all():
        assert cert.result("station").bound == 0.0
        assert cert.result("station-check").status.startswith("skipped")


@settings(max_examples=25, deadline=None)
@given(tiny_problems(max_nodes=5, max_k=3, multi_tensor=True))
def test_checks_are_exact_at_the_optimum(problem):
    """A check never refutes OPT and never finds a partition below it; a partition it
    finds costs what evaluate_partition says and at most the guess."""
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt) or opt <= 0:
        return
    data = station_data(problem)
    at = check_guess(problem, data, opt, time_limit=10)
    assert at.answer != INFEASIBLE
    assert at.answer == FEASIBLE  # tiny: HiGHS decides in time
    cost = evaluate_partition(problem, at.assignment).bottleneck
    assert opt * (1 - RTOL) <= cost <= opt * (1 + RTOL)
    below = check_guess(problem, data, opt * (1 - 1e-3), time_limit=10)
    assert below.answer == INFEASIBLE


def test_guess_and_check_finds_a_better_partition():
    """Started from a poor partition, the feasible checks bring the upper bound to the
    optimum and the refuted ones the lower bound just below it."""
    rng = np.random.default_rng(3)
    n = 9
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 3))
             if rng.random() < 0.5]
    g = jp.CompGraph(rng.uniform(1, 5, n), edges, size_out=rng.uniform(0, 2, n))
    problem = jp.Problem(g, 3)
    poor = np.zeros(n, dtype=np.int64)  # everything in one block
    ub = evaluate_partition(problem, poor).bottleneck
    opt = certify(problem, methods=("simple", "exact"), samples=4).upper_bound
    lo, best, cost, checks = guess_and_check(
        problem, BoundContext(time_limit=30, assignment=poor, upper_bound=ub))
    assert best is not None and cost < ub
    assert math.isclose(evaluate_partition(problem, best).bottleneck, cost)
    assert opt * (1 - 1e-3) <= lo <= opt * (1 + RTOL)
    assert cost <= opt * (1 + 1e-3)
    assert any(c.answer == INFEASIBLE for c in checks)


def test_station_rung_reports_at_least_the_simple_bound():
    g = regal(seed=1, n=40)
    problem = jp.Problem(g, 4)
    r = StationBound().run(problem, BoundContext(time_limit=5))
    assert r.bound >= jp.simple_lower_bound(problem)
    assert r.kind == "closed-form"
    r = GuessCheckBound("x").run(problem, BoundContext(time_limit=3))
    assert r.bound >= jp.simple_lower_bound(problem) and r.solves >= 1


def test_choose_methods_adds_the_station_rungs():
    wide = jp.Problem(jp.CompGraph([1.0] * 20), 4)  # 2^20 ideals: the MIP ladder
    methods, _ = choose_methods(wide)
    assert methods == ("simple", "station", "cross", "station-check", "bottleneck", "bbr",
                       "exact")
    methods, _ = choose_methods(wide.replace(k=8))  # the bottleneck MIP is stronger
    assert methods == ("simple", "station", "cross", "bottleneck", "bbr", "exact")
    methods, _ = choose_methods(wide, ("bottleneck", "bottleneck-guess", "exact"))
    assert methods == ("simple", "station", "cross", "station-check", "bottleneck",
                       "bottleneck-guess", "bbr", "exact")
    # BB&R only up to BBR_MAX_NODES: on REGAL-size graphs it added nothing in 60 s
    big = jp.Problem(jp.CompGraph([1.0] * (BBR_MAX_NODES + 1)), 4)
    methods, why = choose_methods(big)
    assert "bbr" not in methods and "BB&R" not in why


def test_zero_work_graph():
    """No work, a tensor that must cross (the capacity splits the two ops): the simple
    bound is 0, OPT = 1 (out of one block, into the other); the climb from 0 works."""
    g = jp.CompGraph([0.0, 0.0], [(0, 1)], size_param=[1.0, 1.0], size_out=[1.0, 0.0])
    problem = jp.Problem(g, 2, capacity=1.0)
    assert brute_force_optimum(problem) == 1.0
    cert = certify(problem, methods=("simple", "station", "station-check"), samples=2,
                   time_limit=5)
    assert cert.upper_bound == 1.0
    assert 1.0 - 1e-3 <= cert.result("station-check").bound <= 1.0


def test_large_graphs_are_skipped(monkeypatch):
    import jaxplace.bounds.station as station

    monkeypatch.setattr(station, "MAX_NODES", 3)
    problem = jp.Problem(jp.CompGraph([1.0] * 5, [(0, 1), (1, 2)]), 2)
    for name in ("station", "station-check"):
        r = BOUNDS[name].run(problem, BoundContext(time_limit=2))
        assert r.bound == 0.0 and r.status.startswith("skipped")
