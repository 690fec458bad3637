"""MIP polish (`jaxplace.objectives.throughput.polish`) and its use in the default search."""

import numpy as np
import pytest
from brute import brute_force_optimum
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import same_cost, tiny_cpu_block_problems, tiny_problems

import jaxplace as jp
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.polish import mip_polish, partition_priorities, polish_applies
from jaxplace.objectives.throughput.reference import decode_reference


@settings(max_examples=40, deadline=None)
@given(tiny_problems(max_nodes=7, max_k=3), st.integers(0, 2**31 - 1))
def test_partition_priorities_decode_no_worse(problem, seed):
    """The blocks-one-after-another order re-slices to at most the partition's cost."""
    x = np.random.default_rng(seed).random(problem.n)
    part = decode_reference(problem, x)
    pc = evaluate_partition(problem, part.assignment)
    y = partition_priorities(problem, part.assignment)
    assert decode_reference(problem, y).cost <= pc.bottleneck * (1 + 1e-9) + 1e-12


@settings(max_examples=15, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=5), st.integers(0, 2**31 - 1))
def test_partition_priorities_with_cpu_blocks(problem, seed):
    x = np.random.default_rng(seed).random(problem.n)
    part = decode_reference(problem, x)
    if not np.isfinite(part.cost):
        return
    pc = evaluate_partition(problem, part.assignment)
    y = partition_priorities(problem, part.assignment)
    assert decode_reference(problem, y).cost <= pc.bottleneck * (1 + 1e-9) + 1e-12


@settings(max_examples=15, deadline=None)
@given(tiny_problems(max_nodes=6, max_k=3), st.integers(0, 2**31 - 1))
def test_mip_polish_reaches_brute_force(problem, seed):
    """From a random valid partition, the polished one is the optimum (tiny graphs
    solve to optimality), and never worse than the start."""
    x = np.random.default_rng(seed).random(problem.n)
    part = decode_reference(problem, x)
    if not np.isfinite(part.cost):
        return
    start = evaluate_partition(problem, part.assignment).bottleneck
    out = mip_polish(problem, part.assignment, max_nodes=10**6)
    opt = brute_force_optimum(problem)
    if out is None:
        assert same_cost(start, opt)
        return
    a, cost, info = out
    assert same_cost(evaluate_partition(problem, a).bottleneck, cost)
    assert cost < start
    assert same_cost(cost, opt)
    assert info["lower_bound"] <= cost * (1 + 1e-9)


def test_default_search_polishes_at_small_k():
    from jaxplace.generators import regal

    p = jp.Problem(regal(11, n=40), 3)
    assert polish_applies(p)
    assert not polish_applies(jp.Problem(p.graph, 8))
    r = jp.search(p, seed=0, progress=False)
    assert "polish" in r.info
    off = jp.search(p, seed=0, progress=False, polish=False)
    assert "polish" not in off.info
    assert r.cost == pytest.approx(evaluate_partition(p, r.partition.assignment).bottleneck)
