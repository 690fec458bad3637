"""bottleneck-guess ends within its time limit (bounds/bottleneck_guess.py's deadline) and
its bound stays valid whatever the deadline cut: skipped solves count with z's floor."""

from __future__ import annotations

import math
import time

import numpy as np
from brute import brute_force_optimum, direct_block_cost
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import tiny_problems

import jaxplace as jp
from jaxplace.bounds import certify, guess_bound
from jaxplace.bounds.bottleneck_guess import NOT_NEEDED, NOT_RUN, _solve_in_process, guess_model

# HiGHS's tolerance on scaled rows (as in test_bounds.py)
RTOL = 1e-6


def chain_problem(seed: int, n: int, k: int) -> jp.Problem:
    """Edges i -> j with i < j only, so the index order is a topological order."""
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 6))
             if rng.random() < 0.3]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n), rng.uniform(0, 5, n))
    return jp.Problem(g, k)


def index_cut_cost(problem: jp.Problem) -> float:
    """The cost of cutting the index order into k equal runs: an upper bound on OPT."""
    runs = np.array_split(np.arange(problem.graph.num_nodes), problem.k)
    return max(direct_block_cost(problem, r) for r in runs)


@settings(max_examples=20, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3, multi_tensor=True),
       st.sampled_from([0.0, 0.005, 0.05]))
def test_cut_guess_stays_below_brute_force(problem, limit):
    opt = brute_force_optimum(problem)
    bound, per, _ = guess_bound(problem, time_limit=limit)
    assert len(per) == problem.k
    assert bound >= 0.0
    if not math.isinf(opt):
        assert bound <= opt * (1 + RTOL) + 1e-9, (bound, opt, [r.status for r in per])


def test_rung_ends_within_its_limit():
    """k = 16 on 60 ops: the solves take ~240 s in all; each used to get at least 0.5 s
    (8 s for a 1 s limit). The allowance: the last solve's start-up and HiGHS noticing
    its limit, and (workers) the WORKER_GRACE before a late worker is killed."""
    problem = chain_problem(1, 60, 16)
    ub = index_cut_cost(problem)
    for workers, limit in ((1, 1.0), (2, 1.0), (1, 0.0)):
        t0 = time.perf_counter()
        bound, per, _ = guess_bound(problem, time_limit=limit, workers=workers)
        took = time.perf_counter() - t0
        assert took <= limit + 1.0, (workers, limit, took)
        assert len(per) == 16
        assert 0.0 <= bound <= ub * (1 + RTOL)
        assert all(r.status in (NOT_RUN, NOT_NEEDED) for r in per) or limit > 0


def test_ladder_rung_reports_the_solves_it_ran():
    problem = chain_problem(1, 60, 16)
    cert = certify(problem, methods=("simple", "bottleneck-guess"), time_limit=0.01,
                   samples=2)
    r = cert.result("bottleneck-guess")
    assert r.solves == 0 and r.bound == 0.0 and r.status == NOT_RUN
    assert cert.lower_bound == jp.simple_lower_bound(problem)


def test_a_worker_past_its_timeout_is_killed_and_counts_as_not_run():
    problem = chain_problem(1, 20, 4)
    m = guess_model(problem, 2)
    job = (m.arrays(), dict(relax=False, time_limit=60.0, threads=1, mip_rel_gap=1e-6,
                            scale=m.scale, z_floor=0.0))
    res = _solve_in_process(job, 0.001)  # no Python starts in a millisecond
    assert res.status == NOT_RUN and res.bound == 0.0
