"""The two smallest NeurIPS 2020 workloads reach their published optima (issue 6)."""

import glob

import numpy as np
import pytest
from conftest import NEURIPS, NEURIPS_SKIP

import jaxplace as jp
from jaxplace.bench.workloads import published_optimum


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
