"""The independent oracles of tests/oracles.py, and the grown conformance check that
holds the objectives against them: the oracles agree with hand-computed answers on
tiny fixtures, and the check fails an objective that drops a rule or misreports a
cost (the shipped objectives' runs are in tests/integration/test_conformance.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import ORACLES, ClusterPipelineOracle, IdenticalOracle, LatencyOracle

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict
from jaxplace.objectives import objectives, register, unregister
from jaxplace.testing import UNEQUAL, check_objective, tiny_graph
from test_conformance import ComputeOnly


def test_identical_oracle_by_hand():
    # a chain 0 -> 1 -> 2, work 2, 3, 4, one tensor of 1 per edge, k = 2, B = 1:
    # {0, 1} | {2} costs max(2 + 3 + 1, 1 + 4) = 6; {0} | {1, 2}: max(2 + 1, 1 + 7) = 8
    g = jp.CompGraph([2, 3, 4], [(0, 1), (1, 2)], size_out=[1, 1, 0])
    p = jp.Problem(g, 2)
    o = IdenticalOracle()
    assert o.cost(p, np.array([0, 0, 1])) == 6.0
    assert o.cost(p, np.array([0, 1, 1])) == 8.0
    assert o.cost(p, np.array([1, 0, 1])) is None  # the quotient has a cycle
    assert o.optimum(p) == 6.0
    # a hard capacity forbids the 6: {0, 1} holds 2 + 2 > 3 bytes
    cap = jp.Problem(jp.CompGraph([2, 3, 4], [(0, 1), (1, 2)], size_param=[2, 2, 1],
                                  size_out=[1, 1, 0]), 2, capacity=3.0)
    assert math.isinf(o.cost(cap, np.array([0, 0, 1])))
    assert o.optimum(cap) == 8.0


def test_identical_oracle_cpu_blocks_and_classes():
    g = jp.CompGraph([5, 5, 5], [(0, 1), (1, 2)], size_out=[1, 1, 0], node_attrs={
        "cpu_latency": np.array([1.0, 9.0, 1.0]),
        "supported_on_accel": np.array([True, True, False]),
        "color_class": np.array([0, -1, 0])})
    p = jp.Problem(g, 1, cpus=1)
    o = IdenticalOracle()
    assert o.cost(p, np.array([0, 0, 0])) is None  # op 2 may not run on the accelerator
    assert o.cost(p, np.array([1, 0, 1])) is None  # the class {0, 2} on a CPU, 1 between
    assert o.cost(p, np.array([1, 1, 1])) == 11.0  # all on the CPU: 1 + 9 + 1
    assert o.optimum(p) == 11.0


def test_cluster_pipeline_oracle_forwards_skipping_tensors():
    # op 0's tensor feeds op 2 two stages later: it crosses both cuts
    g = jp.CompGraph([1, 1, 1], [(0, 1), (0, 2), (1, 2)], size_out=[4, 2, 0])
    c = {"devices": [{"name": n, "peak_flops": 1e12, "mem_bw": 1e12, "memory": 99.0}
                     for n in "abc"], "bandwidth": 2.0, "latency": 0.5}
    p = jp.Problem(g, cluster=cluster_from_dict(c), objective="throughput")
    o = ClusterPipelineOracle()
    # cut 1 carries tensor 0 (4 bytes), cut 2 tensors 0 and 1 (6 bytes): the middle
    # stage costs 1 + (0.5 + 4 / 2) + (2 * 0.5 + 6 / 2) = 7.5
    assert o.cost(p, np.array([0, 1, 2])) == pytest.approx(7.5)
    assert o.cost(p, np.array([1, 0, 2])) is None  # an edge back
    assert o.optimum(p) == pytest.approx(3.0)  # one stage, three ops of 1 s


def test_latency_oracle_by_hand():
    # two independent ops of 2 s and 3 s on two devices: optimum 3 (one each); a
    # chain of two ops split over the devices pays the transfer in between
    c = cluster_from_dict({"devices": [
        {"name": n, "peak_flops": 1e12, "mem_bw": 1e12, "memory": 99.0} for n in "ab"],
        "bandwidth": 1.0, "latency": 0.25})
    o = LatencyOracle()
    g = jp.CompGraph([1, 1], [], node_attrs={"time_a": np.array([2.0, 3.0]),
                                             "time_b": np.array([2.0, 3.0])})
    p = jp.Problem(g, cluster=c, objective="latency")
    assert o.optimum(p) == 3.0 and o.cost(p, np.array([0, 0])) == 5.0
    chain = jp.CompGraph([1, 1], [(0, 1)], size_out=[2, 0],
                         node_attrs={"time_a": np.array([1.0, 1.0]),
                                     "time_b": np.array([1.0, 1.0])})
    q = jp.Problem(chain, cluster=c, objective="latency")
    assert o.cost(q, np.array([0, 1])) == pytest.approx(1 + 0.25 + 2 + 1)
    assert o.optimum(q) == 2.0


@pytest.mark.parametrize("seed", range(4))
def test_oracles_agree_with_the_objectives_brute_force(seed):
    """Two brute forces written apart agree on random tiny instances (the conformance
    check then trusts neither alone)."""
    g = tiny_graph(seed, 4)
    c = cluster_from_dict(UNEQUAL)
    for p in (jp.Problem(g, 2), jp.Problem(g, cluster=c, objective="throughput"),
              jp.Problem(g, cluster=c, objective="latency")):
        name = p.objective_impl.name
        assert ORACLES[name].optimum(p) == pytest.approx(
            p.objective_impl.brute_force(p), rel=1e-9)


class ComputeOnlyOracle:
    """The toy's model (the busiest block's work, blocks acyclic), brute force."""

    def cost(self, p, plan):
        a = np.asarray(getattr(plan, "assignment", plan))
        if a.shape != (p.n,) or a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= p.k:
            return None
        if not IdenticalOracle()._valid(p, [int(b) for b in a]):
            return None
        return float(np.bincount(a, weights=p.graph.work, minlength=p.k).max())

    def optimum(self, p):
        import itertools

        costs = (self.cost(p, np.asarray(a)) for a in
                 itertools.product(range(p.k), repeat=p.n))
        return min(c for c in costs if c is not None)


@pytest.mark.heavy
def test_the_toy_conforms_against_its_oracle():
    register(ComputeOnly())
    try:
        rep = check_objective(objectives()["toy-compute"], oracle=ComputeOnlyOracle())
        assert any(c[1] == "evaluate_partition(random)" and c[2] == "ok"
                   for c in rep.cells)
        assert any(c[1].startswith("certify(worst") and c[2] == "ok" for c in rep.cells)
    finally:
        unregister("toy-compute")


class DropsContiguity(ComputeOnly):
    """Accepts a cyclic split (a rule dropped silently): only the oracle sees it."""

    name = problem_objective = "toy-drops"

    def evaluate_partition(self, problem, assignment, *, contiguous=True, devices=None):
        from jaxplace.objectives.throughput.cost import check_assignment

        a = check_assignment(problem, getattr(assignment, "assignment", assignment))
        return _Cost(float(np.bincount(a, weights=problem.graph.work).max()), a)


class MisreportsCost(ComputeOnly):
    """Reports a split's cost 1% low: its own brute force agrees, the oracle does not."""

    name = problem_objective = "toy-low"

    def evaluate_partition(self, problem, assignment, **kw):
        c = super().evaluate_partition(problem, assignment, **kw)
        return _Cost(c.cost * 0.99, c.assignment)


class _Cost:
    def __init__(self, cost, assignment):
        self.cost, self.assignment = cost, assignment


def test_the_oracle_cells_fail_a_dropped_rule():
    register(DropsContiguity())
    try:
        rep = check_objective(objectives()["toy-drops"], oracle=ComputeOnlyOracle(),
                              strict=False)
        assert any("forbids" in f for f in rep.failures), rep.failures[:5]
        # without the oracle the same objective passes these cells: they are new
        plain = check_objective(objectives()["toy-drops"], strict=False)
        assert not any("evaluate_partition(random)" in f for f in plain.failures)
        # NaN, negative and fractional attributes: one-line refusals, one cell each
        bad = [c for c in rep.cells if c[1].startswith("CompGraph(")]
        assert len(bad) == 8 and all(c[2].startswith("refused") for c in bad)
    finally:
        unregister("toy-drops")


@pytest.mark.heavy
def test_the_oracle_cells_fail_a_misreported_cost():
    register(MisreportsCost())
    try:
        rep = check_objective(objectives()["toy-low"], oracle=ComputeOnlyOracle(),
                              strict=False)
        assert any("oracle" in f for f in rep.failures), rep.failures[:5]
    finally:
        unregister("toy-low")
