"""Compiling less (issue 51): the decoder's restructured DP gives the same costs to the
bit, and `jp.search` reports a first answer before any compiled program runs."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxplace as jp
from jaxplace.decoder import _lanes as lanes
from jaxplace.decoder.layout import device_graph
from jaxplace.decoder.scoring import score
from jaxplace.generators import regal_set

#: DP_SCANS: the old layout (growing windows in separate scans, then a sliding one)
#: and the restructured ones (one or two scans, the last clamped at 0).
LAYOUTS = [0, 1, 2]


def _problem(cpus: bool) -> jp.Problem:
    g = next(iter(regal_set(1, seed=3, n_range=(85, 95))))  # N = 96
    if not cpus:
        return jp.Problem(g, 4)
    rng = np.random.default_rng(0)
    attrs = {**g.node_attrs, "cpu_latency": rng.uniform(1.0, 20.0, g.num_nodes) * 5}
    g = jp.CompGraph(g.work, g.edges, g.size_param, None, tensors=_tensors(g),
                     node_attrs=attrs)
    return jp.Problem(g, 3, cpus=1)


def _tensors(g):
    return [(int(g.tensor_producer[t]), float(g.tensor_size[t]),
             [int(c) for c in g.consumers(t)]) for t in range(g.num_tensors)]


@pytest.mark.parametrize("cpus", [False, pytest.param(True, marks=pytest.mark.heavy)])
def test_restructured_dp_is_bit_identical(monkeypatch, cpus):
    problem = _problem(cpus)
    spec, g = device_graph(problem)
    rng = np.random.default_rng(1)
    X = np.zeros((12, spec.width), np.float32)
    X[:, :problem.n] = rng.random((12, problem.n))
    # windows: the full DP (growing windows), and one < N (growing, then sliding);
    # both long enough for two growing scans (24 positions a scan at least)
    for window in (None, 48):
        got = []
        for scans in LAYOUTS:
            monkeypatch.setattr(lanes, "DP_SCANS", scans)
            fn = jax.jit(lambda g, X, w=window: score(spec, g, X, window=w))  # retraced
            got.append(np.asarray(fn(g, X)))
        for other in got[1:]:
            np.testing.assert_array_equal(other, got[0])
        if window is None:
            want = jp.reference.evaluate_reference(problem, X[:, :problem.n])
            np.testing.assert_allclose(got[0], want, rtol=1e-5)


def test_first_answer_before_any_compiled_program(monkeypatch):
    from jaxplace.search import driver
    from jaxplace.search.baselines import seed_priorities
    from jaxplace.search.many import run as many_run

    problem = jp.Problem(next(iter(regal_set(1, seed=5))), 4)
    events = []
    real = driver.chunk_program

    def spy(*args):
        events.append("chunk")
        return real(*args)

    monkeypatch.setattr(driver, "chunk_program", spy)
    real_many = many_run.many_chunk  # the CPU path: search_many's one-problem bucket

    def spy_many(*args):
        events.append("chunk")
        return real_many(*args)

    monkeypatch.setattr(many_run, "many_chunk", spy_many)
    reports = []

    def observer(ev):
        events.append(ev.phase)
        reports.append(ev)

    res = jp.search(problem, budget=300, seed=0, observer=observer, progress=False,
                    polish=False)
    first = events.index("chunk")
    assert first >= 1 and events[0] == "dfs"
    best_heuristic = min(jp.reference.decode_reference(problem, x).cost
                         for x in seed_priorities(problem.graph))
    # the best first answer before compiling: the DFS cut or the best heuristic order
    assert min(r.best_cost for r in reports[:first]) == pytest.approx(
        min(best_heuristic, reports[0].best_cost), rel=1e-12)
    assert res.cost <= min(r.best_cost for r in reports[:first]) * (1 + 1e-9)

