"""The workloads benchmark (experiments/bench/workloads.py, outside the wheel) and the
two smallest NeurIPS 2020 workloads reaching their published optima."""

import glob
import json

import numpy as np
import pytest
from conftest import NEURIPS, NEURIPS_SKIP
from lab import lab_bench, run_lab_bench

import jaxplace as jp

published_optimum = lab_bench("workloads").published_optimum


@pytest.mark.skipif(not NEURIPS.exists(), reason=NEURIPS_SKIP)
@pytest.mark.parametrize("name", ["bert24_inference", "gnmt_inference"])
def test_default_search_reaches_published_optimum(name):
    path = glob.glob(str(NEURIPS / "throughput" / "LayerGraphs" / f"{name}.json"))[0]
    problem = jp.load_problem(path)  # k, the CPU, capacity and colours from the file
    assert (problem.k, problem.cpus) == (6, 1)
    result = jp.search(problem, seed=0, progress=False)
    cost = jp.evaluate_partition(problem, result.partition.assignment)
    assert np.isclose(cost.bottleneck, result.cost, rtol=1e-9)
    # Published values are rounded to 2 decimals: allow half a unit of the last place.
    assert cost.bottleneck <= published_optimum(path) + 0.005
    assert cost.bottleneck >= jp.simple_lower_bound(problem)


def test_bench_workloads_exit_1_when_target_missed(tmp_path, monkeypatch, capsys):
    import argparse
    import types

    import jaxplace as jp

    workloads = lab_bench("workloads")

    folder = tmp_path / "LayerGraphs"
    folder.mkdir()
    (folder / "bert24_inference.json").write_text(json.dumps({"maxFPGAs": 2, "nodes": [
        {"id": 1, "fpgaLatency": 1.0}, {"id": 2, "fpgaLatency": 2.0}],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 1.0}]}))
    args = argparse.Namespace(folder=str(tmp_path), time_limit=1.0, method="default",
                              seed=0, only=None, quiet=True)
    for cost, code in ((17.79, 0), (17.79 * 1.01, 1)):
        monkeypatch.setattr(jp, "search", lambda *a, _c=cost, **k: types.SimpleNamespace(
            cost=_c))
        assert workloads.run(args) == code
        assert ("MISSED" in capsys.readouterr().out) == (code == 1)


def test_time_limit_must_be_positive(capsys):
    assert run_lab_bench("workloads", ["--time-limit", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "must be a positive number of seconds" in err, err
