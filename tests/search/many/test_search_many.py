"""search_many: batched searches checked against the float64 reference, brute force
on tiny graphs, streaming, interrupts, bucketing, and the Ray executor."""

import math
import threading
import time

import numpy as np
import pytest
import strategies
from brute import brute_force_optimum, is_valid
from strategies import small_graph

import jaxplace as jp
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.search.many import bucket_summary, iter_search_many, search_many
from jaxplace.search.many.buckets import plan_buckets


def tiny_problem(seed: int) -> jp.Problem:
    return strategies.tiny_problem(seed, base=2000)


def mixed_problems() -> list:
    """Small graphs of several sizes and k (one with an overflow budget), then tiny ones."""
    out = [jp.Problem(small_graph(s, n), k) for s, n, k in
           ((0, 24, 2), (1, 30, 3), (2, 18, 5), (3, 40, 4))]
    out.append(jp.Problem(small_graph(4, 20), 3, memory=6.0, bandwidth=0.5))
    return out + [tiny_problem(s) for s in range(5)]


def check_exact(problem, r) -> None:
    """The reported cost is the float64 reference's cost of the reported partition."""
    a = np.asarray(r.partition.assignment)
    assert is_valid(problem, a)
    ref = evaluate_partition(problem, a).bottleneck
    assert r.cost == pytest.approx(ref, rel=1e-12, abs=1e-12)
    assert r.cost >= r.lower_bound * (1 - 1e-9)


@pytest.fixture(scope="module")
def mixed_run():
    probs = mixed_problems()
    seen = []
    rs = search_many(probs, exact=False, budget=1500, polish=False, max_programs=1,
                     on_result=lambda i, r: seen.append((i, r)))
    return probs, rs, seen


def test_costs_match_the_reference_and_tiny_ones_brute_force(mixed_run):
    probs, rs, _ = mixed_run
    assert len(rs) == len(probs)
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert r.method == "many" and not r.interrupted
        assert r.evaluations <= 1500
    for p, r in zip(probs[5:], rs[5:], strict=True):  # the tiny ones
        assert r.cost == pytest.approx(brute_force_optimum(p), rel=1e-6)


def test_results_stream_once_each_as_they_finish(mixed_run):
    probs, rs, seen = mixed_run
    assert sorted(i for i, _ in seen) == list(range(len(probs)))
    for i, r in seen:
        assert r is rs[i]
    walls = [r.wall_time for _, r in seen]
    assert walls == sorted(walls)


def test_one_bucket_pads_every_problem_to_one_shape():
    probs = mixed_problems()
    (b,) = bucket_summary(probs, max_programs=1)
    assert b.members == list(range(len(probs)))
    assert b.spec.K >= max(p.k for p in probs)
    assert len(bucket_summary(probs, max_programs=3)) <= 3


