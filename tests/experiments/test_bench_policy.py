"""`python -m experiments.bench.policy` (the policy benchmark, outside the wheel): its
problem sets and its one-line answers to bad options."""

import numpy as np
import pytest
from lab import lab_bench, run_lab_bench


def test_bench_cpu_variant_keeps_the_plain_problems():
    held_out_problems = lab_bench("policy").held_out_problems

    plain = held_out_problems(6, 0, regal_fraction=1.0)
    cpu = held_out_problems(6, 0, regal_fraction=1.0, cpu_fraction=1.0)
    for a, b in zip(plain, cpu, strict=True):
        assert (a.n, a.k, a.cpus, b.cpus) == (b.n, b.k, 0, 1)
        np.testing.assert_array_equal(a.graph.edges, b.graph.edges)


@pytest.mark.parametrize("bad", ["0.3,0.1", "x", "0.5"])
def test_bench_orphans_bad_value_is_one_line(bad, capsys):
    assert run_lab_bench("policy", ["--count", "3", "--orphans", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--orphans" in err and "LO,HI" in err, err


@pytest.mark.parametrize("bad", ["300,50", "x", "50", "1,9"])
def test_bench_n_range_bad_value_is_one_line(bad, capsys):
    assert run_lab_bench("policy", ["--count", "3", "--n-range", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--n-range" in err and "LO,HI" in err, err


def test_bench_n_range_sets_the_graph_sizes():
    held_out_problems = lab_bench("policy").held_out_problems

    big = held_out_problems(4, 0, n_range=(400, 500), regal_fraction=1.0)
    assert all(400 <= p.n <= 500 for p in big), [p.n for p in big]
    small = held_out_problems(4, 0, regal_fraction=1.0)
    assert all(50 <= p.n <= 300 for p in small), [p.n for p in small]


@pytest.mark.parametrize("bad", ["x", "nan", "inf"])
def test_bench_dfs_anchor_bad_value_is_one_line(bad, capsys):
    assert run_lab_bench("policy", ["--count", "3", "--dfs-anchor", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--dfs-anchor" in err and "finite" in err, err


@pytest.mark.parametrize("only, msg", [("5", "no problem of the set has k"),
                                       ("x", "expected integers")])
def test_bench_only_k_bad_value_is_one_line(only, msg, capsys):
    assert run_lab_bench("policy", ["--count", "3", "--only-k", only]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--only-k" in err and msg in err, err
