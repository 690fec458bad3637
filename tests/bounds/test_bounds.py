"""Lower bounds and certificates (jaxplace.bounds) against brute force on tiny graphs."""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import numpy as np
import pytest
from brute import brute_force_optimum, direct_block_cost, is_valid
from hypothesis import given, settings
from strategies import tiny_cpu_block_problems, tiny_problems

import jaxplace as jp
from jaxplace.bounds import (
    BOUNDS,
    DEFAULT_METHODS,
    METHODS,
    MIP_METHODS,
    MethodResult,
    certify,
    exact_bound,
    exact_model,
    guess_bound,
)
from jaxplace.bounds._model import dag_numbering, start_vector
from jaxplace.objectives.throughput.reference import decode_reference

# HiGHS works to a primal feasibility tolerance of 1e-7 on scaled rows; bounds and
# incumbent costs agree with exact float64 costs to about that, relative.
RTOL = 1e-6


def leq(a: float, b: float) -> bool:
    """a <= b up to solver tolerance (inf <= inf)."""
    if math.isinf(b):
        return True
    return a <= b * (1 + RTOL) + 1e-9


def close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-9)


def block_costs(problem, a):
    return max(direct_block_cost(problem, np.flatnonzero(a == b)) for b in range(problem.k))


def random_problem(seed: int, n: int, k: int, p: float = 0.3, window: int = 6, **kw):
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + window))
             if rng.random() < p]
    g = jp.CompGraph(rng.uniform(1, 10, n), edges, rng.uniform(0, 5, n),
                     rng.uniform(0, 5, n))
    return jp.Problem(g, k, **kw)


@settings(max_examples=40)
@given(tiny_problems(max_nodes=6, max_k=3, multi_tensor=False))
def test_exact_equals_brute_force(problem):
    opt = brute_force_optimum(problem)
    res, found, _ = exact_bound(problem, time_limit=20)
    assert close(res.bound, opt), (res.bound, opt, res.status)
    if math.isinf(opt):
        assert found is None
        return
    # the MIP's solution decodes to a valid partition of the reported cost
    assert found is not None
    assert is_valid(problem, found)
    assert close(block_costs(problem, found), opt)
    assert close(res.primal, opt)


def check_exact_against_brute_force(problem) -> float:
    """The exact MIP's bound equals brute force, and its partition is a valid optimum."""
    opt = brute_force_optimum(problem)
    res, found, _ = exact_bound(problem, time_limit=20)
    assert close(res.bound, opt), (res.bound, opt)
    if found is not None:
        assert is_valid(problem, found)
        assert close(block_costs(problem, found), opt)
    return opt


@settings(max_examples=25)
@given(tiny_problems(max_nodes=5, max_k=3, multi_tensor=True))
def test_exact_equals_brute_force_multi_tensor(problem):
    check_exact_against_brute_force(problem)


@settings(max_examples=25)
@given(tiny_problems(max_nodes=5, max_k=4, multi_tensor=True))
def test_every_bound_below_optimum(problem):
    opt = brute_force_optimum(problem)
    cert = certify(problem, methods=METHODS, time_limit=20, samples=4)
    for r in cert.results:
        assert leq(r.bound, opt), (r.name, r.bound, opt)
    assert leq(cert.lower_bound, opt)
    assert leq(opt, cert.upper_bound)
    # the exact MIP closes the gap on tiny instances
    assert close(cert.result("exact").bound, opt)
    if not math.isinf(opt):
        assert cert.optimal
        assert close(cert.upper_bound, opt)
        assert is_valid(problem, cert.partition)
    else:
        assert cert.infeasible


@settings(max_examples=30)
@given(tiny_problems(max_nodes=6, max_k=2, multi_tensor=True))
def test_guess_equals_exact_for_k2(problem):
    problem = problem.replace(k=2)
    res, _, _ = exact_bound(problem, time_limit=20)
    bound, per, _ = guess_bound(problem, time_limit=20)
    assert len(per) == 2
    assert close(bound, res.bound), (bound, res.bound)


