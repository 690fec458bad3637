"""The chain planner (`jaxplace.pipeline.chain`): splits only at the given cut
positions, optimal against brute force over every choice of stage starts, its bound
valid, and the coarse graph's stage costs equal the op graph's (float64 reference)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.pipeline import plan_chain, segments_graph, split_from_starts


def _graph(seed: int, n: int = 9) -> jp.CompGraph:
    rng = np.random.default_rng(seed)
    tensors = [(i, float(rng.uniform(0, 3)), [i + 1]) for i in range(n - 1)]
    for _ in range(4):  # skip connections forward in program order
        a = int(rng.integers(0, n - 2))
        tensors.append((a, float(rng.uniform(0, 3)),
                        sorted({int(rng.integers(a + 1, n)) for _ in range(2)})))
    return jp.CompGraph(rng.uniform(1, 10, n), (), rng.uniform(0, 5, n), tensors=tensors)


def _brute(graph: jp.CompGraph, cuts, k: int) -> float:
    best = np.inf
    inner = sorted(set(cuts) - {0})
    for m in range(0, k):
        for chosen in itertools.combinations(inner, m):
            starts = [0, *chosen]
            a = np.searchsorted(np.asarray(starts), np.arange(graph.num_nodes), "right") - 1
            cost = evaluate_partition(jp.Problem(graph, len(starts)), a).bottleneck
            best = min(best, cost)
    return best


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [2, 3])
def test_plan_chain_is_optimal_at_the_cuts(seed, k):
    graph = _graph(seed)
    cuts = [0, 2, 3, 5, 8] if seed % 2 else list(range(graph.num_nodes))
    split = plan_chain(graph, cuts, k)
    assert set(split.starts) <= set(cuts)
    assert split.bottleneck == pytest.approx(_brute(graph, cuts, k), rel=1e-9)
    assert split.lower_bound <= split.bottleneck * (1 + 1e-9)
    assert split.proved_optimal
    # stages are runs in program order, numbered by position
    assert np.all(np.diff(split.assignment) >= 0)


def test_segment_costs_equal_op_graph_costs():
    graph = _graph(7, n=12)
    cuts = [0, 3, 4, 9]
    coarse = segments_graph(graph, cuts)
    seg_stage = np.array([0, 0, 1, 1])
    c = evaluate_partition(jp.Problem(coarse, 2), seg_stage)
    s = split_from_starts(graph, [0, 4])
    np.testing.assert_allclose(c.total, s.stage_times, rtol=1e-12)
    np.testing.assert_allclose(c.param, s.param_bytes, rtol=1e-12)


def test_cut_outside_the_program_is_refused():
    with pytest.raises(jp.JaxplaceError, match="cut positions"):
        segments_graph(_graph(0), [0, 99])
