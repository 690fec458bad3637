"""The multilevel path: fast slicing against the float64 reference and brute force,
acyclic quotients, colocation, exact projection, refinement never worse, the method."""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.generators.regal import regal
from jaxplace.multilevel.coarsen import coarsen, quotient
from jaxplace.multilevel.memory import check_memory
from jaxplace.multilevel.project import consistent_order, to_finer, to_nodes
from jaxplace.multilevel.refine import RefineStats, perturb_reslice, refine
from jaxplace.multilevel.slicing import slice_units
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import kahn, slice_order, unit_order


def _close(a: float, b: float, rtol: float = 1e-9) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


def _colocated(seed: int, n: int = 40) -> jp.CompGraph:
    """A REGAL-like graph whose nodes share colour classes in small random groups."""
    g = regal(seed, n=n, param_mean=3.0)
    rng = np.random.default_rng(seed)
    color = np.where(rng.random(n) < 0.4, rng.integers(0, n // 4, n), -1)
    return jp.CompGraph(g.work, g.edges, g.size_param, g.size_out,
                        node_attrs={"color_class": color})


def _problems(seed: int):
    """A few problems of one seed: plain, with overflow, with capacity, colocated."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 90))
    g = regal(seed, n=n, param_mean=float(rng.choice([0.0, 5.0])))
    k = int(rng.integers(1, 9))
    total = float(g.size_param.sum())
    yield jp.Problem(g, k=k, bandwidth=float(rng.choice([0.5, 1.0, 4.0])))
    yield jp.Problem(g, k=k, memory=total / (2 * k))
    if total > 0:
        yield jp.Problem(g, k=k, capacity=total / k * 1.3)
    yield jp.Problem(_colocated(seed), k=k)


@pytest.mark.parametrize("seed", range(30))
def test_fast_slicing_matches_reference(seed):
    for p in _problems(seed):
        x = np.random.default_rng(seed + 100).random(p.n)
        order = kahn(p.graph, x)
        ref = slice_order(p, order)
        fast = slice_units(p, order)
        assert _close(fast.cost, ref.cost), (fast.cost, ref.cost)
        if math.isfinite(fast.cost):
            assert np.array_equal(fast.order, order)
            assert _close(evaluate_partition(p, fast.assignment).bottleneck, fast.cost)
            # a bound at the optimum keeps it, one below it finds nothing
            assert _close(slice_units(p, order, bound=ref.cost).cost, ref.cost)
            assert math.isinf(slice_units(p, order, bound=ref.cost * 0.999 - 1e-9).cost)


def _brute_slice(p: jp.Problem, order) -> float:
    """Every split of the unit order into at most k contiguous pieces."""
    units = p.graph.units
    uo = unit_order(p.graph, order)
    best = math.inf
    for cuts in itertools.chain.from_iterable(
            itertools.combinations(range(1, len(uo)), c) for c in range(min(p.k, len(uo)))):
        block = np.zeros(len(uo), np.int64)
        block[list(cuts)] = 1
        ub = np.empty(len(uo), np.int64)
        ub[uo] = np.cumsum(block)
        best = min(best, evaluate_partition(p, ub[units.unit_of]).bottleneck)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_fast_slicing_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.4]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 3, n),
                     rng.uniform(0, 6, n))
    total = float(g.size_param.sum())
    p = jp.Problem(g, k=int(rng.integers(1, 4)), memory=total / 3,
                   capacity=total * 0.8 if seed % 2 else None)
    order = kahn(g, rng.random(n))
    assert _close(slice_units(p, order).cost, _brute_slice(p, order))


def test_cpu_blocks_go_to_the_reference_or_are_refused():
    g = regal(3, n=30)
    g = jp.CompGraph(g.work, g.edges, g.size_param, g.size_out,
                     node_attrs={"cpu_latency": g.work * 3})
    p = jp.Problem(g, k=3, cpus=1)
    order = kahn(g, np.arange(30.0))
    assert _close(slice_units(p, order).cost, slice_order(p, order).cost)
    with pytest.raises(JaxplaceError, match="cpus"):
        jp.search(p, "multilevel", time_limit=1)
    from jaxplace.generators.training import training_graph
    from jaxplace.multilevel import applies

    assert not applies(p)
    assert applies(jp.Problem(g, k=3))
    assert not applies(jp.Problem(training_graph(regal(3, n=20)), k=3))


def _acyclic(level_problem_nodes: int, node_cluster, edges) -> bool:
    qe = np.stack([node_cluster[edges[:, 0]], node_cluster[edges[:, 1]]], axis=1)
    qe = qe[qe[:, 0] != qe[:, 1]]
    try:
        jp.CompGraph(np.ones(level_problem_nodes), qe)
    except JaxplaceError:
        return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_levels_are_acyclic_and_keep_colocation(seed):
    g = _colocated(seed, n=300)
    p = jp.Problem(g, k=4)
    levels = coarsen(p, coarsest=40)
    assert len(levels) >= 3
    color = g.node_attrs["color_class"]
    for lv in levels:
        assert _acyclic(lv.size, lv.node_cluster, g.edges)
        for c in np.unique(color[color >= 0]):
            assert len(np.unique(lv.node_cluster[color == c])) == 1
        # the level's order is topological for its quotient graph
        pos = np.empty(lv.size, np.int64)
        pos[lv.order] = np.arange(lv.size)
        e = lv.problem.graph.edges
        assert np.all(pos[e[:, 0]] < pos[e[:, 1]])
    for fine, coarse in zip(levels[:-1], levels[1:], strict=True):
        assert np.array_equal(coarse.node_cluster, fine.parent[fine.node_cluster])


@pytest.mark.parametrize("seed", range(6))
def test_projection_is_exact(seed):
    g = regal(seed, n=250, param_mean=4.0)
    p = jp.Problem(g, k=5, memory=float(g.size_param.sum()) / 8, bandwidth=2.0)
    levels = coarsen(p, coarsest=30)
    rng = np.random.default_rng(seed)
    for i, lv in enumerate(levels):
        part = slice_units(lv.problem, kahn(lv.problem.graph, rng.random(lv.size)))
        coarse = evaluate_partition(lv.problem, part.assignment).total
        fine = evaluate_partition(p, to_nodes(lv, part.assignment)).total
        np.testing.assert_allclose(np.sort(fine), np.sort(coarse), rtol=1e-12)
        if i > 0:
            finer = to_finer(levels[i - 1], part.assignment)
            mid = evaluate_partition(levels[i - 1].problem, finer).bottleneck
            assert _close(mid, part.cost)


def test_quotient_keeps_block_costs_with_colocation():
    g = _colocated(5, n=60)
    p = jp.Problem(g, k=3, memory=2.0)
    units = g.units
    qp = quotient(p, units.unit_of, units.num_units)
    part = slice_units(qp, kahn(qp.graph, np.random.default_rng(0).random(qp.n)))
    a = part.assignment[units.unit_of]
    np.testing.assert_allclose(evaluate_partition(p, a).total,
                               evaluate_partition(qp, part.assignment).total, rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_refinement_never_worse(seed):
    g = regal(seed, n=200)
    p = jp.Problem(g, k=6)
    levels = coarsen(p, coarsest=40)
    rng = np.random.default_rng(seed)
    top = levels[-1]
    a = slice_units(top.problem, kahn(top.problem.graph, rng.random(top.size))).assignment
    for i in range(len(levels) - 1, -1, -1):
        lv = levels[i]
        if i < len(levels) - 1:
            a = to_finer(lv, a)
        before = evaluate_partition(lv.problem, a).bottleneck
        stats = RefineStats()
        a, cost = refine(lv, a, time.perf_counter() + 2.0, stats, slack=0.02)
        assert cost <= before
        assert _close(evaluate_partition(lv.problem, a).bottleneck, cost)
        # blocks stay contiguous in an order: the quotient is acyclic
        order = consistent_order(lv.problem, a, lv.order)
        assert len(order) == lv.size


@pytest.mark.parametrize("seed", range(3))
def test_perturbed_reslicing_never_worse(seed):
    g = regal(seed, n=150, param_mean=2.0)
    p = jp.Problem(g, k=5, memory=float(g.size_param.sum()) / 6)
    lv = coarsen(p, coarsest=10_000)[0]
    rng = np.random.default_rng(seed)
    a = slice_units(p, kahn(g, rng.random(g.num_nodes))).assignment
    before = evaluate_partition(p, a).bottleneck
    out, cost = perturb_reslice(lv, a, time.perf_counter() + 0.5, rng)
    assert cost <= before
    assert _close(evaluate_partition(p, out).bottleneck, cost)


def test_multilevel_method_result_is_exact_and_reported():
    g = regal(2, n=400)
    p = jp.Problem(g, k=8)
    seen = []
    res = jp.search(p, "multilevel", time_limit=4, observer=seen.append,
                    coarsest=60, coarse_method="none")
    assert res.method == "multilevel"
    assert _close(evaluate_partition(p, res.assignment).bottleneck, res.cost)
    assert _close(jp.decode(p, res.priorities).cost, res.cost, rtol=1e-5)
    assert _close(slice_order(p, res.partition.order).cost, res.cost)
    assert res.cost <= res.info["first_cost"]
    assert seen and seen[0].elapsed < 4
    assert res.wall_time < 4 * 1.5 + 2


def test_multilevel_honours_cancel():
    import threading

    from jaxplace.search.stop import StopRule

    p = jp.Problem(regal(4, n=1500), k=8)
    cancel = threading.Event()
    timer = threading.Timer(1.0, cancel.set)
    timer.start()
    t0 = time.perf_counter()
    try:
        res = jp.search(p, "multilevel", stop=StopRule(time_limit=120, cancel=cancel),
                        coarsest=200, coarse_method="none")
    finally:
        timer.cancel()
    assert time.perf_counter() - t0 < 30  # far below the 120 s limit
    assert res.interrupted
    assert _close(evaluate_partition(p, res.assignment).bottleneck, res.cost)


def test_colocated_multilevel_keeps_classes():
    g = _colocated(7, n=200)
    p = jp.Problem(g, k=4)
    res = jp.search(p, "multilevel", time_limit=2, coarsest=30, coarse_method="none")
    evaluate_partition(p, res.assignment)  # raises if a class is split
    assert _close(evaluate_partition(p, res.assignment).bottleneck, res.cost)


def test_memory_check_refuses_before_work():
    p = jp.Problem(regal(0, n=50), k=4)
    assert check_memory(p, available=2**40) > 0
    with pytest.raises(JaxplaceError, match=r"need about [0-9.]+ GiB.*has 0\.0 GiB"):
        check_memory(p, available=1000)
