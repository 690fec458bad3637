"""The NumPy reference against brute force and against direct set computations."""

import numpy as np
import pytest
from brute import brute_force_optimum, direct_block_cost, is_valid, topological_orders
from hypothesis import given
from hypothesis import strategies as st
from strategies import same_cost, tiny_problems

import jaxplace as jp


def chain_problem(k=2, **kw):
    # a -> b -> c -> d, tensors of size 1; a 5-node fixture with a known optimum below
    g = jp.CompGraph([3, 1, 1, 3], [(0, 1), (1, 2), (2, 3)], size_out=[1, 1, 1, 0])
    return jp.Problem(g, k, **kw)


def test_hand_computed_chain():
    p = chain_problem(k=2)
    # split after b: {a,b} = 4 + out 1 ; {c,d} = in 1 + 4 -> 5
    part = jp.reference.slice_order(p, [0, 1, 2, 3])
    assert part.cost == pytest.approx(5.0, abs=1e-12)
    assert part.cuts == (2,)
    assert part.assignment.tolist() == [0, 0, 1, 1]
    assert jp.reference.slice_order(p.replace(k=1), [0, 1, 2, 3]).cost == pytest.approx(8.0)


def test_diamond_tensor_counted_once():
    # a feeds b and c; d joins. Put a alone: its tensor leaves once (size 2), not twice.
    g = jp.CompGraph([1, 1, 1, 1], [(0, 1), (0, 2), (1, 3), (2, 3)], size_out=[2, 1, 1, 0])
    p = jp.Problem(g, 2)
    cost = jp.evaluate_partition(p, [0, 1, 1, 1])
    assert cost.io_out[0] == 2 and cost.io_in[1] == 2
    assert cost.total.tolist() == [3.0, 5.0]


def test_kahn_priorities_and_ties():
    g = jp.CompGraph([1] * 4, [(0, 2), (1, 3)])
    assert jp.reference.kahn(g, [0.1, 0.9, 0.5, 0.5]).tolist() == [1, 3, 0, 2]
    # ties: smaller index
    assert jp.reference.kahn(g, [0.5, 0.5, 0.5, 0.5]).tolist() == [0, 1, 2, 3]
    x = [0.3, 0.30000001, 0.2, 0.9]  # equal in float32, not in float64
    assert jp.reference.kahn(g, np.array(x, dtype=np.float32)).tolist() == [0, 1, 3, 2]
    assert jp.reference.kahn(g, np.array(x, dtype=np.float64)).tolist() == [1, 3, 0, 2]


@given(tiny_problems(max_nodes=6, max_k=3))
def test_min_over_orders_equals_brute_force(problem):
    best = min(jp.reference.slice_order(problem, o).cost for o in topological_orders(problem.graph))
    assert same_cost(best, brute_force_optimum(problem))


@given(tiny_problems(max_nodes=5, max_k=3, multi_tensor=True))
def test_min_over_orders_equals_brute_force_multi_tensor(problem):
    best = min(jp.reference.slice_order(problem, o).cost for o in topological_orders(problem.graph))
    assert same_cost(best, brute_force_optimum(problem))


@given(tiny_problems(max_nodes=7, max_k=4), st.randoms(use_true_random=False))
def test_slice_partition_is_consistent(problem, rnd):
    x = np.array([rnd.random() for _ in range(problem.n)])
    part = jp.reference.decode_reference(problem, x)
    cost = jp.evaluate_partition(problem, part.assignment)
    assert same_cost(cost.bottleneck, part.cost)
    assert part.num_blocks <= problem.k
    assert is_valid(problem, part.assignment)
    # blocks are contiguous pieces of the order
    assert np.concatenate(part.blocks).tolist() == part.order.tolist()


@given(tiny_problems(max_nodes=7, max_k=4, multi_tensor=True), st.randoms(use_true_random=False))
def test_evaluate_partition_matches_set_definition(problem, rnd):
    order = jp.reference.kahn(problem.graph, [rnd.random() for _ in range(problem.n)])
    cuts = sorted(rnd.sample(range(1, problem.n), min(problem.k, problem.n) - 1)) \
        if problem.n > 1 else []
    a = np.empty(problem.n, dtype=int)
    for b, block in enumerate(np.split(order, cuts)):
        a[block] = b
    cost = jp.evaluate_partition(problem, a)
    for b in range(problem.k):
        assert same_cost(cost.total[b], direct_block_cost(problem, np.flatnonzero(a == b)))


def test_segment_columns_match_direct_costs():
    rng = np.random.default_rng(3)
    n = 25
    perm = rng.permutation(n)
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.2]
    g = jp.CompGraph(rng.random(n), edges, rng.random(n), rng.random(n))
    p = jp.Problem(g, 3, bandwidth=0.7, memory=2.0)
    order = jp.reference.kahn(g, rng.random(n))
    for r, col in jp.reference.segment_cost_columns(p, order):
        direct = [direct_block_cost(p, order[l:r + 1]) for l in range(r + 1)]
        np.testing.assert_allclose(col, direct, rtol=1e-12, atol=1e-12)


def test_k_larger_than_n_and_single_node():
    g = jp.CompGraph([2.0])
    assert jp.reference.slice_order(jp.Problem(g, 5), [0]).cost == 2.0
    p = chain_problem(k=10)
    assert jp.reference.slice_order(p, [0, 1, 2, 3]).cost == pytest.approx(min(
        jp.reference.slice_order(p.replace(k=j), [0, 1, 2, 3]).cost for j in range(1, 5)))


def test_capacity_infeasible_is_inf():
    p = chain_problem(k=1, capacity=1.0)
    g = jp.CompGraph([1, 1], [(0, 1)], size_param=[2, 0])
    assert jp.reference.slice_order(jp.Problem(g, 2, capacity=1.0), [0, 1]).cost == np.inf
    assert jp.reference.slice_order(p, [0, 1, 2, 3]).cost == pytest.approx(8.0)  # no params


def test_capacity_fits_exactly_despite_prefix_rounding():
    # Found by hypothesis: 3.8 + 3.5 + 3.5 - 3.8 = 7.000000000000001 in float64 made a
    # block of parameters exactly 7.0 look over the capacity 7.0.
    g = jp.CompGraph([0, 0, 0, 0.1, 0, 0.1], [(3, 4), (5, 3)], [3.5, 3.8, 0, 3.5, 3.6, 0])
    p = jp.Problem(g, 3, bandwidth=0.5, capacity=7.0)
    assert jp.reference.slice_order(p, [1, 5, 0, 2, 3, 4]).cost == pytest.approx(0.1)
    assert jp.evaluate_partition(p, [1, 0, 1, 1, 2, 0]).bottleneck == pytest.approx(0.1)
    assert jp.evaluate(p, np.array([[0.9, 1.0, 0.5, 0.4, 0.1, 0.95]]))[0] == pytest.approx(0.1)


def test_simple_lower_bound():
    p = chain_problem(k=2)
    assert jp.simple_lower_bound(p) == 4.0
    assert jp.simple_lower_bound(p.replace(k=8)) == 3.0


def test_evaluate_reference_rows():
    p = chain_problem(k=2)
    X = np.random.default_rng(0).random((5, 4))
    np.testing.assert_allclose(jp.reference.evaluate_reference(p, X), 5.0)
