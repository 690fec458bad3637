"""The DP over ideals (jaxplace.exact): brute force on tiny graphs, the published optima
of the NeurIPS 2020 workloads, the ideal limit, and the `ideals` certificate method."""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute import brute_force_optimum
from conftest import NEURIPS, NEURIPS_SKIP
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    same_cost,
    tiny_cpu_block_problems,
    tiny_problems,
    tiny_training_problems,
)

import jaxplace as jp
from jaxplace.bounds.base import BoundContext
from jaxplace.exact import IdealsBound, build_atoms, count_ideals, solve_ideals
from jaxplace.exact.orphans import split_orphans


def _check(problem, res, expected):
    """res is optimal with cost `expected`, and its split costs that."""
    assert same_cost(res.cost, expected), (res.cost, expected)
    if math.isfinite(expected):
        assert res.status == "optimal"
        # rtol: the DP's piece costs are differences of float64 prefix sums
        cost = jp.evaluate_partition(problem, res.assignment).bottleneck
        assert cost == pytest.approx(expected, rel=1e-9, abs=1e-9)
    else:
        assert res.status == "infeasible" and res.assignment is None


@given(tiny_problems(max_nodes=6, max_k=3, multi_tensor=True))
def test_equals_brute_force_plain(problem):
    _check(problem, solve_ideals(problem, search=False), brute_force_optimum(problem))


@given(tiny_cpu_block_problems(max_nodes=5))
def test_equals_brute_force_cpus(problem):
    _check(problem, solve_ideals(problem, search=False), brute_force_optimum(problem))


@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_equals_brute_force_training(problem):
    _check(problem, solve_ideals(problem, search=False), brute_force_optimum(problem))


@given(tiny_training_problems())
def test_orphans_equal_brute_force(problem):
    """Training graphs with orphan backward units: the default (relaxation, then the
    full DP when it is not tight) and the full DP both equal brute force; the relaxation
    alone gives a valid lower bound and, when it says optimal, the optimum."""
    opt = brute_force_optimum(problem)
    _check(problem, solve_ideals(problem, search=False), opt)
    _check(problem, solve_ideals(problem, search=False, orphans="full"), opt)
    relaxed = solve_ideals(problem, search=False, orphans="relax")
    if relaxed.status == "gap":
        assert relaxed.lower_bound <= opt * (1 + 1e-9) + 1e-9 <= relaxed.cost * (1 + 2e-9) + 2e-9
        assert jp.evaluate_partition(problem, relaxed.assignment).bottleneck == \
            pytest.approx(relaxed.cost, rel=1e-9, abs=1e-9)  # sums of a few one-decimal terms
    else:
        _check(problem, relaxed, opt)


def test_orphans_are_left_out_of_the_ideals():
    """Two forward nodes in a chain, three orphans: 3 forward ideals (not 3 x 2^3), and
    the relaxation proves the optimum (orphans on the idle accelerator)."""
    attrs = {"color_class": np.array([0, 1, -1, -1, 5]),
             "is_backward": np.array([False, False, True, True, True])}
    g = jp.CompGraph([4.0, 4.0, 1.0, 1.0, 1.0], [(0, 1), (1, 2), (2, 3), (3, 4)],
                     size_out=[0.0, 0.5, 0.0, 0.0, 0.0], node_attrs=attrs)
    problem = jp.Problem(g, 3)
    split = split_orphans(problem, build_atoms(problem, merge=False))
    assert split is not None and len(split.orphans) == 3 and split.forward.num_atoms == 2
    res = solve_ideals(problem, search=False, merge=False)
    assert res.num_ideals == 3 and res.num_orphans == 3
    _check(problem, res, brute_force_optimum(problem))


def test_orphan_relaxation_gap_falls_back_or_bounds():
    """An orphan only a CPU may hold: the relaxation (CPU pieces take no orphans) is not
    tight; the full DP closes the gap when it is small enough, else the rung reports the
    relaxation's value as a valid bound with the repaired split."""
    attrs = {"cpu_latency": np.array([0.0, 0.0, 0.3]),
             "supported_on_accel": np.array([False, False, False]),
             "color_class": np.array([0, 1, -1]), "is_backward": np.array([False, False, True])}
    problem = jp.Problem(jp.CompGraph([0.0, 0.0, 0.0], node_attrs=attrs), 1, cpus=1)
    relaxed = solve_ideals(problem, search=False, orphans="relax")
    assert relaxed.status == "gap" and relaxed.lower_bound == 0.0
    assert relaxed.cost == pytest.approx(0.3, rel=1e-12)
    _check(problem, solve_ideals(problem, search=False), 0.3)  # 4 x 2 ideals: full DP
    r = IdealsBound(max_ideals=4).run(problem, BoundContext())
    assert r.status == "Lower bound (orphan relaxation)" and r.bound == 0.0
    assert jp.evaluate_partition(problem, r.assignment).bottleneck == pytest.approx(0.3)


