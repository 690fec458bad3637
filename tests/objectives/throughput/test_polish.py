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


def test_the_polish_branches_more_at_two_stages():
    # at k = 2 the MIP (one binary per op) gets polish_nodes(2) branch-and-bound nodes,
    # elsewhere the root node; search_many's `polish_nodes` still overrides it. A node
    # limit continues the 1-node run (same root, one HiGHS thread, fixed seed), so its
    # incumbent is never worse.
    from jaxplace.generators import regal
    from jaxplace.objectives.throughput.polish import POLISH_MIP_NODES, polish_nodes

    assert polish_nodes(2) > POLISH_MIP_NODES
    assert polish_nodes(3) == polish_nodes(4) == POLISH_MIP_NODES
    p = jp.Problem(regal(5, n=60), 2)
    one = jp.search(p, seed=0, progress=False)
    assert one.info["polish"]["max_nodes"] == polish_nodes(2)
    many = jp.search_many([p], seed=0)[0]
    assert many.info["polish"]["max_nodes"] == polish_nodes(2)
    assert many.cost == one.cost
    root = jp.search_many([p], seed=0, polish_nodes=POLISH_MIP_NODES)[0]
    assert root.info["polish"]["max_nodes"] == POLISH_MIP_NODES
    assert many.cost <= root.cost * (1 + 1e-9)
    k3 = jp.search(jp.Problem(p.graph, 3), seed=0, progress=False)
    assert k3.info["polish"]["max_nodes"] == POLISH_MIP_NODES
