"""Same problems + same seed + no time limit => bit-identical results (issue 51):
whatever the machine's load, the number of worker threads and which other problems
share a `search_many` call; the MIP polish is bounded by a node count, not seconds
(the Ray executor's case is `test_search_many.test_ray_executor_matches_local`)."""

import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest
from strategies import small_graph

import jaxplace as jp
from jaxplace.generators import regal
from jaxplace.objectives.throughput.polish import mip_polish
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.search.many import bucket_summary, search_many


@contextmanager
def cpu_load(procs: int = 2):
    """Busy-loop subprocesses on every core while the block runs."""
    ps = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(procs)]
    try:
        yield
    finally:
        for p in ps:
            p.kill()
            p.wait()


def assert_same(a, b) -> None:
    assert a.cost == b.cost
    assert np.array_equal(a.priorities, b.priorities)
    assert np.array_equal(a.partition.assignment, b.partition.assignment)
    assert a.evaluations == b.evaluations
    assert a.interrupted == b.interrupted
    assert a.info.get("polish", {}).get("nodes") == b.info.get("polish", {}).get("nodes")


def polish_problem() -> jp.Problem:
    return jp.Problem(regal(5, n=30), 2)


def test_polish_is_bounded_by_nodes_and_the_same_under_load():
    p = polish_problem()
    start = decode_reference(p, np.random.default_rng(0).random(p.n)).assignment
    quiet, loaded = {}, {}
    a = mip_polish(p, start, report=quiet)
    with cpu_load():
        b = mip_polish(p, start, report=loaded)
    assert a is not None, "the polish improves a random partition of this graph"
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert quiet["nodes"] == loaded["nodes"] and quiet["status"] == loaded["status"]
    assert "stopped" not in quiet
    # a wall-clock limit (only ever the user's) that cuts it short says so
    cut = {}
    mip_polish(jp.Problem(regal(3, n=150), 4), decode_reference(
        jp.Problem(regal(3, n=150), 4), np.random.default_rng(0).random(150)).assignment,
        time_limit=1e-3, report=cut)
    assert cut["stopped"] == "time limit"


@pytest.fixture(scope="module")
def batch():
    """Problems the polish applies to (k <= 4), in two size classes."""
    return [polish_problem(), jp.Problem(small_graph(5, 30), 2),
            jp.Problem(small_graph(6, 24), 4)]


KW = dict(exact=False, budget=1200, seed=3)


def test_search_many_same_for_workers_load_and_batch_mates(batch):
    base = search_many(batch, workers=1, **KW)
    assert any("polish" in r.info for r in base), "the polish ran"
    two = search_many(batch, workers=2, **KW)
    with cpu_load():
        loaded = search_many(batch, workers=2, **KW)
    for a, b, c in zip(base, two, loaded, strict=True):
        assert_same(a, b)
        assert_same(a, c)
    # the first problem alone in its bucket, and with another batch mate (same
    # index, so the same seed + 0; no new size class, so no new compile)
    assert [len(b.members) for b in bucket_summary(batch)] == [2, 1]
    alone = search_many(batch[:1], **KW)
    other = search_many([batch[0], batch[2]], **KW)
    assert_same(base[0], alone[0])
    assert_same(base[0], other[0])


def test_default_search_same_under_load():
    p = jp.Problem(small_graph(9, 20), 2)
    kw = dict(seed=1, budget=600, progress=False, search_only=True)  # no exact step
    a = jp.search(p, **kw)
    assert "polish" in a.info and a.evaluations > 1
    with cpu_load():
        b = jp.search(p, **kw)
    assert_same(a, b)


def test_multilevel_same_under_load_and_a_time_limit_says_it_cut():
    """The multilevel search (graphs of >= 2,000 ops under the default method) stops
    on counts without a time limit: the same answer under load; the user's time
    limit may cut it short, and then the result says so."""
    p = jp.Problem(regal(4, n=400), 8)
    kw = dict(seed=2, progress=False, coarsest=60, coarse_evals=300, max_cycles=2)
    a = jp.search(p, "multilevel", **kw)
    assert not a.interrupted and "stopped" not in a.info
    assert a.info["coarse"]["evaluations"] > 0 and a.info["cycles"] >= 2
    with cpu_load():
        b = jp.search(p, "multilevel", **kw)
    assert_same(a, b)
    def counts(r):  # every phase's moves, evaluations and cost (not its seconds)
        return [{k: v for k, v in row.items() if k != "seconds"}
                for row in r.info["per_level"]]

    assert counts(a) == counts(b)
    cut = jp.search(p, "multilevel", time_limit=1, **kw)
    assert cut.interrupted and cut.info["stopped"] == "time limit"


def test_search_many_result_alone_equals_in_a_batch_that_forces_a_merge():
    """More size classes than `max_programs` merge a problem into a wider padded
    shape; its random draws (`run.uniform_start`, BRKGA's) and its local moves'
    priority steps do not depend on the width, and a merge of classes with one
    window keeps it, so its result is the same."""
    a, b = jp.Problem(small_graph(5, 30), 2), jp.Problem(small_graph(7, 40), 2)
    own = bucket_summary([a, b])
    merged = bucket_summary([a, b], max_programs=1)
    assert len(own) == 2 and len(merged) == 1
    assert merged[0].spec.N > own[0].spec.N and merged[0].window == own[0].window is None
    kw = dict(exact=False, budget=800, seed=3, polish=False)
    alone = search_many([a], **kw)[0]
    together = search_many([a, b], max_programs=1, **kw)[0]
    assert together.info["bucket"]["N"] > alone.info["bucket"]["N"]
    assert_same(alone, together)
