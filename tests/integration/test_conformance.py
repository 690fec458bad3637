"""`jaxplace.testing.check_objective` on the shipped objectives and on a toy written
outside the package, registered after the others and, specializing throughput, before
them (`first=True`): every entry point gives a confirmed cost >= the brute-force
optimum, a bound <= it, or one clear JaxplaceError. Quick mode here; the full matrix
(every search method, every instance searched) under `-m heavy`."""

from __future__ import annotations

import numpy as np
import pytest
from oracles import ORACLES
from strategies import dfs_work_cut, one_partition_result

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.objectives import Objective, objective_of, objectives, register, unregister
from jaxplace.objectives.ladder import ClosedFormCertify
from jaxplace.testing import check_objective, tiny_graph

SHIPPED = ("throughput", "throughput-unequal", "latency")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_objectives_conform(name):
    """Against the independent oracle of tests/oracles.py (not the objective's own
    brute force and costs)."""
    rep = check_objective(objectives()[name], oracle=ORACLES[name])
    assert any(c[2] == "ok" for c in rep.cells)
    assert any(c[1].startswith("search[") and c[2] == "ok" for c in rep.cells)
    assert any(c[1] == "evaluate_partition(random)" and c[2] == "ok" for c in rep.cells)
    assert any(c[1].startswith("certify(worst") and c[2] == "ok" for c in rep.cells)


@pytest.mark.heavy
@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_objectives_conform_full(name):
    check_objective(objectives()[name], quick=False, oracle=ORACLES[name])


class ComputeOnly(ClosedFormCertify, Objective):
    """A toy: the busiest block's compute, transfers free, on identical accelerators;
    searched by cutting the DFS order into k equal-work pieces. Nothing but the four
    abstract methods (and the closed-form certificate mixed in)."""

    name = problem_objective = "toy-compute"
    label = "toy compute-only bottleneck"

    def evaluate_partition(self, problem, assignment, *, contiguous=True, devices=None):
        from jaxplace.objectives.throughput.cost import check_assignment, quotient_order

        a = check_assignment(problem, getattr(assignment, "assignment", assignment))
        quotient_order(problem, a)  # contiguous: raises on a cycle
        cost = float(np.bincount(a, weights=problem.graph.work).max())
        return _Cost(cost, a)

    def lower_bound(self, problem):
        w = problem.graph.work
        return float(max(w.max(), w.sum() / problem.k))

    def start_partition(self, problem):
        return dfs_work_cut(problem)

    def default_search(self, req):
        return one_partition_result(self, req, self.start_partition(req.problem))


class _Cost:
    def __init__(self, cost, assignment):
        self.cost, self.assignment = cost, assignment


class ThroughputFirst(ComputeOnly):
    """The toy serving plain throughput problems without a cluster, ahead of the
    shipped throughput objective: every gate must ask it, not the problem's name."""

    name = "toy-throughput-first"
    problem_objective = "throughput"
    label = "toy compute-only throughput"

    def matches(self, problem):
        return problem.objective == "throughput" and problem.cluster is None


def test_the_toy_conforms():
    register(ComputeOnly())
    try:
        rep = check_objective(objectives()["toy-compute"])
        assert any(c[1] == "search[default]" and c[2] == "ok" for c in rep.cells)
    finally:
        unregister("toy-compute")


def test_the_toy_conforms_registered_first():
    toy = register(ThroughputFirst(), first=True)
    try:
        p = jp.Problem(tiny_graph(0, 5), 2)
        assert objective_of(p) is toy
        for gate in (lambda: jp.evaluate(p, np.zeros((1, 5))),
                     lambda: jp.search(p, "brkga", progress=False),
                     lambda: jp.certify(p, None, methods="exact")):
            with pytest.raises(JaxplaceError, match="toy"):
                gate()
        check_objective(toy)
    finally:
        unregister(toy.name)
    assert objective_of(jp.Problem(tiny_graph(0, 5), 2)).name == "throughput"


def test_a_broken_objective_fails_the_check():
    """The check can fail: a lower bound above the optimum and a search that reports
    a cost below its partition's are named."""

    class Broken(ComputeOnly):
        name = problem_objective = "toy-broken"

        def lower_bound(self, problem):
            return 2 * float(problem.graph.work.sum())

    register(Broken())
    try:
        with pytest.raises(AssertionError, match="lower_bound"):
            check_objective(objectives()["toy-broken"])
    finally:
        unregister("toy-broken")


def test_register_refuses_a_second_entry_unless_replace():
    toy = ComputeOnly()
    register(toy)
    try:
        with pytest.raises(JaxplaceError, match="replace=True"):
            register(ComputeOnly())
        again = register(ComputeOnly(), replace=True)
        assert objectives()["toy-compute"] is again
    finally:
        unregister("toy-compute")
    with pytest.raises(JaxplaceError, match="Objective"):
        register("not an objective")


def test_the_contract_is_abstract():
    class Half(Objective):
        name = problem_objective = "half"

        def lower_bound(self, problem):
            return 0.0

    with pytest.raises(TypeError, match="evaluate_partition"):
        Half()
    assert objectives()["throughput"].supports("colocation")
    assert not objectives()["latency"].supports("colocation")
    with pytest.raises(ValueError, match="capability"):
        objectives()["latency"].supports("colour")


@pytest.mark.parametrize("first", [False, True])
def test_the_toy_runs_through_the_cli(tmp_path, capsys, first):
    """partition, certify --partition and export --to json with nothing but the toy's
    module (registered after the others, or before them serving throughput)."""
    import json

    from jaxplace.cli.main import main
    from jaxplace.formats.nodelink import nodelink_data

    toy = register(ThroughputFirst() if first else ComputeOnly(), first=first)
    g = tiny_graph(0, 8)
    graph, result, plan = tmp_path / "g.json", tmp_path / "r.json", tmp_path / "p.json"
    graph.write_text(json.dumps(nodelink_data(g)))
    objective = [] if first else ["--objective", toy.problem_objective]
    try:
        assert main(["partition", str(graph), "-k", "2", *objective,
                     "-o", str(result)]) == 0
        saved = json.loads(result.read_text())
        p = jp.Problem(g, 2, objective=toy.problem_objective)
        assert objective_of(p) is toy
        assert saved["bottleneck"] == toy.evaluate_partition(
            p, np.asarray(saved["assignment"])).cost
        assert main(["certify", str(graph), "-k", "2", *objective,
                     "--partition", str(result)]) == 0
        assert main(["export", str(result), "--to", "json", "-o", str(plan)]) == 0
        assert sum(len(s["ops"]) for s in json.loads(plan.read_text())["stages"]) == 8
    finally:
        unregister(toy.name)
    assert "Traceback" not in capsys.readouterr().err
