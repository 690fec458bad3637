"""The sparse fused Pallas decoder (impl="sparse", jaxplace/decoder/sparse_fused.py)
against the float64 NumPy reference, the lanes decoder and brute force, in Pallas's
interpret mode on the CPU; the per-candidate bound (tau) exact below tau and never
below the true cost above it.

The fused decoder's test matrix (tests/decoder/test_fused_decoder.py: overflow, capacity, k > n,
multi-tensor hyperedges, ties, placement units, training graphs, unsupported nodes),
run with small column blocks so that the l <= r skip crosses several blocks, with the
integer state in registers and in indexed scratch memory.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brute import brute_force_slice
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_problems import assert_costs, cpu_block_problem, random_problem
from strategies import tiny_problems
from test_fused_decoder import PLAIN, UNITS, _cases

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL, Evaluator, device_graph, evaluate
from jaxplace.decoder.fused import fused_spec
from jaxplace.decoder.layout import Spec
from jaxplace.decoder.scoring import unit_priorities
from jaxplace.decoder.sparse_fused import score_prio, work_per_candidate
from jaxplace.errors import JaxplaceError

#: Columns per static DP block in these tests: 4 blocks at N = 16.
CB = 4


@partial(jax.jit, static_argnames=("spec", "indexed", "bounded"))
def _sparse(spec, g, X, tau, *, indexed, bounded):
    U = unit_priorities(spec, g, X)
    return score_prio(spec, g, U, tau=tau if bounded else None, indexed=indexed,
                      column_block=CB)


def sparse_scores(problem, X, spec=PLAIN, dtype=jnp.float32, *, indexed=False, tau=None):
    _, g = device_graph(problem, spec, dtype=dtype)
    Xp = np.zeros((X.shape[0], spec.width), dtype=np.dtype(dtype))
    Xp[:, :problem.n] = X
    bounded = tau is not None
    t = np.asarray(np.inf if tau is None else tau, np.dtype(dtype))
    return np.asarray(_sparse(spec, g, Xp, t, indexed=indexed, bounded=bounded),
                      dtype=np.float64)


#: The integer state in scratch memory in the default set (one compile per shape shared
#: by the tests); in registers too in the heavy set (interpret mode's one-hot picks are
#: slow on a CPU).
BOTH = [True, pytest.param(False, marks=pytest.mark.heavy)]


@pytest.mark.parametrize("indexed, stride", [
    (True, 2), pytest.param(True, 1, marks=pytest.mark.heavy),
    pytest.param(False, 1, marks=pytest.mark.heavy)])
def test_float32_matches_reference_and_lanes(indexed, stride):
    """Every case in the heavy set, every other one (ties included) by default."""
    for i, (problem, X) in enumerate(_cases(np.random.default_rng(0))[::stride]):
        X = X.astype(np.float32)
        got = sparse_scores(problem, X, indexed=indexed)
        assert_costs(got, jp.reference.evaluate_reference(problem, X), FLOAT32_RTOL)
        if i < 2:  # lanes compiles per shape: two cases (one with ties)
            assert_costs(got, evaluate(problem, X, impl="lanes", window=None),
                         FLOAT32_RTOL)


def test_registers_and_indexed_state_are_bit_identical():
    rng = np.random.default_rng(3)
    for kw in (dict(multi=True, params=True, memory=True), dict(params=True, capacity=True)):
        problem = random_problem(rng, 15, k=4, **kw)
        X = rng.integers(0, 4, (13, problem.n)).astype(np.float32)  # ties
        a = sparse_scores(problem, X, indexed=False)
        b = sparse_scores(problem, X, indexed=True)
        assert np.array_equal(a, b)


@pytest.mark.heavy
def test_float64_matches_reference():
    with jax.enable_x64(True):
        for problem, X in _cases(np.random.default_rng(1)):
            assert_costs(sparse_scores(problem, X, dtype=jnp.float64, indexed=True),
                         jp.reference.evaluate_reference(problem, X), 1e-12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=tiny_problems(max_nodes=6, max_k=4, multi_tensor=True),
       seed=st.integers(0, 99))
def test_tiny_equals_brute_force(problem, seed):
    X = np.random.default_rng(seed).integers(0, 3, (3, problem.n)).astype(np.float32)
    got = sparse_scores(problem, X, indexed=True)
    for x, c in zip(X, got, strict=True):
        want = brute_force_slice(problem, jp.reference.kahn(problem.graph, x))
        assert (np.isinf(c) and np.isinf(want)) or np.isclose(c, want, rtol=FLOAT32_RTOL)


def test_capacity_infeasible_is_inf():
    g = jp.CompGraph([1.0, 1.0], [(0, 1)], size_param=[3.0, 3.0], size_out=[1.0, 0.0])
    costs = sparse_scores(jp.Problem(g, 2, capacity=2.0), np.zeros((3, 2), np.float32),
                          indexed=True)
    assert np.all(np.isposinf(costs))
    ok = sparse_scores(jp.Problem(g, 2, capacity=3.0), np.zeros((1, 2), np.float32),
                       indexed=True)
    np.testing.assert_allclose(ok, [2.0], rtol=1e-7)


@pytest.mark.parametrize("indexed", BOTH)
def test_units_training_graphs_and_unsupported_nodes(indexed):
    rng = np.random.default_rng(2)
    for kw in (dict(training=True, colors=3, k=3),
               dict(training=True, colors=2, k=2, multi=True, memory=True),
               dict(training=False, colors=4, k=4, capacity=True, unsupported=0.2),
               dict(training=True, colors=0, k=1, multi=True, unsupported=0.0)):
        try:
            problem = cpu_block_problem(rng, 16, cpus=0, **kw)
        except JaxplaceError:  # unsupported ops with no CPU block: refused by Problem
            continue
        X = rng.random((11, problem.n)).astype(np.float32)
        assert_costs(sparse_scores(problem, X, UNITS, indexed=indexed),
                     jp.reference.evaluate_reference(problem, X), FLOAT32_RTOL)


def _tau_cases(rng):
    out = []
    for kw in (dict(multi=True), dict(params=True, memory=True),
               dict(params=True, capacity=True), dict(multi=True, params=True, memory=True)):
        problem = random_problem(rng, 16, k=int(rng.integers(1, 5)), **kw)
        out.append((problem, rng.random((16, problem.n)).astype(np.float32)))
    return out


@pytest.mark.parametrize("indexed", BOTH)
def test_tau_exact_below_never_below_above(indexed):
    """Below tau: the exact cost. At or above: +inf or the exact cost. Every finite
    tau quantile of the costs, and tau below every cost (all flagged is allowed)."""
    flagged = 0
    for problem, X in _tau_cases(np.random.default_rng(8)):
        want = jp.reference.evaluate_reference(problem, X)
        finite = want[np.isfinite(want)]
        taus = list(np.quantile(finite, [0.0, 0.3, 0.7])) if finite.size else []
        for tau in taus + [0.0, float(np.inf)]:
            got = sparse_scores(problem, X, indexed=indexed, tau=tau)
            below = want < tau * (1 - 1e-6)
            assert_costs(got[below], want[below], FLOAT32_RTOL)
            above = ~below
            exact = np.isclose(got[above], want[above], rtol=FLOAT32_RTOL) | (
                np.isinf(got[above]) & np.isinf(want[above]))
            assert np.all(np.isposinf(got[above]) | exact)
            flagged += int(np.sum(np.isposinf(got) & np.isfinite(want)))
    assert flagged > 0  # the bound does flag candidates (tau = 0 at least)


@pytest.mark.heavy
def test_tau_flag_does_not_depend_on_neighbours():
    """A lane's answer is the same scored alone or beside others (blocks of 1 and 16)."""
    rng = np.random.default_rng(9)
    problem = random_problem(rng, 14, k=3, params=True, memory=True)
    X = rng.random((16, problem.n)).astype(np.float32)
    tau = float(np.median(jp.reference.evaluate_reference(problem, X)))
    _, g = device_graph(problem, PLAIN)
    Xp = np.zeros((16, PLAIN.N), np.float32)
    Xp[:, :problem.n] = X
    fn = jax.jit(lambda g, X, b: score_prio(PLAIN, g, X, tau=tau, block=b, column_block=CB),
                 static_argnums=2)
    assert np.array_equal(np.asarray(fn(g, Xp, 16)), np.asarray(fn(g, Xp, 1)))


