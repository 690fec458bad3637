"""The fused Pallas decoder (impl="fused", jaxplace/decoder/fused.py) against the
float64 NumPy reference, in Pallas's interpret mode on the CPU.

Interpret mode is slow, so every test below scores through one or two fixed padded
shapes (one compilation each) and small populations; the cases still cover overflow,
hard capacity (+inf), k > n, multi-tensor hyperedges, ties, colocation units,
training graphs and unsupported nodes. Tolerances as in test_decoder.py: float32
within FLOAT32_RTOL, float64 to rounding (1e-12).
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

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL, Evaluator, device_graph, evaluate, score
from jaxplace.decoder.fused import fused_spec, is_fused_spec, score_prio
from jaxplace.decoder.layout import Spec
from jaxplace.errors import JaxplaceError

#: Plain graphs of up to 16 nodes (powers of two: the GPU kernel's shapes).
PLAIN = Spec(N=16, T=31, D=16, S=16, K=16, use_param=True)
#: Graphs with placement units and unsupported nodes, up to 16 nodes, k <= 4.
UNITS = Spec(N=16, T=31, D=16, S=16, K=4, use_param=True, NX=16, use_bad=True)


@partial(jax.jit, static_argnames=("spec",))
def _fused(spec, g, X):
    return score(spec, g, X, impl="fused")


def fused_scores(problem, X, spec=PLAIN, dtype=jnp.float32):
    _, g = device_graph(problem, spec, dtype=dtype)
    Xp = np.zeros((X.shape[0], spec.width), dtype=np.dtype(dtype))
    Xp[:, :problem.n] = X
    return np.asarray(_fused(spec, g, Xp), dtype=np.float64)


def test_fused_specs_are_powers_of_two():
    assert is_fused_spec(PLAIN) and is_fused_spec(UNITS)
    s = fused_spec(Spec(N=200, T=230, D=5, S=6, K=16, use_param=False))
    assert (s.N, s.T + 1, s.D, s.S, s.K) == (256, 256, 8, 8, 16)


def _cases(rng):
    """(problem, X) pairs: every feature the kernel handles, small."""
    out = []
    for i, kw in enumerate([dict(), dict(multi=True), dict(params=True, memory=True),
                            dict(params=True, capacity=True),
                            dict(multi=True, params=True, memory=True, capacity=True)]):
        problem = random_problem(rng, int(rng.integers(8, 17)), k=int(rng.integers(1, 6)),
                                 **kw)
        out.append((problem, rng.random((13, problem.n))))
        if i == 1:  # ties: few distinct priorities (the smaller index wins)
            out.append((problem, rng.integers(0, 3, (13, problem.n)).astype(float)))
    for n, k in ((1, 1), (1, 4), (3, 10), (9, 40)):  # k > n, one node
        problem = random_problem(rng, n, k=k, params=True, memory=True)
        out.append((problem, rng.random((5, n))))
    return out


def test_float32_matches_reference():
    for problem, X in _cases(np.random.default_rng(0)):
        X = X.astype(np.float32)
        assert_costs(fused_scores(problem, X), jp.reference.evaluate_reference(problem, X),
                     FLOAT32_RTOL)


def test_float64_matches_reference():
    with jax.enable_x64(True):
        for problem, X in _cases(np.random.default_rng(1)):
            assert_costs(fused_scores(problem, X, dtype=jnp.float64),
                         jp.reference.evaluate_reference(problem, X), 1e-12)


def test_capacity_infeasible_is_inf():
    g = jp.CompGraph([1.0, 1.0], [(0, 1)], size_param=[3.0, 3.0], size_out=[1.0, 0.0])
    costs = fused_scores(jp.Problem(g, 2, capacity=2.0), np.zeros((3, 2), np.float32))
    assert np.all(np.isposinf(costs))
    ok = fused_scores(jp.Problem(g, 2, capacity=3.0), np.zeros((1, 2), np.float32))
    np.testing.assert_allclose(ok, [2.0], rtol=1e-7)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=tiny_problems(max_nodes=6, max_k=4, multi_tensor=True),
       seed=st.integers(0, 99))
def test_tiny_float64_equals_brute_force(problem, seed):
    X = np.random.default_rng(seed).integers(0, 3, (3, problem.n)).astype(np.float64)
    with jax.enable_x64(True):
        got = fused_scores(problem, X, dtype=jnp.float64)
    for x, c in zip(X, got, strict=True):
        want = brute_force_slice(problem, jp.reference.kahn(problem.graph, x))
        assert (np.isinf(c) and np.isinf(want)) or np.isclose(c, want, rtol=1e-12)


def test_units_training_graphs_and_unsupported_nodes():
    rng = np.random.default_rng(2)
    for kw in (dict(training=True, colors=3, k=3),
               dict(training=True, colors=2, k=2, multi=True, memory=True),
               dict(training=False, colors=4, k=4, capacity=True, unsupported=0.2),
               dict(training=True, colors=0, k=1, multi=True, unsupported=0.0)):
        problem = cpu_block_problem(rng, 16, cpus=0, **kw)
        X = rng.random((11, problem.n)).astype(np.float32)
        assert_costs(fused_scores(problem, X, UNITS),
                     jp.reference.evaluate_reference(problem, X), FLOAT32_RTOL)


def test_evaluate_entry_point_and_lanes_agree():
    rng = np.random.default_rng(4)
    problem = random_problem(rng, 40, p=0.1, k=5, multi=True, params=True, memory=True)
    X = rng.random((21, problem.n)).astype(np.float32)
    want = jp.reference.evaluate_reference(problem, X)
    got = evaluate(problem, X, impl="fused")
    assert_costs(got, want, FLOAT32_RTOL)
    assert_costs(got, evaluate(problem, X, impl="lanes", window=None), FLOAT32_RTOL)
    ev = Evaluator(problem, impl="fused")
    assert is_fused_spec(ev.spec)
    # float64 rows on a float32 evaluator: host keys (ties in X's own dtype)
    X64 = np.round(rng.random((9, problem.n)), 1)
    assert_costs(ev(X64), jp.reference.evaluate_reference(problem, X64), FLOAT32_RTOL)


def test_blocks_and_population_padding():
    """Any block size and a population that is not a multiple of it give the same
    costs (padded lanes are dropped)."""
    rng = np.random.default_rng(5)
    problem = random_problem(rng, 12, k=3, multi=True, params=True, memory=True)
    _, g = device_graph(problem, PLAIN)
    X = np.zeros((7, PLAIN.N), np.float32)
    X[:, :problem.n] = rng.random((7, problem.n))
    want = jp.reference.evaluate_reference(problem, X[:, :problem.n])
    for block in (1, 4, 16):
        got = jax.jit(partial(score_prio, PLAIN, block=block))(g, X)
        assert got.shape == (7,)
        assert_costs(np.asarray(got, np.float64), want, FLOAT32_RTOL)


def test_cpu_blocks_are_refused():
    rng = np.random.default_rng(6)
    problem = cpu_block_problem(rng, 10, training=False, cpus=1, colors=0, k=2)
    with pytest.raises(JaxplaceError, match="fused decoder has no CPU blocks"):
        evaluate(problem, rng.random((2, problem.n)), impl="fused")
    with pytest.raises(JaxplaceError, match="must be one of"):
        evaluate(problem, rng.random((2, problem.n)), impl="nope")


def test_kernel_lowers_for_gpus():
    """The GPU kernel (not interpret mode) lowers through Pallas's Triton backend:
    every op it uses has a Triton lowering (compiling to PTX needs a GPU)."""
    rng = np.random.default_rng(7)
    problem = cpu_block_problem(rng, 16, training=True, cpus=0, colors=2, k=3, memory=True)
    _, g = device_graph(problem, UNITS)
    X = np.zeros((32, UNITS.N), np.float32)
    fn = jax.jit(lambda g, X: score_prio(UNITS, g, X, interpret=False))
    text = fn.trace(g, X).lower(lowering_platforms=("cuda",)).as_text()
    assert "__gpu$xla.gpu.triton" in text and "jaxplace_fused_decoder" in text