def test_ladder_is_ordered_on_a_medium_graph():
    problem = random_problem(1, 30, 4)
    cert = certify(problem, methods=METHODS, time_limit=30, samples=8)
    b = {r.name: r.bound for r in cert.results}
    L = jp.simple_lower_bound(problem)
    assert b["simple"] == L
    for name in METHODS:
        assert leq(b[name], cert.upper_bound)
        assert b[name] >= L * (1 - RTOL) or name.startswith("bottleneck-no")
    # the three-superblock relaxation sits between the simple bound and the exact MIP
    assert b["bottleneck"] >= b["bottleneck-lp"] * (1 - RTOL)
    assert b["bottleneck-guess"] >= b["bottleneck"] * (1 - RTOL)
    assert b["exact"] >= b["bottleneck-guess"] * (1 - RTOL)
    assert cert.optimal  # 30 nodes, k = 4: HiGHS proves it in well under 30 s
    # the first method whose bound met the optimum is named: the cover bound can
    # reach it before the exact MIP does (timing dependent)
    assert cert.method in ("exact", "ideals", "cover")


def test_given_partition_is_the_upper_bound_and_the_mip_start():
    problem = random_problem(3, 25, 3)
    part = decode_reference(problem, np.zeros(problem.n))
    cert = certify(problem, part, methods=("simple",))
    assert cert.upper_bound == pytest.approx(part.cost, rel=1e-12)  # summation order
    assert cert.partition_source == "given"
    np.testing.assert_array_equal(cert.partition, part.assignment)
    # a time limit too short for anything but the MIP start: the incumbent is ours
    res, found, _ = exact_bound(problem, part.assignment, time_limit=1e-3)
    assert found is not None
    assert leq(jp.evaluate_partition(problem, found).bottleneck, part.cost)
    assert leq(res.bound, part.cost)


def test_start_vector_is_feasible_and_exact():
    """The MIP start of a partition satisfies every row with z = its cost."""
    for seed, kw in [(0, {}), (1, {"memory": 8.0}), (2, {"capacity": 40.0})]:
        problem = random_problem(seed, 20, 4, **kw)
        part = decode_reference(problem, np.random.default_rng(seed).random(problem.n))
        pc = jp.evaluate_partition(problem, part.assignment)
        m = exact_model(problem)
        a = dag_numbering(pc.assignment, pc.block_order)
        x = start_vector(m, problem, a, pc.bottleneck)
        ax = np.zeros(m.nrow)
        rows = np.repeat(np.arange(m.nrow), np.diff(m.start))
        np.add.at(ax, rows, m.value * x[m.index])
        tol = 1e-9
        assert np.all(ax >= m.row_lo - tol) and np.all(ax <= m.row_hi + tol)
        assert np.all(x >= m.col_lo - tol) and np.all(x <= m.col_hi + tol)
        np.testing.assert_array_equal(m.assignment(x), a)


def test_certificate_json_and_history():
    problem = random_problem(4, 20, 3)
    seen = []
    cert = certify(problem, methods=("simple", "exact", "exact-lp"), time_limit=20,
                   progress=lambda *a: seen.append(a), samples=4)
    d = json.loads(json.dumps(cert.to_dict()))
    assert d["lower_bound"] == pytest.approx(cert.lower_bound, rel=1e-12)
    assert [r["name"] for r in d["results"]] == ["simple", "exact-lp", "exact"]
    assert d["partition"]["cost"] == pytest.approx(cert.upper_bound, rel=1e-12)
    assert len(cert.history) >= 1
    t, inc, bnd = cert.history[-1]
    assert leq(bnd, inc)
    assert {s[0] for s in seen} >= {"simple", "exact"}
    assert cert.ratio >= 1 - RTOL


