"""Dense graphs in the multilevel search: the per-block consumer counts of `BlockState`
against `evaluate_partition` (float64) move by move, on dense graphs and graphs whose
nodes produce several tensors; the quotient of a dense graph keeps block costs."""

from __future__ import annotations

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.multilevel.coarsen import coarsen
from jaxplace.multilevel.project import to_nodes
from jaxplace.multilevel.refine import BlockState
from jaxplace.multilevel.slicing import slice_units
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import kahn


def dense_graph(seed: int, n: int = 60, p: float = 0.3, tensors: bool = False):
    """A random DAG with edge probability `p` (random orientation order); `tensors`:
    each node's consumers split over two overlapping tensors."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(n)
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.random(len(iu)) < p
    und = np.stack([iu[keep], ju[keep]], axis=1)
    edges = np.where((pos[und[:, 0]] < pos[und[:, 1]])[:, None], und, und[:, ::-1])
    work = rng.uniform(1.0, 10.0, n)
    param = rng.uniform(0.0, 3.0, n)
    if not tensors:
        return jp.CompGraph(work, edges, param, rng.uniform(0.5, 5.0, n))
    out = []
    for u in range(n):
        cons = sorted(int(v) for v in edges[edges[:, 0] == u, 1])
        if cons:
            cut = int(rng.integers(0, len(cons) + 1))
            for part in (cons[:cut], cons[max(0, cut - 1):]):
                if part:
                    out.append((u, float(rng.uniform(0.5, 5.0)), part))
    return jp.CompGraph(work, edges, param, tensors=out)


def _moves_match(problem, seed: int, moves: int = 150) -> None:
    rng = np.random.default_rng(seed)
    g = problem.graph
    x = rng.random(problem.n)
    a = slice_units(problem, jp.decode(problem, x, precision="reference").order).assignment
    state = BlockState(problem, a)
    done = 0
    for _ in range(moves * 4):
        b = int(rng.integers(len(state.cost)))
        cand = state.moves_of(b)
        if not cand:
            continue
        v, to = cand[int(rng.integers(len(cand)))]
        ca, ct = state.score(v, to)
        A = int(state.a[v])
        state.apply(v, to)
        ref = evaluate_partition(problem, state.a).total
        tol = 1e-9 * float(ref.max())  # incremental sums: float64 rounding only
        np.testing.assert_allclose([ca, ct], [ref[A], ref[to]], rtol=1e-9, atol=tol)
        np.testing.assert_allclose(state.cost, ref, rtol=1e-9, atol=tol)
        done += 1
        if done == moves:
            break
    assert done > 10, done
    assert g.num_nodes == problem.n


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tensors", [False, True])
def test_block_state_moves_equal_the_reference_on_dense_graphs(seed, tensors):
    g = dense_graph(seed, tensors=tensors)
    total = float(g.size_param.sum())
    for problem in (jp.Problem(g, 5, bandwidth=0.7),
                    jp.Problem(g, 4, memory=total / 8)):
        _moves_match(problem, seed)


@pytest.mark.parametrize("seed", range(3))
def test_levels_of_a_dense_graph_keep_block_costs(seed):
    """Every level of a dense graph (the quotient's tensors deduplicated per consumer
    cluster) costs a partition exactly as its projection on the nodes costs."""
    g = dense_graph(seed, n=80, p=0.25, tensors=seed == 1)
    p = jp.Problem(g, 6, memory=float(g.size_param.sum()) / 10)
    levels = coarsen(p, coarsest=10)
    assert len(levels) > 1
    rng = np.random.default_rng(seed)
    for lv in levels:
        part = slice_units(lv.problem, kahn(lv.problem.graph, rng.random(lv.size)))
        coarse = evaluate_partition(lv.problem, part.assignment).total
        fine = evaluate_partition(p, to_nodes(lv, part.assignment)).total
        np.testing.assert_allclose(np.sort(fine), np.sort(coarse), rtol=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dense_events", [0, 16])
def test_slicing_with_event_arrays_matches_the_reference(seed, dense_events, monkeypatch):
    """The DP's columns with many events (added through one difference array) slice
    an order to the optimum of the float64 reference (`slice_order`), with every
    column on that path (0) and with the default threshold."""
    from jaxplace.multilevel import slicing
    from jaxplace.objectives.throughput.reference import slice_order

    monkeypatch.setattr(slicing, "DENSE_EVENTS", dense_events)
    g = dense_graph(seed, n=50, p=0.35, tensors=seed % 2 == 1)
    total = float(g.size_param.sum())
    rng = np.random.default_rng(seed)
    for problem in (jp.Problem(g, 4, bandwidth=0.5), jp.Problem(g, 6, memory=total / 9),
                    jp.Problem(g, 3, capacity=total / 2)):
        order = kahn(g, rng.random(problem.n))
        fast, ref = slice_units(problem, order), slice_order(problem, order)
        assert fast.cost == pytest.approx(ref.cost, rel=1e-9)
        assert evaluate_partition(problem, fast.assignment).bottleneck == pytest.approx(
            fast.cost, rel=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_unique_helpers_equal_numpys(seed):
    from jaxplace.units import sorted_unique, unique_pairs

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 3000))
    lo = int(rng.integers(-50, 50))
    a, b = rng.integers(lo, lo + 40, n), rng.integers(-7, 90, n)
    np.testing.assert_array_equal(sorted_unique(a), np.unique(a))
    want = np.unique(np.stack([a, b], 1), axis=0) if n else np.zeros((0, 2), np.int64)
    np.testing.assert_array_equal(unique_pairs(a, b), want)
    big = np.array([0, 2 ** 40, 2 ** 40]), np.array([2 ** 40, 0, 0])  # no key fits
    np.testing.assert_array_equal(unique_pairs(*big),
                                  np.unique(np.stack(big, 1), axis=0))


def test_multilevel_skips_the_flat_coarse_search_on_a_dense_coarsest_level():
    """A dense graph past the multilevel threshold: no flat coarse search (nothing
    compiles), the refinement scores moves, the answer costs what it says."""
    from jaxplace.multilevel import search as ml

    g = dense_graph(3, n=500, p=0.3)
    p = jp.Problem(g, 8)
    r = jp.search(p, "multilevel", seed=0, progress=False, coarsest=300)
    assert r.info["coarse"]["skipped"] == "dense coarsest level"
    assert r.info["coarse"]["evaluations"] == 0 and r.evaluations > 100
    assert r.cost == pytest.approx(evaluate_partition(p, r.partition.assignment).bottleneck,
                                   rel=1e-12)
    assert ml.DENSE_COARSE_DEGREE < 100


@pytest.mark.heavy
def test_a_sparse_reading_of_the_same_graph_runs_the_coarse_search(monkeypatch):
    """The other side of the threshold (compiles the coarse BRKGA: ~40 s on 2 cores)."""
    from jaxplace.multilevel import search as ml

    monkeypatch.setattr(ml, "DENSE_COARSE_DEGREE", 10 ** 6)  # every level counts sparse
    p = jp.Problem(dense_graph(3, n=500, p=0.3), 8)
    r = jp.search(p, "multilevel", seed=0, progress=False, coarsest=300, coarse_evals=200)
    assert "skipped" not in r.info["coarse"] and r.info["coarse"]["evaluations"] > 0
