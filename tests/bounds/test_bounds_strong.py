"""The cover (column-generation) bound against brute force on tiny graphs: it never
refutes z = OPT, never exceeds OPT, and its set costs are the definition's."""

from __future__ import annotations

import math
import time

import numpy as np
from brute import brute_force_optimum, direct_block_cost
from hypothesis import assume, given, settings
from strategies import tiny_problems, tiny_training_problems

import jaxplace as jp
from jaxplace.bounds import certify
from jaxplace.bounds.base import BoundContext
from jaxplace.bounds.cover import (
    CoverBound,
    CoverConfig,
    _LocalSearch,
    _Pool,
    _Pricer,
    cover_bound,
    refute_z,
    segment_sets,
    set_costs,
    weighted_bottleneck,
)
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.objectives.throughput.reference import decode_reference, kahn

# HiGHS works to feasibility tolerances of about 1e-7 on scaled rows; a bound may
# exceed the optimum by that much, relative, and no more.
RTOL = 1e-6


def _random_problem(seed: int, n: int, k: int, p: float = 0.4, window: int = 5):
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + window))
             if rng.random() < p]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                     rng.uniform(0, 5, n))
    return jp.Problem(g, k)


@settings(max_examples=30, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3))
def test_set_costs_match_definition(problem):
    rng = np.random.default_rng(problem.n)
    sets = rng.random((8, problem.n)) < 0.5
    got = set_costs(problem, sets)
    for s, c in zip(sets, got, strict=True):
        want = direct_block_cost(problem, np.flatnonzero(s))
        assert (math.isinf(c) and math.isinf(want)) or math.isclose(c, want, rel_tol=1e-9,
                                                                    abs_tol=1e-9)


def _refutes(problem, z, convex=True) -> bool:
    pool = _Pool(problem)
    pool.add(np.eye(problem.n, dtype=bool))
    pricer = _Pricer(problem, max(throughput_lower_bound(problem), 1e-12), convex=convex)
    return refute_z(problem, z, pool, pricer, time.perf_counter() + 20).refuted is True


@settings(max_examples=25, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3))
def test_cover_never_refutes_the_optimum(problem):
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt):
        return
    assert not _refutes(problem, opt)
    assert not _refutes(problem, opt, convex=False)


@settings(max_examples=10, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3))
def test_cover_bound_at_most_brute_force(problem):
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt):
        return
    lo = throughput_lower_bound(problem)
    bound, _ = cover_bound(problem, lo, 2 * opt + 1.0, time_limit=10,
                           config=CoverConfig(rtol=1e-3))
    assert bound <= opt * (1 + RTOL) + 1e-9, (bound, opt)


def test_cover_is_tight_where_the_lp_is():
    """On small random DAGs the cover bound closes most of the simple bound's gap."""
    gains = []
    for seed in range(3):
        problem = _random_problem(seed, 8, 3)
        opt = brute_force_optimum(problem)
        lo = throughput_lower_bound(problem)
        bound, tests = cover_bound(problem, lo, opt, time_limit=15,
                                   config=CoverConfig(rtol=1e-3))
        assert bound <= opt * (1 + RTOL)
        gains.append((bound - lo) / max(opt - lo, 1e-12))
    assert max(gains) > 0.5, gains


def test_segment_sets_are_cheap_convex_blocks():
    problem = _random_problem(1, 12, 3)
    order = kahn(problem.graph, np.random.default_rng(0).random(problem.n))
    z = 1.2 * throughput_lower_bound(problem)
    sets = segment_sets(problem, order, z)
    assert len(sets)
    assert np.all(set_costs(problem, sets) <= z * (1 + 1e-12))
    pos = np.empty(problem.n, dtype=np.int64)
    pos[order] = np.arange(problem.n)
    for s in sets:  # contiguous in the order
        p = np.sort(pos[s])
        assert p[-1] - p[0] + 1 == len(p)


def test_cover_method_in_certify():
    problem = _random_problem(2, 9, 3)
    opt = brute_force_optimum(problem)
    part = decode_reference(problem, np.zeros(problem.n))
    cert = certify(problem, part.assignment, methods=("simple", "cover"), time_limit=10)
    r = cert.result("cover")
    assert throughput_lower_bound(problem) <= r.bound <= opt * (1 + RTOL)
    assert cert.lower_bound <= opt * (1 + RTOL)
    # without a partition the method has nothing to refute up to
    res = CoverBound("cover").run(problem, BoundContext(time_limit=5))
    assert res.bound == throughput_lower_bound(problem)


@settings(max_examples=25, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3))
def test_weighted_bottleneck_at_most_brute_force(problem):
    opt = brute_force_optimum(problem)
    rng = np.random.default_rng(problem.n + 7 * problem.k)
    for pi in (problem.graph.work, rng.normal(1.0, 1.0, problem.n)):
        b = weighted_bottleneck(problem, pi, time_limit=10)
        assert b <= opt * (1 + RTOL) + 1e-9, (b, opt, pi)
    g = problem.graph
    if g.work.sum() > 0 and math.isfinite(opt):
        # pi = work: some block holds W/k of work, and f(S) >= work(S)
        b = weighted_bottleneck(problem, g.work, time_limit=10)
        assert b >= g.work.sum() / problem.k * (1 - RTOL) - 1e-9


@settings(max_examples=20, deadline=None)
@given(tiny_training_problems())
def test_cover_training_graphs_never_above_brute_force(problem):
    """Colocation classes and forward-only contiguity (accelerators only)."""
    assume(bool(problem.supported.all()))
    problem = problem.replace(cpus=0)
    opt = brute_force_optimum(problem)
    assume(math.isfinite(opt))
    assert not _refutes(problem, opt)
    rng = np.random.default_rng(problem.n)
    b = weighted_bottleneck(problem, rng.normal(1.0, 1.0, problem.n), time_limit=10)
    assert b <= opt * (1 + RTOL) + 1e-9


def test_local_search_convexity_and_moves():
    """Convexity by reachability equals the definition; greedy moves stay feasible."""
    problem = _random_problem(3, 9, 3)
    g = problem.graph
    succ = {u: set() for u in range(problem.n)}
    for u, v in g.edges:
        succ[int(u)].add(int(v))

    def reach(u):
        seen, todo = set(), [u]
        while todo:
            for w in succ[todo.pop()]:
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
        return seen

    R = {u: reach(u) for u in range(problem.n)}
    ls = _LocalSearch(problem)
    sets = np.random.default_rng(0).random((64, problem.n)) < 0.4
    want = [not any(a in s_ and c in s_ and b not in s_
                    for a in s_ for c in s_ for b in R[a] if c in R[b])
            for s_ in (set(np.flatnonzero(x).tolist()) for x in sets)]
    assert list(ls.convex(sets)) == want
    pi = np.random.default_rng(1).normal(1, 1, problem.n)
    z = 1.3 * throughput_lower_bound(problem)
    start = np.zeros(problem.n, dtype=bool)
    start[g.topo_order[0]] = True
    moves = ls.improve(start, pi, z)
    if moves:
        M = np.asarray(moves)
        assert np.all(set_costs(problem, M) <= z) and np.all(ls.convex(M))
        assert np.all(np.diff(M.astype(float) @ pi) > 0)
