"""Where features cross (issue 50): every combination gives the right answer, checked
against brute force, or one clear JaxplaceError; never a number computed under a model
that dropped part of the problem."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict
from jaxplace.errors import JaxplaceError
from jaxplace.objectives import objectives
from jaxplace.testing import UNEQUAL, UNIFORM, tiny_graph

RTOL = 1e-6


def _unequal():
    return cluster_from_dict(UNEQUAL)


# -- options the objective does not model are refused, not dropped --------------------

def test_latency_refuses_colocation_classes():
    """A class split over devices once gave a 'proven optimal' schedule."""
    g = tiny_graph(1, 6, colocation=True)
    with pytest.raises(JaxplaceError, match="colocation") as exc:
        jp.Problem(g, cluster=_unequal(), objective="latency")
    assert exc.value.field == "color_class"


@pytest.mark.parametrize(("objective", "kw", "field"), [
    ("throughput", {"capacity": 9.0}, "capacity"),
    ("throughput", {"memory": 4.0}, "memory"),
    ("throughput", {"bandwidth": 2.0}, "bandwidth"),
    ("latency", {"capacity": 9.0}, "capacity"),
    ("latency", {"memory": 4.0}, "memory"),
    ("latency", {"bandwidth": 2.0}, "bandwidth"),
])
def test_unequal_cluster_refuses_identical_device_options(objective, kw, field):
    with pytest.raises(JaxplaceError) as exc:
        jp.Problem(tiny_graph(2, 5), cluster=_unequal(), objective=objective, **kw)
    assert exc.value.field == field and "\n" not in str(exc.value)


@pytest.mark.parametrize("objective", ["throughput", "latency"])
def test_cluster_refuses_cpu_only_ops_and_cpu_blocks(objective):
    g = tiny_graph(3, 5, cpu_only=True)
    with pytest.raises(JaxplaceError, match="supported_on_accel|accelerator"):
        jp.Problem(g, cluster=_unequal(), objective=objective)
    with pytest.raises(JaxplaceError, match="CPU"):
        jp.Problem(tiny_graph(3, 5, cpu=True), cluster=_unequal(), objective=objective,
                   cpus=1)


def test_uniform_cluster_enforces_device_memory():
    """Device memory binds on a uniform cluster as it does on an unequal one (the
    cluster pipeline model serves both): no stage of a plan exceeds its device's
    memory, and the optimum is no better than with memory to spare."""
    g = tiny_graph(4, 5)
    cap = float(g.size_param.sum()) - 1  # no device holds every op
    tight = {**UNIFORM, "devices": [{**d, "memory": cap} for d in UNIFORM["devices"]]}
    p = jp.Problem(g, cluster=cluster_from_dict(tight))
    obj = p.objective_impl
    assert obj.name == "throughput-unequal"
    r = jp.search(p, "dfs", progress=False)
    sc = jp.evaluate_partition(p, r.partition)
    assert math.isfinite(r.cost) and sc.memory.max() <= cap and sc.num_stages == 2
    roomy = jp.Problem(g, cluster=cluster_from_dict(UNIFORM))
    assert obj.brute_force(p) >= obj.brute_force(roomy)


def test_unequal_devices_k1_refuses_two_stages():
    """k = 1 once scored a 2-stage assignment at half the proven optimum."""
    p = jp.Problem(tiny_graph(5, 5), 1, cluster=_unequal())
    opt = objectives()["throughput-unequal"].brute_force(p)
    with pytest.raises(JaxplaceError, match="k=1"):
        jp.evaluate_partition(p, np.array([0, 0, 0, 1, 1]))
    assert jp.evaluate_partition(p, np.zeros(5, np.int64), devices=[0]).cost >= opt * (
        1 - RTOL)


# -- latency entry points ------------------------------------------------------------

@pytest.fixture(scope="module")
def latency_problem():
    return jp.Problem(tiny_graph(6, 5), cluster=_unequal(), objective="latency")


@pytest.mark.parametrize("shape", [(2, 4), (2, 9), (2, 3, 5), (3,)])
def test_latency_evaluate_refuses_rows_of_the_wrong_shape(latency_problem, shape):
    X = np.random.default_rng(0).random(shape)
    with pytest.raises(JaxplaceError, match="priorities"):
        jp.evaluate(latency_problem, X)
    with pytest.raises(JaxplaceError, match="priorities"):
        jp.decode(latency_problem, X)


def test_latency_evaluate_of_no_rows(latency_problem):
    assert jp.evaluate(latency_problem, np.zeros((0, 5))).shape == (0,)


def test_latency_save_result_takes_a_partition_and_a_certificate(tmp_path,
                                                                latency_problem):
    p = latency_problem
    r = jp.search(p, "dfs", progress=False)
    cert = jp.certify(p, r.partition, methods="simple", time_limit=5)
    data = jp.save_result(tmp_path / "r.json", p, r.partition, certificate=cert)
    assert math.isclose(data["makespan"], jp.evaluate_partition(p, r.partition).cost,
                        rel_tol=RTOL)
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["certificate"]["lower_bound"] == cert.lower_bound


def test_latency_refuses_to_save_an_unplaced_schedule(tmp_path):
    """A packing that fits no device's memory was written as makespan "inf" with
    device -1 for the ops left over."""
    g = tiny_graph(7, 5)
    big = float(g.size_param.sum())
    tight = {**UNEQUAL, "devices": [{**d, "memory": big * 0.55}
                                    for d in UNEQUAL["devices"]]}
    p = jp.Problem(g, cluster=cluster_from_dict(tight), objective="latency")
    one = np.zeros(5, np.int64)  # everything on one device: over its memory
    assert not math.isfinite(jp.evaluate_partition(p, one).cost)
    with pytest.raises(JaxplaceError, match="memory"):
        jp.save_result(tmp_path / "r.json", p, one)
    assert not (tmp_path / "r.json").exists()


def test_latency_certify_keeps_the_time_limit():
    """The MILP's HiGHS gets what is left after building it: certify's bounds share
    one limit (the CLI's --time-limit)."""
    from jaxplace.bounds.base import BoundContext
    from jaxplace.objectives.ladder import certify_with

    seen = []

    def slow(problem, ctx, partition):
        seen.append(ctx.time_limit)
        import time

        time.sleep(0.3)
        return objectives()["latency"].simple_bound(problem, ctx, partition) if hasattr(
            objectives()["latency"], "simple_bound") else _simple(problem)

    def _simple(problem):
        from jaxplace.bounds.base import MethodResult

        return MethodResult("simple", 0.0, "closed form", 0.0, kind="closed-form")

    class Two(type(objectives()["latency"])):
        bound_methods = default_bounds = ("simple", "milp")

    p = jp.Problem(tiny_graph(8, 5), cluster=_unequal(), objective="latency")
    certify_with(Two(), p, None, None, {"simple": slow, "milp": slow}, time_limit=1.0)
    assert seen[0] <= 1.0 and seen[1] <= 0.75, seen
    assert BoundContext  # the context is a frozen dataclass replaced per bound


# -- settings ------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [-1, 0, math.nan])
def test_search_and_certify_refuse_bad_time_limits(limit):
    p = jp.Problem(tiny_graph(9, 5), 2)
    with pytest.raises(JaxplaceError, match="time_limit|positive"):
        jp.search(p, "dfs", time_limit=limit, progress=False)
    with pytest.raises(JaxplaceError, match="positive"):
        jp.certify(p, None, methods="simple", time_limit=limit)


def test_search_refuses_population_size_zero():
    p = jp.Problem(tiny_graph(9, 5), 2)
    with pytest.raises(JaxplaceError, match="population_size"):
        jp.search(p, "brkga", population_size=0, progress=False)


@pytest.mark.parametrize("name", ["throughput", "throughput-unequal", "latency"])
def test_certify_refuses_no_bound(name):
    p = {"throughput": lambda: jp.Problem(tiny_graph(9, 5), 2),
         "throughput-unequal": lambda: jp.Problem(tiny_graph(9, 5), cluster=_unequal()),
         "latency": lambda: jp.Problem(tiny_graph(9, 5), cluster=_unequal(),
                                       objective="latency")}[name]()
    for methods in ((), "", " , "):
        with pytest.raises(JaxplaceError, match="no bound"):
            jp.certify(p, None, methods=methods, time_limit=5)


def test_multilevel_on_an_infeasible_problem():
    """No block fits the capacity: a result of cost inf, not a TypeError."""
    p = jp.Problem(tiny_graph(10, 40), 3, capacity=0.5)
    r = jp.search(p, "multilevel", budget=100, progress=False, time_limit=10)
    assert math.isinf(r.cost) and math.isinf(jp.evaluate_partition(p, r.partition).cost)


# -- results across objectives: load, certify, export ---------------------------------

def _saved(tmp_path, p, name="r.json"):
    r = jp.search(p, "dfs", progress=False)
    jp.save_result(tmp_path / name, p, r, method="dfs")
    return tmp_path / name, r


def test_result_formats_agree_with_the_objectives():
    from jaxplace.objectives.latency._result import FORMAT as LATENCY
    from jaxplace.objectives.throughput_unequal._report import FORMAT as HETERO

    assert objectives()["throughput-unequal"].result_format == HETERO
    assert objectives()["latency"].result_format == LATENCY


def test_unequal_result_is_not_certified_as_identical_devices(tmp_path):
    from jaxplace.formats.results import load_assignment

    g = tiny_graph(11, 5)
    hetero = jp.Problem(g, cluster=_unequal())
    path, r = _saved(tmp_path, hetero)
    with pytest.raises(JaxplaceError, match="hetero"):
        load_assignment(path, jp.Problem(g, 2))
    part = load_assignment(path, hetero)  # its own problem: the stage devices too
    assert math.isclose(jp.evaluate_partition(hetero, part).cost, r.cost, rel_tol=RTOL)


def test_fractional_blocks_are_refused(tmp_path):
    from jaxplace.formats.results import load_assignment

    p = jp.Problem(tiny_graph(12, 5), 2)
    path, _ = _saved(tmp_path, p)
    data = json.loads(path.read_text())
    data["assignment"] = [0.5, 0, 0, 1, 1]
    path.write_text(json.dumps(data))
    with pytest.raises(JaxplaceError, match="integer"):
        load_assignment(path, p)


@pytest.mark.parametrize("problem", ["throughput", "unequal", "latency"])
def test_export_json_of_every_objective(tmp_path, problem):
    from jaxplace.export.neutral import neutral_plan

    g = tiny_graph(13, 5)
    p = {"throughput": lambda: jp.Problem(g, 2),
         "unequal": lambda: jp.Problem(g, cluster=_unequal()),
         "latency": lambda: jp.Problem(g, cluster=_unequal(), objective="latency")}[problem]()
    path, _ = _saved(tmp_path, p)
    plan = neutral_plan(json.loads(path.read_text()), str(path))
    assert sorted(op for s in plan["stages"] for op in s["ops"]) == sorted(
        str(v) for v in g.node_ids)


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d.update(assignment=d["assignment"][:-1]), "entries"),
    (lambda d: d.update(assignment=["0"] * len(d["assignment"])), "integer"),
    (lambda d: d.update(assignment=[0] * (len(d["assignment"]) - 1) + [7]), "out of range"),
])
def test_export_refuses_malformed_results(tmp_path, edit, match):
    from jaxplace.export.neutral import neutral_plan

    path, _ = _saved(tmp_path, jp.Problem(tiny_graph(14, 5), 2))
    data = json.loads(path.read_text())
    edit(data)
    with pytest.raises(JaxplaceError, match=match):
        neutral_plan(data, str(path))


