"""Problem fields and search arguments refused in one line naming the field."""

from __future__ import annotations

import numpy as np
import pytest

import jaxplace as jp


@pytest.mark.parametrize("k", [float("nan"), float("inf"), 2.5, "2", None])
def test_problem_refuses_a_bad_k_in_one_line(k):
    with pytest.raises(jp.JaxplaceError) as exc:
        jp.Problem(jp.CompGraph([1.0, 2.0]), k)
    assert exc.value.field == "k" and "\n" not in str(exc.value)


def test_problem_takes_numpy_integers():
    p = jp.Problem(jp.CompGraph([1.0, 2.0]), np.int64(2), cpus=np.int32(0))
    assert p.k == 2 and type(p.k) is int and p.cpus == 0


@pytest.mark.parametrize("cpus", [float("nan"), -1, 0.5])
def test_problem_refuses_bad_cpus_in_one_line(cpus):
    g = jp.CompGraph([1.0, 2.0], node_attrs={"cpu_latency": np.ones(2)})
    with pytest.raises(jp.JaxplaceError) as exc:
        jp.Problem(g, 2, cpus=cpus)
    assert exc.value.field == "cpus" and "\n" not in str(exc.value)


def test_cpu_only_op_without_a_cpu_block_is_refused_up_front():
    g = jp.CompGraph([1.0, 2.0, 3.0], [(0, 1), (1, 2)], node_attrs={
        "cpu_latency": np.ones(3), "supported_on_accel": np.array([True, False, True])})
    with pytest.raises(jp.JaxplaceError) as exc:
        jp.Problem(g, 2)
    assert exc.value.field == "cpus" and "supported_on_accel" in str(exc.value)
    assert "\n" not in str(exc.value)
    assert jp.Problem(g, 2, cpus=1).cpus == 1


@pytest.mark.parametrize("seeds", [np.zeros((2, 5)), np.zeros(5), [[1.0, 2.0], [3.0]],
                                   "abc", np.full((1, 3), np.nan)])
def test_search_refuses_bad_seeds_in_one_line(seeds):
    problem = jp.Problem(jp.CompGraph([1.0, 2.0, 3.0], [(0, 1), (1, 2)]), 2)
    with pytest.raises(jp.JaxplaceError) as exc:
        jp.search(problem, "random", seeds=seeds, budget=8)
    assert exc.value.field == "seeds" and "\n" not in str(exc.value)