def test_infeasible_capacity_is_proven():
    g = jp.CompGraph([1.0, 1.0], [(0, 1)], size_param=[5.0, 1.0], size_out=[1.0, 0.0])
    problem = jp.Problem(g, 2, capacity=4.0)
    cert = certify(problem, methods=("simple", "bottleneck", "bottleneck-guess", "exact"))
    assert cert.infeasible
    assert cert.partition is None
    assert json.dumps(cert.to_dict())


def test_unknown_method_is_a_user_error():
    problem = random_problem(0, 5, 2)
    with pytest.raises(jp.JaxplaceError, match="'gurobi' does not apply.*choose from"):
        certify(problem, methods=("simple", "gurobi"))


def test_parallel_guess_matches_sequential():
    problem = random_problem(5, 25, 4)
    b1, per1, _ = guess_bound(problem, time_limit=60, workers=1)
    b2, per2, _ = guess_bound(problem, time_limit=60, workers=2)
    assert all(r.status == "Optimal" for r in per1 + per2)
    for r1, r2 in zip(per1, per2, strict=True):
        assert r1.bound == pytest.approx(r2.bound, rel=1e-6)
    assert b1 == pytest.approx(b2, rel=1e-6)


def test_exact_model_build_time_n2000_k8():
    """Printed, not asserted (speed is shown by benchmarks)."""
    rng = np.random.default_rng(0)
    n = 2000
    src = rng.integers(0, n - 1, 4000)
    dst = np.minimum(src + rng.integers(1, 30, 4000), n - 1)
    e = np.stack([src, dst], 1)
    g = jp.CompGraph(rng.uniform(1, 10, n), e[e[:, 0] != e[:, 1]], rng.uniform(0, 5, n),
                     rng.uniform(0, 5, n))
    problem = jp.Problem(g, 8, memory=200.0, capacity=400.0)
    t = time.perf_counter()
    m = exact_model(problem)
    dt = time.perf_counter() - t
    print(f"exact MIP n=2000 k=8: {m.ncol} cols, {m.nrow} rows, {m.nnz} nnz, "
          f"built in {dt:.3f}s")
    assert m.nrow > 0 and m.integrality.sum() == n * 7


