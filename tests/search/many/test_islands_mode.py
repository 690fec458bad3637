"""search_many(mode="islands") and search(problem, "islands") on the CPU at small sizes:
the same answers as island_search, valid partitions confirmed by the float64
reference, determinism, stops (budget, time limit, cancel, Ctrl-C), 4 host devices
equal to 1."""

from __future__ import annotations

import textwrap
import threading

import numpy as np
import pytest
from brute import is_valid
from host_devices import run_on_host_devices
from strategies import small_graph

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import decode_reference, evaluate_reference
from jaxplace.search._islands import IslandGroup, IslandSettings, island_search
from jaxplace.search.many import prepare, search_many
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.many.islands_mode import auto_mode, generations_of
from jaxplace.search.result import Result

#: Small islands: 2 x 16 candidates per generation, migration every 3.
OPTS = dict(islands=2, population=16, migrate_every=3, migrants=2)
SETTINGS = IslandSettings(**OPTS)
BUDGET = 32 * 9  # 8 generations after the first populations


def problems() -> list:
    """Small graphs (one padded shape of N = 24: a short compile)."""
    return [jp.Problem(small_graph(s, n), k) for s, n, k in
            ((0, 14, 2), (1, 18, 3), (2, 12, 5), (3, 20, 4))]


def run(probs, **kw):
    """One bucket (one compiled program for every test that runs these problems)."""
    kw = {"mode": "islands", "budget": BUDGET, "exact": False, "polish": False,
          "seed": 5, "max_programs": 1, **OPTS, **kw}
    return search_many(probs, **kw)


def check_exact(problem, r) -> None:
    """A valid partition whose cost the float64 reference confirms."""
    a = np.asarray(r.partition.assignment)
    assert is_valid(problem, a)
    assert r.cost == pytest.approx(evaluate_partition(problem, a).bottleneck, rel=1e-12)
    assert r.cost >= r.lower_bound * (1 - 1e-9)


@pytest.fixture(scope="module")
def islands_run():
    probs = problems()
    return probs, run(probs)


def test_results_are_valid_and_say_their_mode(islands_run):
    probs, rs = islands_run
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert isinstance(r, Result) and r.method == "many" and not r.interrupted
        assert r.info["mode"] == "islands" and r.info["islands"] == 2
        assert r.info["population"] == 16 and r.evaluations == r.info["evaluations"]
        assert r.evaluations <= BUDGET and len(r.history) == r.info["generations"] + 1
        assert np.all(np.diff(r.history.best) <= 0)


def test_equals_island_search_directly(islands_run):
    """search_many = island_search with the bucket's shape and window, the call's seed
    for every problem (island_search offsets it by the place in its own list: one
    problem per call), the heuristic starts and the lower bounds as targets."""
    probs, rs = islands_run
    prepared = [prepare(p, i, coupled=False) for i, p in enumerate(probs)]
    (b,) = plan_buckets([m.cls for m in prepared], 1)
    s = IslandSettings(**OPTS, window=b.window)
    direct = [island_search([m.problem], generations=generations_of(BUDGET, s), seed=5,
                            settings=s, spec=b.spec, seeds=[m.x_seed],
                            targets=[m.lower_bound * (1 + 1e-6)])[0] for m in prepared]
    for m, r, ir in zip(prepared, rs, direct, strict=True):
        assert r.evaluations == ir.evaluations and r.info["generations"] == ir.generations
        np.testing.assert_array_equal(r.history.best, ir.history)
        if r.info.get("start") != "heuristic":
            np.testing.assert_array_equal(r.priorities, ir.x)
            assert r.cost == pytest.approx(decode_reference(m.problem, ir.x).cost,
                                           rel=1e-12)


def test_same_seed_same_results_and_no_worse_than_baselines(islands_run):
    probs, rs = islands_run
    again = run(probs)
    rng = np.random.default_rng(5)
    ratios = []
    for p, a, b in zip(probs, rs, again, strict=True):
        assert a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
        # trivial baselines: the DFS order sliced once (each problem), and the best of
        # as many uniform priority vectors as the islands scored (float64 reference;
        # on graphs this small it is a strong baseline: per problem either may win, so
        # the suite's geometric mean, within 1%)
        assert a.cost <= jp.search(p, "dfs", progress=False).cost * (1 + 1e-12)
        X = rng.random((a.evaluations, p.n), dtype=np.float32)
        ratios.append(a.cost / evaluate_reference(p, X).min())
    assert np.exp(np.mean(np.log(ratios))) <= 1.01, ratios


