"""The objective contract and the correctness matrix: every objective x {evaluate,
decode, evaluate_partition, lower bound, search with every registered method, certify
with every registered bound} on tiny instances against brute force. Each cell gives
the right value or a JaxplaceError; a bound never exceeds the brute-force optimum;
`optimal` only where the bound meets a cost `evaluate_partition` confirms."""

from __future__ import annotations

import math

import numpy as np
import pytest
from brute import brute_force_noncontiguous, brute_force_optimum
from toy_objective import ComputeOnly

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict
from jaxplace.errors import JaxplaceError
from jaxplace.objectives import objective_of, objectives, register, unregister
from jaxplace.objectives.latency.brute import brute_force as latency_brute_force
from jaxplace.objectives.throughput_unequal.brute import optimum as hetero_optimum
from jaxplace.search.registry import METHODS
from jaxplace.search.request import SearchRequest

RTOL = 1e-6
CLUSTER = {"devices": [{"name": "fast", "peak_flops": 4e12, "mem_bw": 1e12, "memory": 60.0},
                       {"name": "slow", "peak_flops": 1e12, "mem_bw": 1e12, "memory": 60.0}],
           "bandwidth": [[0, 40.0], [20.0, 0]], "latency": 0.01}
#: Search methods checked in every cell (the evosax algorithms share one code path;
#: two stand for them here, all of them under `-m heavy`).
EVOSAX_LIGHT = ("CMA_ES", "SimpleGA")


def _graph(seed: int, n: int = 6, attrs: bool = False) -> jp.CompGraph:
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.45]
    node_attrs = None
    if attrs:
        node_attrs = {"cpu_latency": rng.integers(1, 12, n).astype(float),
                      "supported_on_accel": rng.random(n) > 0.15,
                      "color_class": np.where(rng.random(n) < 0.3, 0, -1)}
    return jp.CompGraph(rng.integers(1, 9, n).astype(float), edges,
                        rng.integers(0, 5, n).astype(float),
                        rng.integers(1, 6, n).astype(float), node_attrs=node_attrs)


def _problems() -> dict[str, jp.Problem]:
    c = cluster_from_dict(CLUSTER)
    return {
        "throughput": jp.Problem(_graph(0), 3, bandwidth=2.0, memory=4.0),
        "throughput-cpus": jp.Problem(_graph(1, attrs=True), 2, cpus=1, capacity=9.0),
        "throughput-unequal": jp.Problem(_graph(2, n=5), cluster=c, objective="throughput"),
        "latency": jp.Problem(_graph(3, n=5), cluster=c, objective="latency"),
    }


PROBLEMS = _problems()


def _optimum(problem: jp.Problem) -> float:
    obj = objective_of(problem)
    if obj.name == "throughput":
        return brute_force_optimum(problem)
    if obj.name == "throughput-unequal":
        return hetero_optimum(problem.pipeline_instance, problem.k)
    return latency_brute_force(problem.latency)[0]


OPTIMA = {name: _optimum(p) for name, p in PROBLEMS.items()}


#: Methods that compile programs of their own (a GNN, a surrogate, an arrangement
#: cost): run on one problem per objective by default, on all under `-m heavy`.
COMPILING = {"mla", "mla-weighted", "policy", "policy+brkga", "relax", "relax+brkga"}


def _cells():
    out = []
    for name in PROBLEMS:
        for method in METHODS:
            evosax = method not in COMPILING | {"default", "random", "brkga", "dfs",
                                                "noncontiguous", "multilevel"}
            heavy = (evosax and method not in EVOSAX_LIGHT) or (
                (evosax or method in COMPILING) and name == "throughput-cpus")
            out.append(pytest.param(name, method, marks=[pytest.mark.heavy] if heavy else [],
                                    id=f"{name}-{method}"))
    return out


def test_every_problem_resolves_to_its_objective():
    assert {objective_of(p).name for p in PROBLEMS.values()} == {
        "throughput", "throughput-unequal", "latency"}
    assert set(objectives()) >= {"throughput", "throughput-unequal", "latency"}
    with pytest.raises(JaxplaceError, match="objective"):
        jp.Problem(_graph(0), 2, objective="energy")


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_costs_agree_with_the_reference(name):
    """evaluate == evaluate_partition(decode) for random rows; the objective's lower
    bound never exceeds the brute-force optimum."""
    p = PROBLEMS[name]
    rng = np.random.default_rng(5)
    X = rng.random((4, p.n))
    costs = jp.evaluate(p, X, precision="float64")
    parts = jp.decode(p, X)
    for c, part in zip(costs, parts, strict=True):
        confirmed = jp.evaluate_partition(p, part).cost
        # float32 where JAX runs without x64 (unequal devices, latency): 1e-5
        assert math.isclose(c, confirmed, rel_tol=1e-5), (name, c, confirmed)
        assert confirmed >= OPTIMA[name] * (1 - RTOL)
    assert jp.simple_lower_bound(p) <= OPTIMA[name] * (1 + RTOL)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_identical_device_helpers_refuse_other_objectives(name):
    from jaxplace.objectives.throughput.cost import (
        partition_costs,
        simple_lower_bound,
        throughput_lower_bound,
    )

    p = PROBLEMS[name]
    # one dispatcher: cost's simple_lower_bound and the search's are jp.simple_lower_bound
    assert simple_lower_bound is jp.simple_lower_bound
    assert SearchRequest(p, 0, 1).lower_bound == jp.simple_lower_bound(p)
    if objective_of(p).name == "throughput":
        assert throughput_lower_bound(p) == jp.simple_lower_bound(p)
        return
    with pytest.raises(JaxplaceError, match="objective"):
        throughput_lower_bound(p)
    with pytest.raises(JaxplaceError, match="objective"):
        partition_costs(p, np.zeros(p.n, np.int64))