def test_cli_certify(tmp_path, capsys):
    from jaxplace.cli.main import main
    from jaxplace.formats import save_result
    from jaxplace.formats.nodelink import nodelink_data

    problem = random_problem(6, 15, 3)
    path = tmp_path / "g.json"
    path.write_text(json.dumps(nodelink_data(problem.graph)))
    part = decode_reference(problem, np.zeros(problem.n))
    res = tmp_path / "r.json"
    save_result(res, problem, part)
    out = tmp_path / "c.json"
    rc = main(["certify", str(path), "-k", "3", "--partition", str(res), "--methods",
               "simple,bottleneck,exact", "--time-limit", "20", "--quiet", "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "exact" in text and "ratio" in text
    data = json.loads(out.read_text())
    cert = data["certificate"]
    assert cert["optimal"] is True
    assert data["bottleneck"] == pytest.approx(cert["upper_bound"], rel=1e-9)
    assert main(["certify", str(path), "-k", "3", "--methods", "nope", "--quiet"]) == 2


def _accelerator_only(problem):
    """The same problem without CPU blocks and with every op supported."""
    g = problem.graph
    attrs = {k: v for k, v in g.node_attrs.items() if k != "supported_on_accel"}
    g2 = jp.CompGraph(g.work, g.edges, g.size_param, g.size_out, node_attrs=attrs)
    return problem.replace(graph=g2, cpus=0)


@settings(max_examples=30)
@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_exact_with_colocation_and_training_edges(problem):
    """Colocation classes and forward-only contiguity (NeurIPS 2020 model)."""
    problem = _accelerator_only(problem)
    opt = check_exact_against_brute_force(problem)
    cert = certify(problem, methods=METHODS, time_limit=20, samples=2)
    for r in cert.results:
        assert leq(r.bound, opt), (r.name, r.bound, opt)


@settings(max_examples=10)
@given(tiny_cpu_block_problems(max_nodes=4))
def test_cpu_blocks_skip_the_mips_and_stay_valid(problem):
    """The superblock MIPs skip CPU blocks; the exact MIP models them (issue 15, see
    test_certify_cpu_blocks.py)."""
    opt = brute_force_optimum(problem)
    cert = certify(problem, methods=("simple", "bottleneck", "exact"), samples=2)
    assert leq(cert.lower_bound, opt)
    if problem.cpus or not problem.supported.all():
        assert cert.result("bottleneck").status.startswith("skipped")


# -- the registry, the worker processes, numbers HiGHS cannot load -----------------------


def test_registry_is_the_ladder():
    assert tuple(BOUNDS) == METHODS
    assert METHODS == ("simple", "station", "cross", "ideals", "bottleneck-lp",
                       "bottleneck-no-dag-lp", "bottleneck-no-io-lp", "bottleneck-guess-lp",
                       "station-check-lp", "exact-lp", "station-check", "bottleneck",
                       "bottleneck-no-dag", "bottleneck-no-io", "bottleneck-guess",
                       "cover", "bbr", "exact")
    assert MIP_METHODS == ("station-check", "bottleneck", "bottleneck-no-dag",
                           "bottleneck-no-io", "bottleneck-guess", "cover", "exact")
    assert set(DEFAULT_METHODS) <= set(METHODS)
    for name, m in BOUNDS.items():
        assert m.name == name
        assert m.kind in ("closed-form", "dp", "lp", "mip")
        assert m.kind == "lp" if name.endswith("-lp") else m.kind != "lp"
    with pytest.raises(TypeError):
        BOUNDS["mine"] = BOUNDS["simple"]  # immutable: register in a copy


def test_deferred_rungs_load_on_first_use():
    """The ladder's rungs defined in a later import layer (jaxplace.exact) load by name:
    importing the registry and listing the MIP rungs loads nothing of exact; a loaded
    rung must be of the kind it was registered as."""
    import subprocess
    import sys

    from jaxplace.bounds.registry import Deferred, Ladder
    from jaxplace.bounds.simple import SimpleBound

    code = ("import sys\nfrom jaxplace.bounds.registry import BOUNDS, MIP_METHODS\n"
            "print(sorted(m for m in sys.modules if m.startswith('jaxplace.exact')), "
            "BOUNDS.kind('bbr'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["[]", "dp"], out.stderr
    ideals = Deferred("jaxplace.exact.bound:IdealsBound", "ideals", "dp")
    ladder_ = Ladder((SimpleBound("simple"), ideals))
    assert list(ladder_) == ["simple", "ideals"] and ladder_.kind("ideals") == "dp"
    assert ladder_["ideals"].name == "ideals" and ladder_["ideals"] is ladder_["ideals"]
    with pytest.raises(TypeError, match="registered as 'mip'"):
        Ladder((Deferred("jaxplace.exact.bound:IdealsBound", "ideals", "mip"),))["ideals"]


@dataclass(frozen=True)
class _HalfUpper:
    """A (valid) dummy bound: half the best partition's cost, from the context."""

    name: str = "half-upper"
    kind: str = "closed-form"

    def run(self, problem, context):
        return MethodResult(self.name, context.upper_bound / 2, "closed form", 0.0,
                            kind=self.kind)


def test_certify_runs_what_the_registry_holds():
    problem = random_problem(7, 12, 3)
    a = decode_reference(problem, np.zeros(problem.n))
    # inserted before "simple": certify follows the registry's order, not the argument's
    registry = {"half-upper": _HalfUpper(), **BOUNDS}
    cert = certify(problem, a, methods=("simple", "half-upper"), registry=registry)
    assert [r.name for r in cert.results] == ["half-upper", "simple"]
    assert cert.result("half-upper").bound == pytest.approx(a.cost / 2, rel=1e-12)
    assert cert.lower_bound == max(r.bound for r in cert.results)
    with pytest.raises(jp.JaxplaceError, match="'half-upper' does not apply.*choose from"):
        certify(problem, a, methods=("half-upper",))  # not in the default registry


def test_guess_in_worker_processes_matches_one_process():
    """threads=2: the k solves of bottleneck-guess run in `python -m
    jaxplace.bounds.worker` processes; the bound is the in-process one."""
    problem = random_problem(8, 8, 2)
    kw = dict(methods=("bottleneck-guess",), time_limit=20, samples=2)
    one = certify(problem, threads=1, **kw).result("bottleneck-guess")
    two = certify(problem, threads=2, **kw).result("bottleneck-guess")
    assert one.status == two.status == "Optimal"
    assert two.solves == 2
    assert two.bound == pytest.approx(one.bound, rel=1e-9)  # same model, same HiGHS


def test_worker_module_runs_alone():
    """The worker is a module of the installed package, run with this interpreter."""
    import pickle
    import subprocess
    import sys

    m = exact_model(random_problem(9, 6, 2))
    job = (m.arrays(), dict(relax=False, time_limit=10, scale=m.scale))
    proc = subprocess.run([sys.executable, "-m", "jaxplace.bounds.worker"],
                          input=pickle.dumps(job), capture_output=True, check=True)
    reply = pickle.loads(proc.stdout)
    assert reply["status"] == "Optimal" and reply["col_value"] is None
    assert reply["bound"] == pytest.approx(exact_bound(random_problem(9, 6, 2))[0].bound,
                                           rel=RTOL)


@pytest.mark.parametrize("methods", [("simple",), ("simple", "bottleneck", "exact")])
def test_overflowing_work_is_a_user_error(methods):
    g = jp.CompGraph([1e308, 1e308, 1.0], [(0, 1), (1, 2)], size_out=[1.0, 1.0, 0.0])
    with pytest.raises(jp.JaxplaceError) as e:
        certify(jp.Problem(g, 2), methods=methods, samples=1)
    assert e.value.field == "work"
    assert "sum to inf" in str(e.value) and "1e+308" in str(e.value)
    assert "np." not in str(e.value) and "\n" not in str(e.value)


def test_huge_work_is_a_user_error_not_a_highs_failure():
    """work 1e308 next to 1: the model's coefficients would span 1e308, which HiGHS
    cannot load (it dropped them and passModel failed); the error names the field."""
    g = jp.CompGraph([1e308, 1.0, 1.0], [(0, 1), (1, 2)], size_out=[1.0, 1.0, 0.0])
    problem = jp.Problem(g, 2)
    for methods in [("simple", "bottleneck", "bottleneck-guess", "exact"), ("exact-lp",)]:
        with pytest.raises(jp.JaxplaceError) as e:
            certify(problem, methods=methods, samples=1)
        msg = str(e.value)
        assert e.value.field == "work", msg
        assert "1e+308" in msg and "np." not in msg and "\n" not in msg
    # the closed form alone is fine
    assert certify(problem, methods=("simple",), samples=1).lower_bound == 1e308


def test_tiny_tensor_coefficient_is_a_user_error():
    g = jp.CompGraph([1.0, 1.0], [(0, 1)], size_out=[1e-12, 0.0])
    with pytest.raises(jp.JaxplaceError) as e:
        certify(jp.Problem(g, 2), methods=("bottleneck",), samples=1)
    assert e.value.field == "size_out"
    # without the tensor terms the same problem is fine
    cert = certify(jp.Problem(g, 2), methods=("bottleneck-no-io",), samples=1)
    assert cert.lower_bound == pytest.approx(1.0, rel=RTOL)
