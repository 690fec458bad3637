"""The cover bound's branch-and-bound pricing (`cover_pricing`) against brute force over
all node subsets on tiny graphs: the same maximum, sets that are blocks, and a stopped
search whose theta is still an upper bound."""

from __future__ import annotations

import math

import numpy as np
from brute import brute_force_optimum, direct_block_cost, is_valid
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import tiny_problems, tiny_training_problems

import jaxplace as jp
from jaxplace.bounds.base import BoundContext, unmodelled
from jaxplace.bounds.cover import CoverBound, CoverConfig, cover_bound
from jaxplace.bounds._cover_pricing import ConvexPricer
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.objectives.throughput.reference import decode_reference

TOL = 1e-9


def _is_block(problem, s: np.ndarray) -> bool:
    """S is a block of some valid partition: S one block, every other unit its own."""
    a = np.where(s, 0, 1 + problem.graph.units.unit_of)
    return is_valid(problem, a)


def _brute_max(problem, pi, z) -> float:
    best = 0.0
    for mask in range(1, 1 << problem.n):
        s = np.array([(mask >> v) & 1 for v in range(problem.n)], dtype=bool)
        if pi[s].sum() <= best or not _is_block(problem, s):
            continue
        if direct_block_cost(problem, np.flatnonzero(s)) <= z + TOL:
            best = float(pi[s].sum())
    return best


def _duals(problem, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pi = rng.uniform(-0.5, 2.0, problem.n)
    pi[rng.random(problem.n) < 0.3] = 0.0  # the cover's duals are often 0
    return pi


problems = st.one_of(tiny_problems(max_nodes=7, max_k=3),
                     tiny_training_problems(max_forward=4, max_backward=3))


@settings(max_examples=60, deadline=None)
@given(problems, st.integers(0, 2**16), st.floats(0.2, 1.0))
def test_pricing_equals_brute_force(problem, seed, share):
    pi = _duals(problem, seed)
    pricer = ConvexPricer(problem)
    total = float(problem.graph.work.sum() + problem.graph.tensor_size.sum())
    z = share * total
    val, s, proven = pricer.maximum(pi, z)
    assert proven
    want = _brute_max(problem, pi, z)
    assert math.isclose(val, want, rel_tol=1e-9, abs_tol=1e-9)
    if val > 0:
        assert math.isclose(float(pi[s].sum()), val, rel_tol=1e-9, abs_tol=1e-9)
        assert _is_block(problem, s)
        assert direct_block_cost(problem, np.flatnonzero(s)) <= z + TOL


@settings(max_examples=30, deadline=None)
@given(problems, st.integers(0, 2**16))
def test_unit_costs_match_definition(problem, seed):
    pricer = ConvexPricer(problem)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        S = int(rng.integers(0, 1 << pricer.U))
        nodes = np.flatnonzero(pricer.nodes_of(S))
        want = direct_block_cost(problem, nodes)
        got = pricer.cost(S)
        assert (math.isinf(got) and math.isinf(want)) or math.isclose(
            got, want, rel_tol=1e-9, abs_tol=1e-9)


@settings(max_examples=30, deadline=None)
@given(tiny_problems(max_nodes=7, max_k=3), st.integers(0, 2**16))
def test_solve_floor_and_stopped_theta(problem, seed):
    """`solve` returns sets above its floor, and theta bounds the maximum (or the
    floor), also when stopped at once or after its first set."""
    pi = _duals(problem, seed)
    pricer = ConvexPricer(problem)
    z = 0.5 * float(problem.graph.work.sum() + problem.graph.tensor_size.sum())
    want = _brute_max(problem, pi, z)
    for target in (0.5, 1.5, 3.0):
        floor = max(target, 1.0)
        for limit, sets in ((10.0, 8), (10.0, 1), (0.0, 8)):
            theta, found = pricer.solve(pi, z, target, limit, max_sets=sets)
            assert theta >= min(want, floor * (1 - 1e-9)) - 1e-9
            if want <= floor * (1 - 1e-9) and limit > 0:
                assert not found and theta <= floor + 1e-9  # refuted: no column above
            for s in found:
                assert pi[s].sum() > floor * (1 - 1e-9)
                assert _is_block(problem, s)


def test_a_mutant_without_convexity_fails():
    """The brute force sees convexity: a chain a -> b -> c with b worthless and a, c
    valuable cannot take {a, c}."""
    g = jp.CompGraph([1.0, 1.0, 1.0], [(0, 1), (1, 2)], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
    problem = jp.Problem(g, 2)
    pi = np.array([1.0, -5.0, 1.0])
    assert _brute_max(problem, pi, 10.0) == 1.0
    assert ConvexPricer(problem).maximum(pi, 10.0)[0] == 1.0


def _medium_problem(seed: int, n: int = 22, k: int = 6):
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 5))
             if rng.random() < 0.4]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                     rng.uniform(0, 5, n))
    return jp.Problem(g, k)