@pytest.mark.parametrize(("name", "method"), _cells())
def test_search_matrix(name, method):
    """Every registered method on every objective: a result whose cost the reference
    confirms and no better than the optimum, or a JaxplaceError naming the method."""
    p = PROBLEMS[name]
    obj = objective_of(p)
    supported = obj.search_methods is None or method in obj.search_methods
    if not supported:
        with pytest.raises(JaxplaceError, match="method"):
            jp.search(p, method, budget=40, progress=False)
        return
    try:
        r = jp.search(p, method, budget=200, population_size=20, progress=False,
                      time_limit=60)
    except JaxplaceError as exc:  # a setting the method does not model, said plainly
        assert exc.field, exc
        return
    if method == "noncontiguous":  # virtual pieces: bounded by the non-contiguous optimum
        assert r.cost >= brute_force_noncontiguous(p)[0] * (1 - RTOL)
        return
    confirmed = jp.evaluate_partition(p, r.partition).cost
    assert math.isclose(r.cost, confirmed, rel_tol=RTOL), (r.cost, confirmed)
    assert r.cost >= OPTIMA[name] * (1 - RTOL)
    if method == "default" and "proved_by" in r.info:  # a proof is a real optimum
        assert math.isclose(r.cost, OPTIMA[name], rel_tol=RTOL)
        assert r.info["proof_lower_bound"] <= OPTIMA[name] * (1 + RTOL)


def _bounds():
    from jaxplace.bounds.registry import METHODS as BOUND_METHODS
    from jaxplace.objectives.latency.objective import LATENCY

    names = dict.fromkeys([*BOUND_METHODS, *LATENCY.bound_methods])
    return [pytest.param(b, id=b) for b in names]


@pytest.mark.parametrize("bound", _bounds())
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_certify_matrix(name, bound):
    """Every registered bound on every objective: valid (<= the brute-force optimum),
    optimal only when it meets the confirmed cost of the partition, or a
    JaxplaceError naming the bound."""
    p = PROBLEMS[name]
    obj = objective_of(p)
    start = jp.decode(p, np.random.default_rng(1).random(p.n))
    if bound not in obj.bound_methods:
        with pytest.raises(JaxplaceError, match="bound|method"):
            jp.certify(p, start, methods=(bound,), time_limit=5)
        return
    cert = jp.certify(p, start, methods=(bound,), time_limit=10)
    opt = OPTIMA[name]
    assert cert.lower_bound <= opt * (1 + RTOL) + 1e-9, (bound, cert.lower_bound, opt)
    for r in cert.results:
        assert r.bound <= opt * (1 + RTOL) + 1e-9, (r.name, r.bound, opt)
    if cert.optimal:
        assert cert.partition is not None
        confirmed = obj.evaluate_partition(p, _as_partition(p, cert, start)).cost
        assert math.isclose(confirmed, cert.upper_bound, rel_tol=RTOL)
        assert math.isclose(confirmed, opt, rel_tol=RTOL)


def _as_partition(p, cert, start):
    """The certificate's partition with the stage devices of the start (unequal
    devices: the assignment alone does not say which device holds a stage)."""
    if objective_of(p).name == "throughput-unequal":
        return start
    if objective_of(p).name == "latency":
        return start
    return cert.partition


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_every_objective_writes_its_result(tmp_path, name):
    """save_result goes through the objective: the JSON's cost is the reference cost."""
    import json

    p = PROBLEMS[name]
    r = jp.search(p, "dfs", progress=False)
    data = jp.save_result(tmp_path / "r.json", p, r, method="dfs", seed=0)
    assert json.loads((tmp_path / "r.json").read_text())["assignment"] == [
        int(a) for a in data["assignment"]]
    cost = data.get("makespan", data.get("bottleneck"))
    assert math.isclose(cost, jp.evaluate_partition(p, r.partition).cost, rel_tol=RTOL)