def test_export_refuses_a_cyclic_assignment(tmp_path):
    """Blocks that read from each other in both directions are no pipeline."""
    from jaxplace.export.neutral import neutral_plan
    from jaxplace.formats.nodelink import nodelink_data

    g = jp.CompGraph(np.ones(3), [(0, 1), (1, 2)], np.ones(3), np.ones(3))
    gpath = tmp_path / "g.json"
    gpath.write_text(json.dumps(nodelink_data(g)))
    data = {"format": "jaxplace-result/1", "source": str(gpath), "k": 2, "cpus": 0,
            "num_nodes": 3, "assignment": [0, 1, 0], "node_ids": list(g.node_ids)}
    with pytest.raises(JaxplaceError, match="both directions"):
        neutral_plan(data, str(tmp_path / "r.json"))


@pytest.mark.parametrize("problem", ["throughput", "unequal", "latency"])
def test_export_json_of_a_fused_graph_names_the_original_ops(tmp_path, problem):
    """Results of a coarsened (fused) import map every original op to its stage."""
    from jaxplace.export.neutral import neutral_plan
    from jaxplace.importers.coarsen import coarsen

    g = jp.CompGraph(np.arange(1, 7, dtype=float), [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                     np.ones(6), np.ones(6), op_types=["MatMul", "Relu", "MatMul", "Add",
                                                       "MatMul", "Relu"],
                     node_ids=[f"op{i}" for i in range(6)])
    fused = coarsen(g)
    assert fused.num_nodes < g.num_nodes
    p = {"throughput": lambda: jp.Problem(fused, 2),
         "unequal": lambda: jp.Problem(fused, cluster=_unequal()),
         "latency": lambda: jp.Problem(fused, cluster=_unequal(), objective="latency")}[
        problem]()
    path, _ = _saved(tmp_path, p)
    plan = neutral_plan(json.loads(path.read_text()), str(path))
    ops = sorted(str(op) for s in plan["stages"] for op in s["ops"])
    assert len(ops) == g.num_nodes


def test_latency_milp_stops_building_at_the_time_limit():
    """`--certify --time-limit 5` on 400 ops ran 53 s: building the model alone took
    longer than the limit. The build stops at the deadline with the closed-form bound
    (valid) and the best schedule known."""
    from jaxplace.cluster import load_cluster
    from jaxplace.generators.latency_models import gpt_like
    from jaxplace.objectives.latency.milp import UNBUILT, latency_lower_bound, solve_moirai

    p = jp.Problem(gpt_like(2, 256, 4), cluster=load_cluster("moirai_inter"),
                   objective="latency")
    res = solve_moirai(p.latency, time_limit=1e-3)
    assert res.status == UNBUILT
    assert res.bound == min(latency_lower_bound(p.latency), res.makespan)
    assert res.makespan >= res.bound