def test_evaluate_entry_point_and_padding():
    rng = np.random.default_rng(4)
    problem = random_problem(rng, 40, p=0.1, k=5, multi=True, params=True, memory=True)
    X = rng.random((21, problem.n)).astype(np.float32)
    want = jp.reference.evaluate_reference(problem, X)
    got = evaluate(problem, X, impl="sparse")
    assert_costs(got, want, FLOAT32_RTOL)
    ev = Evaluator(problem, impl="sparse")
    assert ev.spec == fused_spec(ev.spec)
    with pytest.raises(JaxplaceError, match="fused decoder has no CPU blocks"):
        bad = cpu_block_problem(rng, 10, training=False, cpus=1, colors=0, k=2)
        evaluate(bad, rng.random((2, bad.n)), impl="sparse")


def test_work_count_is_smaller_and_grows_as_expected():
    spec = fused_spec(Spec(N=200, T=230, D=5, S=6, K=16, use_param=False))
    w = work_per_candidate(spec, 200, succ=3.0, slots=3.0)
    assert w["sparse_indexed"] < w["sparse"] < w["fused"]
    big = fused_spec(Spec(N=1000, T=1100, D=5, S=6, K=16, use_param=False))
    w2 = work_per_candidate(big, 1000, succ=3.0, slots=3.0)
    # the fused kernel is O(n N) per candidate; the sparse one about half its DP
    assert w2["fused"] / w["fused"] > 20 and w2["sparse_indexed"] < w2["fused"] / 3


@pytest.mark.parametrize("indexed", [False, True])
def test_kernel_lowers_for_gpus(indexed):
    """The GPU kernel (not interpret mode) lowers through Pallas's Triton backend,
    the bound's while loop and the indexed scratch included."""
    rng = np.random.default_rng(7)
    problem = cpu_block_problem(rng, 16, training=True, cpus=0, colors=2, k=3, memory=True,
                                unsupported=0.0)
    _, g = device_graph(problem, UNITS)
    X = np.zeros((32, UNITS.N), np.float32)
    fn = jax.jit(lambda g, X: score_prio(UNITS, g, unit_priorities(UNITS, g, X), tau=3.0,
                                         indexed=indexed, column_block=CB, interpret=False))
    text = fn.trace(g, X).lower(lowering_platforms=("cuda",)).as_text()
    assert "__gpu$xla.gpu.triton" in text and "jaxplace_sparse_decoder" in text
    # a wider graph: several ready-set words and column blocks at the default width
    big = random_problem(rng, 70, p=0.05, k=6, multi=True, params=True, memory=True)
    spec = fused_spec(jp.decoder.problem_spec(big))
    _, g = device_graph(big, spec)
    X = np.zeros((64, spec.width), np.float32)
    fn = jax.jit(lambda g, X: score_prio(spec, g, X, tau=3.0, indexed=indexed,
                                         interpret=False))
    text = fn.trace(g, X).lower(lowering_platforms=("cuda",)).as_text()
    assert spec.N == 128 and "jaxplace_sparse_decoder" in text