def test_hetero_certify_is_no_false_proof():
    """The seam of issue 41: on unequal devices the certificate's bound comes from the
    objective's own bound and never exceeds a valid partition's cost."""
    c = cluster_from_dict(CLUSTER)
    for seed in range(4):
        p = jp.Problem(_graph(10 + seed, n=7), cluster=c, objective="throughput")
        r = jp.search(p, budget=300, population_size=20, progress=False)
        cert = jp.certify(p, r.partition)
        assert cert.lower_bound <= jp.evaluate_partition(p, r.partition).cost * (1 + RTOL)
        assert cert.lower_bound <= hetero_optimum(p.pipeline_instance, p.k) * (1 + RTOL)


# -- a fourth objective is one module and one registry entry ---------------------------

def test_a_toy_objective_plugs_in():
    register(ComputeOnly())
    try:
        p = jp.Problem(_graph(4, n=8), 3, objective="toy-compute")
        assert objective_of(p).name == "toy-compute"
        r = jp.search(p, progress=False)
        assert r.cost == objective_of(p).evaluate_partition(p, r.partition).cost
        assert jp.evaluate_partition(p, r.partition).cost == r.cost
        assert jp.simple_lower_bound(p) <= r.cost
        cert = jp.certify(p, r.partition)
        assert cert.lower_bound == jp.simple_lower_bound(p)
        with pytest.raises(JaxplaceError, match="toy-compute"):
            jp.search(p, "brkga")
        with pytest.raises(JaxplaceError, match="toy-compute"):
            jp.evaluate(p, np.zeros((1, p.n)))
        with pytest.raises(JaxplaceError, match="bound"):
            jp.certify(p, r.partition, methods="exact")
    finally:
        unregister("toy-compute")
    with pytest.raises(JaxplaceError, match="objective"):
        jp.Problem(_graph(4, n=8), 3, objective="toy-compute")


# -- nothing outside the objective packages branches on the objective ------------------

#: the packages that own an objective (they may name it and read its model)
OBJECTIVE_PACKAGES = ("objectives",)
#: names that only an objective's own package may compare against
OBJECTIVE_NAMES = {"throughput", "latency", "throughput-unequal"}
#: files still branching, each with its owner's task; only ever remove
BRANCH_ALLOWLIST: set = set()


#: reads of the same names that are not about objectives
NOT_OBJECTIVES = {
    # spatial plans split one op over a cluster's devices by speed: its own question
    ("spatial/optimize.py", "reads .is_uniform"),
}


def _branches(path, tree):
    """(line, what) for every comparison with an objective name or read of
    Problem.latency / Problem.hetero / cluster.is_uniform in `tree`."""
    import ast

    def named(node) -> bool:
        return isinstance(node, ast.Constant) and node.value in OBJECTIVE_NAMES

    def objectiveish(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in ("objective", "name")) or (
            isinstance(node, ast.Name) and node.id == "objective") or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "objective")

    problemish = {"problem", "p", "pr", "prob"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(named(s) for s in sides) and any(objectiveish(s) for s in sides):
                yield node.lineno, "compares an objective name"
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            base = node.value
            base_name = base.id if isinstance(base, ast.Name) else (
                base.attr if isinstance(base, ast.Attribute) else None)
            if node.attr in ("hetero", "is_uniform"):
                yield node.lineno, f"reads .{node.attr}"
            elif node.attr == "latency" and base_name in problemish:
                yield node.lineno, "reads Problem.latency"


def test_no_objective_branches_outside_the_objective_packages():
    """The contract's promise: code outside an objective's package asks the resolved
    objective (`supports`, `require`, its methods), never its name or the problem's
    objective-specific fields."""
    import ast
    from pathlib import Path

    pkg = Path(jp.__file__).resolve().parent
    found, stale = [], set(BRANCH_ALLOWLIST)
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).as_posix()
        if rel.split("/")[0] in OBJECTIVE_PACKAGES or rel == "problem.py":
            continue
        hits = list(_branches(rel, ast.parse(path.read_text())))
        if rel in BRANCH_ALLOWLIST:
            if hits:
                stale.discard(rel)
            continue
        found += [f"{rel}:{line}: {what}" for line, what in hits
                  if (rel, what) not in NOT_OBJECTIVES]
    assert not found, "\n".join(found)
    assert not stale, f"no branch left in {sorted(stale)}: remove from BRANCH_ALLOWLIST"


def test_the_branch_scan_finds_branches():
    import ast

    src = ("if problem.objective != 'latency': pass\n"
           "if obj.name == 'throughput': pass\n"
           "x = problem.hetero or cluster.is_uniform or p.latency\n"
           "y = result.get('objective') == 'latency'\n")
    assert len(list(_branches("x.py", ast.parse(src)))) == 6