def test_cancel_and_ctrl_c_keep_the_best(monkeypatch):
    probs = problems()  # one bucket, one group: every problem sees the interrupt
    cancel = threading.Event()
    calls = []
    advance = IslandGroup.advance

    def counted(self):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        advance(self)

    monkeypatch.setattr(IslandGroup, "advance", counted)
    rs = run(probs, budget=32 * 40, cancel=cancel)
    assert cancel.is_set()
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert r.interrupted and r.info["generations"] <= 2  # the first call's best
        assert "start" in r.info or r.evaluations == 32 * (r.info["generations"] + 1)
    monkeypatch.setattr(IslandGroup, "advance", advance)
    cancel = threading.Event()
    cancel.set()
    for p, r in zip(probs, run(probs, cancel=cancel), strict=True):
        check_exact(p, r)
        assert r.interrupted and r.info.get("start") == "heuristic"


def test_time_limit_stops_after_the_call_that_crosses_it(islands_run):
    probs = problems()  # the fixture's compiled program
    rs = run(probs, budget=10**9, time_limit=1.0)
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert r.interrupted and 32 * 3 <= r.evaluations < 10**9


def test_search_method_islands():
    p = problems()[3]
    kw = dict(budget=BUDGET, seed=3, population_size=16, islands=2, migrate_every=3,
              progress=False)
    a, b = jp.search(p, "islands", **kw), jp.search(p, "islands", **kw)
    check_exact(p, a)
    assert a.method == "islands" and a.info["mode"] == "islands"
    assert not a.interrupted and a.evaluations <= BUDGET
    assert a.info["islands"] == 2 and a.info["population"] == 16
    assert a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
    with pytest.raises(JaxplaceError, match="unknown option"):
        jp.search(p, "islands", budget=BUDGET, brkga_share=0.5, progress=False)


def test_mode_choice_and_bad_input():
    assert auto_mode("gpu") == "islands" and auto_mode("cpu") == "default"
    from jaxplace.search.many.api import _settings

    assert _settings(None, None, None, 0, None, {}).mode == auto_mode()
    probs = problems()[:1]
    with pytest.raises(JaxplaceError, match="mode"):
        search_many(probs, mode="gpu")
    with pytest.raises(JaxplaceError, match="executor"):
        search_many(probs, mode="islands", executor="ray")
    with pytest.raises(JaxplaceError, match="brkga_share"):
        search_many(probs, mode="islands", brkga_share=0.5)
    with pytest.raises(JaxplaceError, match="migrants"):
        search_many(probs, mode="islands", population=8, migrants=5)


SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [TESTS, os.path.join(TESTS, "search", "many")]
    import jax, numpy as np
    from test_islands_mode import problems, run
    assert len(jax.devices()) == 4
    probs = problems() + problems()[:1]  # 5 problems: padded to 8 over 4 devices
    one = run(probs, devices=jax.devices()[:1], max_programs=1)
    four = run(probs, max_programs=1)
    for a, b in zip(one, four, strict=True):
        assert a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
        assert np.array_equal(a.history.best, b.history.best)
    print("OK")
""")


def test_four_host_devices_equal_one_through_search_many():
    run_on_host_devices(SCRIPT)


@pytest.mark.heavy  # a regal graph's compile, the exact step and the polish
def test_bench_gpu_islands_part():
    """`jaxplace bench gpu`'s islands part at its tiny size (in this process)."""
    from jaxplace.bench.gpu import SIZES, islands_row, markdown

    rec = islands_row(1, 0, SIZES["tiny"]["islands"])
    assert rec["repeatable"] and np.isfinite(rec["costs"][0]), rec
    assert 0 < rec["evaluations"] <= rec["budget"] + 1  # + 1: a polished result
    md = markdown(dict(size="tiny", machine=dict(date="d", device="cpu", platform="cpu",
                                                 devices=1, jax="0", host="h", cpus=2,
                                                 load=[0.0, 0, 0]), islands=rec))
    assert 'mode="islands"' in md and "bit for bit: True" in md


def test_polishes_side_by_side_equal_one_at_a_time(monkeypatch):
    """The members' MIP polishes run on a thread pool; node limits make the answers
    the pool's size does not change (os.cpu_count 1: one after another)."""
    from jaxplace.search.many import islands_mode

    probs = problems()
    side = run(probs, polish=True)
    assert any("polish" in r.info for r in side)
    monkeypatch.setattr(islands_mode.os, "cpu_count", lambda: 1)
    serial = run(probs, polish=True)
    for a, b in zip(side, serial, strict=True):
        assert a.cost == b.cost
        assert np.array_equal(a.partition.assignment, b.partition.assignment)
        assert a.info.get("polish", {}).get("decoded") == b.info.get("polish", {}).get(
            "decoded")