def _zero_some(problem, mask):
    """The problem with work, CPU latency and parameters of the masked nodes zeroed, so
    that the exact merge of cost-free units has something to merge."""
    g = problem.graph
    keep = ~np.asarray(mask[:g.num_nodes] + [False] * (g.num_nodes - len(mask)))
    attrs = dict(g.node_attrs)
    attrs["cpu_latency"] = problem.cpu_latency * keep
    g2 = jp.CompGraph(g.work * keep, g.edges, g.size_param * keep, g.size_out,
                      node_attrs=attrs)
    return problem.replace(graph=g2)


@given(tiny_cpu_block_problems(max_nodes=5, training=True),
       st.lists(st.booleans(), min_size=5, max_size=5))
def test_merging_cost_free_units_is_exact(problem, mask):
    problem = _zero_some(problem, mask)
    merged = solve_ideals(problem, search=False)
    plain = solve_ideals(problem, search=False, merge=False)
    assert build_atoms(problem).num_atoms <= problem.graph.units.num_units
    assert same_cost(merged.cost, plain.cost)
    _check(problem, merged, brute_force_optimum(problem))


@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_upper_bound_prunes_but_keeps_the_optimum(problem):
    opt = brute_force_optimum(problem)
    if not math.isfinite(opt):
        return
    _check(problem, solve_ideals(problem, opt), opt)  # a tight bound still finds it
    if opt > 0:
        below = solve_ideals(problem, opt * 0.99)
        assert below.status == "above upper bound" and math.isinf(below.cost)


def _antichain(n):
    """n independent nodes: 2^n ideals."""
    return jp.Problem(jp.CompGraph(np.ones(n)), 2)


def test_ideal_limit_error_gives_the_count():
    problem = _antichain(20)
    # refused at once: an antichain of 20 atoms proves 2^20 ideals (no enumeration)
    with pytest.raises(jp.JaxplaceError, match=r"more than 1,000 ideals: an antichain "
                       r"of 20 atoms has 2\^20") as info:
        solve_ideals(problem, 1.0, max_ideals=1000)
    assert info.value.field == "max_ideals"
    assert count_ideals(build_atoms(_antichain(10))) == 1024  # a limit the user raised
    r = IdealsBound(max_ideals=1000).run(problem, BoundContext(upper_bound=10.0))
    assert r.bound == 0.0 and r.status.startswith("skipped: more than 1,000 ideals")


def test_time_limit_is_unfinished_with_a_valid_bound():
    problem = _antichain(10)
    res = solve_ideals(problem, search=False, time_limit=0.0)
    assert res.status == "time limit" and not res.finished and res.assignment is None
    r = IdealsBound().run(problem, BoundContext(time_limit=0.0))
    assert r.bound == 0.0 and r.status.startswith("Time limit")


def test_certify_with_ideals_proves_the_optimum():
    problem = _antichain(6).replace(k=3)  # 6 unit jobs on 3 blocks: OPT 2
    cert = jp.certify(problem, methods=("ideals",))
    assert cert.optimal and cert.lower_bound == pytest.approx(2.0, rel=1e-12)
    assert cert.result("ideals").status == "Optimal"


# -- the NeurIPS 2020 workloads: Table 1 optima (rounded to 2 decimals) -----------------

WORKLOADS = {  # file -> published optimum; the first ones take under a second each
    "LayerGraphs/bert24_inference": 17.79,
    "LayerGraphs/resnet50_inference": 33.77,
    "LayerGraphs/resnet50_training": 78.63,
    "OperatorGraphs/resnet50_inference": 124.35,
    "OperatorGraphs/bert_l-3_inference": 27.92,
    "OperatorGraphs/bert_l-3_training": 65.30,  # 14 orphan backward units (relaxation)
}
HEAVY = {
    "OperatorGraphs/bert_l-6_inference": 29.58,
    "OperatorGraphs/bert_l-12_inference": 147.48,
    "LayerGraphs/gnmt_inference": 32.91,
    "LayerGraphs/inceptionv3_inference": 51.55,
}


def _published(name, optimum):
    path = NEURIPS / "throughput" / f"{name}.json"
    if not path.exists():
        pytest.skip(NEURIPS_SKIP)
    problem = jp.load_problem(path)
    # pruned by the published value plus its rounding (the default search is slower)
    res = solve_ideals(problem, optimum + 0.005, time_limit=600)
    assert res.status == "optimal"
    assert round(res.cost, 2) == pytest.approx(optimum, abs=1e-9)
    cost = jp.evaluate_partition(problem, res.assignment).bottleneck
    assert cost == pytest.approx(res.cost, rel=1e-12)
    return problem, res


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_published_optimum(name):
    _published(name, WORKLOADS[name])


@pytest.mark.heavy
@pytest.mark.parametrize("name", list(HEAVY))
def test_published_optimum_heavy(name):
    _published(name, HEAVY[name])


def test_certificate_on_a_cpu_workload():
    path = NEURIPS / "throughput" / "OperatorGraphs" / "bert_l-3_inference.json"
    if not path.exists():
        pytest.skip(NEURIPS_SKIP)
    problem = jp.load_problem(path)
    cert = jp.certify(problem, methods=("ideals",), samples=2)
    assert cert.optimal and round(cert.lower_bound, 2) == pytest.approx(27.92, abs=1e-9)
    assert cert.lower_bound == pytest.approx(cert.upper_bound, rel=1e-12)
