"""The decoder implementation by platform (`decoder.evaluator.resolve_impl`): the fused
kernel on GPUs where it applies, lanes elsewhere and as the fallback, for
`jp.evaluate` / `Evaluator` and the island search's groups. No GPU here: the platform
is passed in or monkeypatched, and the fused kernel then runs in Pallas's interpret
mode (slow: tiny problems, few rows)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from random_problems import random_problem
from strategies import small_graph

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL, evaluate
from jaxplace.decoder import evaluator as evaluator_mod
from jaxplace.decoder.api import EVALUATORS
from jaxplace.decoder.evaluator import (
    AUTO_IMPL,
    Evaluator,
    fused_chunk_size,
    fused_spec_of,
    resolve_impl,
    score_chunk,
)
from jaxplace.decoder.fused import is_fused_spec
from jaxplace.decoder.layout import problem_spec
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.reference import evaluate_reference
from jaxplace.search._islands import IslandSettings, resolve_settings
from jaxplace.search.many import islands_mode, search_many
from jaxplace.search.many.islands_mode import (
    ACCELERATOR_ISLANDS,
    CPU_ISLANDS,
    island_settings,
)


def plain_problem(seed: int = 0, n: int = 12, k: int = 3) -> jp.Problem:
    return random_problem(np.random.default_rng(seed), n, p=0.3, k=k, multi=True,
                          params=True, memory=True)


def cpu_block_problem(n: int = 12, k: int = 3) -> jp.Problem:
    """A problem with one CPU block (which the fused kernel refuses)."""
    g = small_graph(7, n)
    g = jp.CompGraph(g.work, g.edges, g.size_param, g.size_out,
                     node_attrs={"cpu_latency": np.full(n, 3.0)})
    return jp.Problem(g, k, cpus=1)


def test_resolution_by_platform_and_problem():
    plain = problem_spec(plain_problem())
    cpus = problem_spec(cpu_block_problem())
    assert cpus.C and not plain.C
    assert resolve_impl(AUTO_IMPL, plain, platform="gpu") == "fused"
    assert resolve_impl(AUTO_IMPL, cpus, platform="gpu") == "lanes"  # the fallback
    assert resolve_impl(AUTO_IMPL, plain, platform="cpu") == "lanes"
    assert resolve_impl(AUTO_IMPL, plain, platform="tpu") == "lanes"
    # float64: the kernel was measured in float32 only
    assert resolve_impl(AUTO_IMPL, plain, platform="gpu", precision="float64") == "lanes"
    for impl in ("lanes", "simple", "fused"):  # a named implementation is kept
        assert resolve_impl(impl, plain, platform="gpu") == impl
        assert resolve_impl(impl, plain, platform="cpu") == impl

    def never():  # off the kernel's platforms the Spec is not even built
        raise AssertionError("spec computed")

    assert resolve_impl(AUTO_IMPL, never, platform="cpu") == "lanes"
    assert resolve_impl(AUTO_IMPL, lambda: plain, platform="gpu") == "fused"


def test_cpu_default_is_lanes_with_the_same_programs():
    """On the CPU the default evaluator is the lanes one: same Spec, same costs, and no
    program compiled for it that the explicit lanes evaluator did not compile."""
    p = plain_problem(1, n=14)
    X = np.random.default_rng(1).random((37, p.n), dtype=np.float32)
    lanes = Evaluator(p, impl="lanes", window=None)
    want = lanes(X)
    before = score_chunk._cache_size()
    ev = Evaluator(p, window=None)
    assert ev.impl == "lanes" and ev.spec == lanes.spec
    assert ev.batching == lanes.batching
    np.testing.assert_array_equal(ev(X), want)
    assert score_chunk._cache_size() == before
    EVALUATORS.clear()
    np.testing.assert_array_equal(evaluate(p, X, window=None), want)
    EVALUATORS.clear()


@pytest.fixture
def on_gpu(monkeypatch):
    """The decoder and the island mode believe they run on a GPU (the kernel itself
    still runs in interpret mode: `fused.on_gpu` asks JAX)."""
    monkeypatch.setattr(evaluator_mod, "default_platform", lambda devices=None: "gpu")
    monkeypatch.setattr(islands_mode, "default_platform", lambda devices=None: "gpu")
    EVALUATORS.clear()
    yield
    EVALUATORS.clear()


def test_gpu_default_is_fused_where_it_applies(on_gpu):
    p = plain_problem(2)
    X = np.random.default_rng(2).random((9, p.n), dtype=np.float32)
    want = evaluate_reference(p, X)
    ev = Evaluator(p)
    assert ev.impl == "fused" and is_fused_spec(ev.spec)
    assert ev.spec == fused_spec_of([p])
    assert ev.batching.chunk_size == fused_chunk_size(ev.spec) > 0
    np.testing.assert_allclose(ev(X), want, rtol=FLOAT32_RTOL)
    np.testing.assert_allclose(evaluate(p, X), want, rtol=FLOAT32_RTOL)
    # the other precisions and problems fall back to lanes
    assert Evaluator(p, precision="float64").impl == "lanes"
    q = cpu_block_problem()
    ev = Evaluator(q)
    assert ev.impl == "lanes" and ev.batching.chunk_size is None
    Xq = np.random.default_rng(3).random((5, q.n), dtype=np.float32)
    np.testing.assert_allclose(evaluate(q, Xq), evaluate_reference(q, Xq),
                               rtol=FLOAT32_RTOL)


def test_gpu_default_for_several_problems(on_gpu):
    """`evaluate_graphs` (one Evaluator over stacked graphs) on a GPU: the fused kernel
    vmapped over the graphs, chunked for all of them."""
    from jaxplace.decoder import evaluate_graphs

    probs = [plain_problem(4, n=9), plain_problem(5, n=12)]
    ev = Evaluator(probs, window=None)
    assert ev.impl == "fused" and ev.batching.chunk_size == fused_chunk_size(ev.spec, 2)
    X = np.random.default_rng(4).random((2, 5, 12), dtype=np.float32)
    got = evaluate_graphs(probs, X)
    for i, p in enumerate(probs):
        np.testing.assert_allclose(got[i], evaluate_reference(p, X[i, :, :p.n]),
                                   rtol=FLOAT32_RTOL)


def test_island_settings_by_platform():
    assert island_settings({}, "cpu") == CPU_ISLANDS and CPU_ISLANDS.impl == "lanes"
    assert island_settings({}, "gpu") == ACCELERATOR_ISLANDS
    assert ACCELERATOR_ISLANDS.impl == AUTO_IMPL
    assert island_settings({"impl": "lanes"}, "gpu").impl == "lanes"
    with pytest.raises(JaxplaceError, match="impl"):
        island_settings({"impl": "nope"}, "gpu")
    with pytest.raises(JaxplaceError, match="window"):
        IslandSettings(impl="fused", window=8).check()
    IslandSettings(impl=AUTO_IMPL, window=8).check()  # dropped if fused is picked
    plain, cpus = problem_spec(plain_problem()), problem_spec(cpu_block_problem())
    s = replace(ACCELERATOR_ISLANDS, window=16)
    got, spec = resolve_settings(s, plain, "gpu")
    assert got.impl == "fused" and got.window is None and is_fused_spec(spec)
    got, spec = resolve_settings(s, cpus, "gpu")
    assert got.impl == "lanes" and got.window == 16 and spec == cpus
    got, spec = resolve_settings(s, plain, "cpu")
    assert got.impl == "lanes" and got.window == 16 and spec == plain
    got, spec = resolve_settings(CPU_ISLANDS, plain, "gpu")  # a named one is kept
    assert got == CPU_ISLANDS and spec == plain


#: Tiny islands: 2 x 8 candidates, 2 generations after the first populations.
OPTS = dict(mode="islands", islands=2, population=8, migrate_every=2, migrants=1,
            budget=16 * 3, exact=False, polish=False, seed=3, max_programs=1)


def _search_problems():
    return [jp.Problem(small_graph(s, n), k) for s, n, k in ((0, 10, 2), (1, 12, 3))]


def test_island_groups_on_a_gpu_pick_fused_unless_a_problem_needs_lanes(on_gpu):
    probs = _search_problems()
    rs = search_many(probs, impl=AUTO_IMPL, **OPTS)
    for p, r in zip(probs, rs, strict=True):
        assert r.info["impl"] == "fused" and r.info["mode"] == "islands"
        assert r.cost == pytest.approx(evaluate_reference(p, r.priorities[None])[0],
                                       rel=1e-12) or r.info.get("start") == "heuristic"
    # one bucket holding a problem with a CPU block: the whole group runs lanes
    rs = search_many(probs + [cpu_block_problem()], impl=AUTO_IMPL, **OPTS)
    assert {r.info["impl"] for r in rs} == {"lanes"}


def test_island_auto_on_the_cpu_is_the_lanes_search():
    probs = _search_problems()
    auto = search_many(probs, impl=AUTO_IMPL, **OPTS)
    lanes = search_many(probs, impl="lanes", **OPTS)
    for a, b in zip(auto, lanes, strict=True):
        assert a.info["impl"] == b.info["impl"] == "lanes"
        assert a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
        np.testing.assert_array_equal(a.history.best, b.history.best)