def test_stopped_search_theta_bounds_the_maximum():
    """A search stopped by its limit (after 16 expansions) reports a theta no lower than
    the maximum a finished search proves, on 22-node graphs."""
    for seed in range(4):
        problem = _medium_problem(seed)
        pricer = ConvexPricer(problem)
        pi = _duals(problem, seed)
        z = float(problem.graph.work.sum()) / 3
        best, s, proven = pricer.maximum(pi, z, time_limit=60)
        assert proven and math.isclose(float(pi[s].sum()), best, rel_tol=1e-9)
        for floor in (0.0, 0.5 * best):
            theta, found, nodes, ended = pricer.search(pi, z, floor, 0.0, max_sets=1 << 30)
            assert theta >= best - 1e-9
            assert all(p <= best + 1e-9 for _, p in found)


@settings(max_examples=15, deadline=None)
@given(problems, st.sampled_from(["bnb", "hybrid"]))
def test_cover_with_bnb_pricing_at_most_brute_force(problem, pricing):
    """The cover bound priced by branch and bound never passes the optimum (training
    graphs included: colocation classes and backward nodes)."""
    if unmodelled(problem):
        return
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt):
        return
    lo = throughput_lower_bound(problem)
    bound, _ = cover_bound(problem, lo, 2 * opt + 1.0, time_limit=5,
                           config=CoverConfig(rtol=1e-3, pricing=pricing))
    assert bound <= opt * (1 + 1e-6) + 1e-9, (bound, opt)


def test_cover_with_bnb_pricing_closes_the_gap():
    """On 8-node random DAGs (k = 3) the search ends, its theta is exact, and the cover
    bound closes most of the simple bound's gap without a pricing MIP."""
    gains = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 8
        edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 5))
                 if rng.random() < 0.4]
        g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                         rng.uniform(0, 5, n))
        problem = jp.Problem(g, 3)
        opt = brute_force_optimum(problem)
        lo = throughput_lower_bound(problem)
        bound, _ = cover_bound(problem, lo, opt, time_limit=15,
                               config=CoverConfig(rtol=1e-3, pricing="bnb",
                                                  polish_share=0.0))
        assert bound <= opt * (1 + 1e-6)
        gains.append((bound - lo) / max(opt - lo, 1e-12))
    assert max(gains) > 0.5, gains


def test_cover_started_at_the_ladder_bound():
    """start="ladder": the z search starts at the bound the rungs before it proved, so the
    rung reports at least that, and never more than the optimum; started at the simple
    bound (the default) it reports less when it has no time."""
    above = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 8
        edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 5))
                 if rng.random() < 0.4]
        g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                         rng.uniform(0, 5, n))
        problem = jp.Problem(g, 3)
        opt = brute_force_optimum(problem)
        part = decode_reference(problem, np.zeros(n))
        floor = 0.97 * opt  # a valid bound "proven before"
        context = BoundContext(time_limit=3, lower_bound=floor, assignment=part.assignment,
                               upper_bound=float(part.cost))
        res = CoverBound("cover", CoverConfig(start="ladder")).run(problem, context)
        assert floor <= res.bound <= opt * (1 + 1e-6)
        # no time at all: each start reports where it starts
        now = context.replace(time_limit=0.0)
        assert CoverBound("cover", CoverConfig(start="ladder")).run(problem,
                                                                    now).bound == floor
        simple = CoverBound("cover").run(problem, now).bound
        assert simple == throughput_lower_bound(problem)
        above += simple < floor
    assert above


def test_unknown_pricing_or_start_is_refused():
    import pytest

    from jaxplace.bounds.cover import CoverConfig
    from jaxplace.errors import JaxplaceError

    with pytest.raises(JaxplaceError, match="pricing"):
        CoverConfig(pricing="bnbb")
    with pytest.raises(JaxplaceError, match="start"):
        CoverConfig(start="top")
