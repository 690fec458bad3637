"""Certificates with CPU blocks (issue 15): the exact MIP with typed blocks against brute
force, its LP relaxation below the optimum, the method picked per input, and the CLI
on a shared workload."""

from __future__ import annotations

import math

import pytest
from brute import brute_force_optimum
from conftest import NEURIPS, NEURIPS_SKIP
from hypothesis import given, settings
from strategies import same_cost, tiny_cpu_block_problems, tiny_training_problems

import jaxplace as jp
from jaxplace.bounds.exact import exact_bound
from jaxplace.bounds.registry import CPU_BLOCK_METHODS, choose_methods
from jaxplace.cli.main import main

# HiGHS stops at a relative gap of 1e-6 and works in a scaled objective: its bound
# and incumbent are the brute-force optimum to that tolerance.
MIP_RTOL = 1e-6


def _mip_equals_brute_force(problem):
    opt = brute_force_optimum(problem)
    res, found, _ = exact_bound(problem, time_limit=30)
    if math.isinf(opt):
        assert res.status.startswith("Infeasible") or math.isinf(res.bound), res.status
        return
    assert res.status == "Optimal", res.status
    assert same_cost(res.bound, opt, rtol=MIP_RTOL), (res.bound, opt)
    cost = jp.evaluate_partition(problem, found).bottleneck  # valid, block ids k.. CPUs
    assert cost <= opt * (1 + MIP_RTOL) + 1e-9
    lp, _, _ = exact_bound(problem, relax=True, time_limit=30)
    assert lp.bound <= opt * (1 + MIP_RTOL) + 1e-9


@settings(max_examples=40, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_exact_mip_with_cpu_blocks_equals_brute_force(problem):
    _mip_equals_brute_force(problem)


@settings(max_examples=30, deadline=None)
@given(tiny_training_problems())
def test_exact_mip_on_training_graphs_with_orphans(problem):
    _mip_equals_brute_force(problem)


@settings(max_examples=20, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=4))
def test_certify_with_cpu_blocks_is_valid_and_starts_from_the_partition(problem):
    """The ladder with the MIPs on a CPU problem: every bound valid; the exact MIP
    (warm-started from the sampled partition, CPU blocks included) proves the optimum."""
    opt = brute_force_optimum(problem)
    cert = jp.certify(problem, methods=("simple", "bottleneck", "exact-lp", "exact"),
                      samples=2, time_limit=30)
    for r in cert.results:
        assert r.bound <= opt * (1 + MIP_RTOL) + 1e-9, (r.name, r.bound, opt)
    if math.isfinite(opt):
        assert cert.optimal and same_cost(cert.upper_bound, opt, rtol=MIP_RTOL)
    if problem.cpus or not problem.supported.all():
        assert cert.result("bottleneck").status.startswith("skipped")


def test_choose_methods_by_ideal_count():
    chain = jp.Problem(jp.CompGraph([1.0] * 6, [(i, i + 1) for i in range(5)]), 2)
    methods, why = choose_methods(chain)
    assert methods == ("simple", "ideals") and why.startswith("7 ideals")
    wide = jp.Problem(jp.CompGraph([1.0] * 20), 2)  # 2^20 ideals
    methods, why = choose_methods(wide)
    assert methods == ("simple", "station", "cross", "station-check", "bottleneck", "bbr",
                       "exact")
    assert "MIP ladder" in why
    typed = wide.replace(graph=jp.CompGraph([1.0] * 20, node_attrs={
        "cpu_latency": [2.0] * 20}), cpus=1)
    methods, _ = choose_methods(typed)
    assert methods == ("simple", "bbr", "exact") and set(methods) <= set(CPU_BLOCK_METHODS)


BERT24 = NEURIPS / "throughput" / "LayerGraphs" / "bert24_inference.json"


def test_cli_certify_and_partition_pick_a_method(capsys):
    """`certify --methods ideals,exact` runs both (the MIP with CPU blocks too) and
    `partition --certify` proves a small workload optimal with the DP over ideals,
    run first by the planner, saying so."""
    if not BERT24.exists():
        pytest.skip(NEURIPS_SKIP)
    assert main(["certify", str(BERT24), "--methods", "ideals,exact", "--quiet",
                 "--time-limit", "60"]) == 0
    text = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln.strip()}
    assert "Optimal" in lines["ideals"] and "Optimal" in lines["exact"], text
    assert "(optimal)" in text and "lower bound 17.7899" in text
    assert main(["partition", str(BERT24), "--certify", "--quiet", "--budget", "200"]) == 0
    text = capsys.readouterr().out
    assert "found by ideals" in text, text
    assert "proven optimal by the planner's ideals (30 ideals)" in text, text
    last = text.strip().splitlines()[-1]
    assert "(certify: ideals)" in last and last.endswith("ratio 1.0000"), last
    # asked for the ladder by name, the certificate runs it
    assert main(["partition", str(BERT24), "--certify", "--quiet", "--budget", "200",
                 "--bounds", "simple,ideals"]) == 0
    text = capsys.readouterr().out
    assert "certify with simple,ideals (--bounds)" in text, text


def test_bench_workloads_proves_each_partition(tmp_path, monkeypatch, capsys):
    """`bench workloads` adds the proof columns: the picked method, its bound, proven,
    the proof time and their DP's time (search mocked: the proof starts from a sampled
    partition, which the DP over ideals improves to the optimum)."""
    import argparse
    import shutil
    import types

    from lab import lab_bench

    workloads = lab_bench("workloads")

    if not BERT24.exists():
        pytest.skip(NEURIPS_SKIP)
    (tmp_path / "LayerGraphs").mkdir()
    shutil.copy(BERT24, tmp_path / "LayerGraphs" / BERT24.name)
    monkeypatch.setattr(jp, "search", lambda *a, **k: types.SimpleNamespace(cost=17.7899))
    args = argparse.Namespace(folder=str(tmp_path), time_limit=1.0, method="default",
                              seed=0, only=None, quiet=True, proof=True, proof_time=60.0,
                              noncontiguous=None)
    assert workloads.run(args) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    assert "lower bound proven proof s their DP" in " ".join(head.split()), head
    cols = row.split()
    assert cols[0] == "LayerGraphs/bert24_inference" and cols[7:10] == ["ideals", "17.7899",
                                                                      "yes"], row
    assert row.rstrip().endswith("0 s"), row  # their DP time