def test_plan_merges_down_to_max_programs_keeping_every_problem():
    from jaxplace.decoder.layout import Spec

    classes = [(Spec(N, N, 16, 16, K, False), None if N == 256 else N // 3, N - 5)
               for N in (64, 96, 128, 192, 256) for K in (4, 8, 16)] * 2
    for m in (1, 4, 8, 30):
        bs = plan_buckets(classes, m)
        assert len(bs) == min(m, 15)
        assert sorted(i for b in bs for i in b.members) == list(range(len(classes)))
        for b in bs:
            for i in b.members:
                s = classes[i][0]
                assert s.N <= b.spec.N and s.K <= b.spec.K
            if any(classes[i][1] is None for i in b.members):
                assert b.window is None
    with pytest.raises(jp.JaxplaceError, match="max_programs"):
        plan_buckets(classes, 0)


def test_results_do_not_depend_on_chunking(mixed_run):
    probs, rs, _ = mixed_run
    again = search_many(probs, exact=False, budget=1500, polish=False, max_programs=1, chunk=3)
    for x, y in zip(rs, again, strict=True):
        assert np.array_equal(x.priorities, y.priorities) and x.cost == y.cost
        assert x.evaluations == y.evaluations


@pytest.fixture(scope="module")
def two_bucket_runs():
    probs = mixed_problems()
    kw = dict(exact=False, budget=1500, polish=False, max_programs=2)
    return probs, search_many(probs, workers=1, **kw), search_many(probs, workers=2, **kw)


def test_buckets_on_two_threads_match_one(two_bucket_runs):
    probs, one, two = two_bucket_runs
    assert len(bucket_summary(probs, 2)) == 2
    for p, x, y in zip(probs, one, two, strict=True):
        check_exact(p, y)
        assert np.array_equal(x.priorities, y.priorities) and x.cost == y.cost
        assert x.evaluations == y.evaluations


def test_time_limit_compiles_first_and_every_bucket_searches():
    probs = mixed_problems()
    rs = search_many(probs, exact=False, budget=1500, polish=False, max_programs=2,
                     workers=2, time_limit=60.0)
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert r.evaluations > 0  # no bucket starved by the others' compiles


def interrupt_after(monkeypatch, chunks: int, action):
    """Make the bucket loop call `action()` instead of its chunk number `chunks`."""
    from jaxplace.search.many import run as many_run

    calls = {"n": 0}
    real = many_run.many_chunk

    def wrapped(*a):
        calls["n"] += 1
        if calls["n"] == chunks:
            action()
        return real(*a)

    monkeypatch.setattr(many_run, "many_chunk", wrapped)


LONG = dict(budget=30_000, polish=False, max_programs=1, patience=10**9,
            brkga_patience=10**9, group=100)  # every problem in one program call


def test_cancel_keeps_finished_results_and_unfinished_bests(monkeypatch):
    probs = mixed_problems()
    cancel = threading.Event()
    interrupt_after(monkeypatch, 3, cancel.set)  # the third chunk still runs
    out = dict(iter_search_many(probs, cancel=cancel, exact=False, **LONG))
    assert sorted(out) == list(range(len(probs)))
    assert any(r.interrupted for r in out.values())
    for i, r in out.items():
        check_exact(probs[i], r)
        assert 0 < r.evaluations <= 3 * 8 * 100
        if not r.interrupted:  # finished before the cancel: reached the bound
            assert r.cost <= r.lower_bound * (1 + 1e-5)


def test_cancel_one_problem_per_call_reports_unstarted_ones(monkeypatch):
    probs = mixed_problems()
    cancel = threading.Event()
    interrupt_after(monkeypatch, 4, cancel.set)  # compile, then 3 chunks of problem 0
    out = dict(iter_search_many(probs, cancel=cancel, exact=False, workers=1,
                                **(LONG | {"group": 1})))
    assert sorted(out) == list(range(len(probs)))
    started = [i for i, r in out.items() if r.evaluations > 0]
    assert started == [0] and out[0].interrupted  # equal runs go in input order
    for i, r in out.items():
        check_exact(probs[i], r)
        if i != 0:  # never started: the best heuristic order
            assert r.interrupted and r.info.get("start") == "heuristic"


def test_ctrl_c_keeps_every_best(monkeypatch):
    def ctrl_c():
        raise KeyboardInterrupt

    probs = mixed_problems()
    interrupt_after(monkeypatch, 3, ctrl_c)
    rs = search_many(probs, exact=False, **LONG)
    assert any(r.interrupted for r in rs)
    for p, r in zip(probs, rs, strict=True):
        check_exact(p, r)
        assert 0 < r.evaluations <= 2 * 8 * 100  # the best of two chunks


CACHE_PROBE = """
import jaxplace as jp
from jaxplace.compile_cache import count_compiles
from jaxplace.search.many import search_many
p = jp.Problem(jp.CompGraph([1.0, 2, 3, 4, 5, 6], [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                            [1.0] * 6, [1.0] * 6), 2)
with count_compiles() as c:
    (r,) = search_many([p], budget=400, exact=False, polish=False)
print(c["_many_chunk"], c.cache_hits["_many_chunk"], repr(r.cost))
"""


@pytest.mark.heavy  # two fresh processes, each importing JAX and compiling
def test_a_second_process_reads_the_program_from_the_persistent_cache(tmp_path):
    """Some jax versions silently reject CPU entries on reload: the second process
    must count a cache hit for the bucket program (and find the same answer)."""
    import subprocess
    import sys

    from jaxplace.compile_cache import plain_python_env

    env = plain_python_env()
    env["JAXPLACE_CACHE_DIR"] = str(tmp_path)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"  # a tiny program: keep it
    out = [subprocess.run([sys.executable, "-c", CACHE_PROBE], env=env, check=True,
                          capture_output=True, text=True).stdout.split()
           for _ in range(2)]
    assert out[0][:2] == ["1", "0"]  # compiled, nothing cached yet
    assert out[1][:2] == ["1", "1"]  # read back from the cache
    assert out[0][2] == out[1][2]


@pytest.mark.heavy  # its own compile and a 2 s MIP
def test_polish_at_small_k_stays_exact():
    p = jp.Problem(small_graph(7, 14), 2)
    (r,) = search_many([p], exact=False, budget=600, polish=True)
    check_exact(p, r)
    assert "polish" in r.info or r.cost <= r.lower_bound * (1 + 1e-9)


def test_bad_workers_names_the_field():
    with pytest.raises(jp.JaxplaceError, match="workers"):
        search_many(mixed_problems()[:1], workers=0)


def test_bad_input_names_the_field():
    p = jp.Problem(small_graph(0, 10), 2)
    with pytest.raises(jp.JaxplaceError, match=r"problems\[1\]"):
        search_many([p, "nope"])
    for bad in (None, p, 3):
        with pytest.raises(jp.JaxplaceError, match="problems: expected a list"):
            search_many(bad)
    with pytest.raises(jp.JaxplaceError, match="executor"):
        search_many([p], executor="dask")
    with pytest.raises(jp.JaxplaceError, match="method"):
        search_many([p], "random")
    with pytest.raises(jp.JaxplaceError, match="options"):
        search_many([p], frobnicate=1)
    assert search_many([]) == []


def test_ray_executor_matches_local():
    ray = pytest.importorskip("ray")
    probs = mixed_problems()
    assert len(probs) == 10
    kw = dict(budget=1500, max_programs=1)  # the MIP polish too (node-bounded)
    local = search_many(probs, exact=False, **kw)  # the module's fixture compiled it already
    assert any("polish" in r.info for r in local)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    arrived = []
    try:
        remote = search_many(probs, executor="ray", num_cpus=1, exact=False,
                             on_result=lambda i, r: arrived.append(time.perf_counter()),
                             **kw)
    finally:
        ray.shutdown()
    for p, a, b in zip(probs, local, remote, strict=True):
        check_exact(p, b)
        assert np.array_equal(a.priorities, b.priorities)
        assert a.cost == b.cost and a.evaluations == b.evaluations
    # one bucket, one problem per call: results stream per problem (10 searches of
    # 1,500 evaluations, ~30 ms each warm), not all at once when the task ends (a
    # list handed out in about a millisecond)
    assert len(arrived) == 10 and arrived[-1] - arrived[0] > 0.05


def test_partition_many_writes_a_result_per_problem_and_a_summary(tmp_path, mixed_run):
    import argparse
    import json

    from jaxplace.cli.partition_many import add_arguments as add_many_arguments
    from jaxplace.cli.partition_many import run as run_many
    from jaxplace.formats import load_problem, nodelink_data, write_json

    probs, rs, _ = mixed_run
    src = tmp_path / "graphs"
    src.mkdir()
    for i, q in enumerate(probs):  # each file carries its k and cost parameters
        attrs = {"k": q.k, "bandwidth": q.bandwidth}
        attrs |= {"memory": q.memory} if q.memory is not None else {}
        attrs |= {"capacity": q.capacity} if q.capacity is not None else {}
        write_json(src / f"p{i:02d}.json", nodelink_data(q.graph, **attrs))
    (src / "notes.txt").write_text("not a graph")
    p = argparse.ArgumentParser()
    add_many_arguments(p)
    out = tmp_path / "out"
    # the fixture's problems (the node-link round trip may renumber nodes)
    args = p.parse_args([str(src), "-o", str(out), "--budget", "1500", "--max-programs",
                         "1", "-q"])
    assert run_many(args) == 0
    lines = [json.loads(x) for x in (out / "summary.jsonl").read_text().splitlines()]
    assert sorted(rec["file"].rsplit("/", 1)[1] for rec in lines) == [
        f"p{i:02d}.json" for i in range(len(probs))]
    for rec in lines:
        i = int(rec["file"].rsplit("/p", 1)[1][:2])
        prob = load_problem(rec["file"])
        assert prob.k == probs[i].k
        a = np.asarray(json.loads(open(rec["output"]).read())["assignment"])
        assert rec["cost"] == pytest.approx(evaluate_partition(prob, a).bottleneck,
                                            rel=1e-9)
        assert rec["cost"] >= rec["lower_bound"] * (1 - 1e-9)
        assert not rec["interrupted"] and rec["output"].endswith(f"p{i:02d}.k{prob.k}.json")
        saved = json.loads(open(rec["output"]).read())
        assert saved["found_by"] == rec["found_by"]
        if "proved_by" in rec:  # the exact step's proof is the bound, as in `partition`
            assert rec["ratio"] == pytest.approx(1.0, rel=1e-6)
            assert saved["proved_by"] == rec["proved_by"] and saved["ratio"] == rec["ratio"]
    assert any("proved_by" in rec for rec in lines)  # the tiny graphs fit the DP
    (tmp_path / "empty").mkdir()
    with pytest.raises(jp.JaxplaceError, match="no graph files"):
        run_many(p.parse_args([str(tmp_path / "empty"), "-o", str(out)]))


def test_partition_many_sweeps_k_over_each_file(tmp_path):
    from jaxplace.cli.partition_many import graph_files, load_jobs, output_name
    from jaxplace.formats import nodelink_data, write_json

    for s in range(2):
        write_json(tmp_path / f"g{s}.json", nodelink_data(small_graph(20 + s, 12)))
    files = graph_files([str(tmp_path)])
    jobs = load_jobs(files, [2, 4, 8])
    assert [(f.name, q.k) for f, q in jobs] == [
        (f"g{s}.json", k) for s in range(2) for k in (2, 4, 8)]
    taken = set()
    assert output_name(files[0], 2, taken) == "g0.k2.json"
    assert output_name(files[0], 2, taken) == "g0-2.k2.json"
    with pytest.raises(jp.JaxplaceError, match="no such file"):
        graph_files([str(tmp_path / "missing.json")])


def test_problems_an_exact_method_fits_are_proven_first():
    """The planner's first step in a batch: graphs with few ideals get the DP's
    optimum and proof at once (found_by / proved_by "ideals"), equal to brute force."""
    rng = np.random.default_rng(3)
    probs = []
    for _ in range(3):
        n = 6
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
        g = jp.CompGraph(rng.integers(1, 9, n).astype(float), edges,
                         size_out=rng.integers(1, 5, n).astype(float))
        probs.append(jp.Problem(g, 2))
    for p, r in zip(probs, search_many(probs), strict=True):
        assert r.info["proved_by"] == "ideals" and r.info["found_by"] in ("ideals", "dfs")
        assert math.isclose(r.cost, brute_force_optimum(p), rel_tol=1e-9)
        assert math.isclose(r.cost, jp.evaluate_partition(p, r.partition).cost, rel_tol=1e-9)
