"""The batched JAX decoder against the NumPy float64 reference (objectives.throughput.reference).

Tolerances: float64 runs agree with the reference to rounding (rtol 1e-12: the same
sums in a different association order); float32 runs within FLOAT32_RTOL (1e-5),
the stated bound for float32 segment sums on these small graphs.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brute import brute_force_slice
from compiles import count_compiles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_problems import assert_costs, random_problem

import jaxplace as jp
from jaxplace.decoder import (
    FLOAT32_RTOL,
    decode,
    device_graph,
    evaluate,
    evaluate_graphs,
    make_evaluator,
    score,
)
from jaxplace.decoder.layout import Spec, bucket
from jaxplace.errors import JaxplaceError

IMPLS = ("simple", "lanes")
#: One padded shape for all small property-test graphs, so hypothesis compiles once.
SMALL = Spec(N=16, T=32, D=16, S=16, K=16, use_param=True)


@partial(jax.jit, static_argnames=("spec", "impl"))
def _score_fixed(spec, g, X, impl):
    return score(spec, g, X, impl=impl)


def fixed_scores(problem, X, impl, dtype=jnp.float32):
    """Scores through the pure API with one fixed padded shape (no recompiles)."""
    _, g = device_graph(problem, SMALL, dtype=dtype)
    Xp = np.zeros((X.shape[0], SMALL.N), dtype=np.dtype(dtype))
    Xp[:, :problem.n] = X
    return np.asarray(_score_fixed(SMALL, g, Xp, impl), dtype=np.float64)


problems = st.builds(
    lambda seed, n, multi, params, memory, capacity, ties: (
        random_problem(np.random.default_rng(seed), n, multi=multi, params=params,
                       memory=memory, capacity=capacity), seed, ties),
    st.integers(0, 2**31), st.integers(1, 14), st.booleans(), st.booleans(),
    st.booleans(), st.booleans(), st.booleans())


def _population(problem, seed, ties, P=6, dtype=np.float32):
    rng = np.random.default_rng(seed + 1)
    if ties:  # few distinct values: exercises the smaller-index tie rule
        return rng.integers(0, 3, (P, problem.n)).astype(dtype)
    return rng.random((P, problem.n)).astype(dtype)


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=problems)
def test_float32_matches_reference(impl, case):
    problem, seed, ties = case
    X = _population(problem, seed, ties)
    assert_costs(fixed_scores(problem, X, impl), jp.reference.evaluate_reference(problem, X),
                 FLOAT32_RTOL)


@pytest.mark.parametrize("impl", IMPLS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=problems)
def test_float64_matches_reference(impl, case):
    problem, seed, ties = case
    X = _population(problem, seed, ties, dtype=np.float64)
    with jax.enable_x64(True):
        got = fixed_scores(problem, X, impl, dtype=jnp.float64)
    assert_costs(got, jp.reference.evaluate_reference(problem, X), 1e-12)


@pytest.mark.parametrize("impl, every_case", [(impl, False) for impl in IMPLS] + [
    pytest.param(impl, True, marks=pytest.mark.heavy) for impl in IMPLS if impl != "simple"])
def test_evaluate_entry_point(impl, every_case):
    rng = np.random.default_rng(3)
    cases = [dict(), dict(params=True, memory=True), dict(params=True, capacity=True),
             dict(multi=True, params=True, memory=True, capacity=True)]
    if not every_case:  # the default set: the plain case and every option at once
        cases = cases[::3]
    for kw in cases:
        problem = random_problem(rng, 40, p=0.1, k=5, **kw)
        X = rng.random((37, problem.n))  # float64 X: keys computed on the host
        want = jp.reference.evaluate_reference(problem, X)
        # window=None: full DP every call (windows: test_decoder_cpu_blocks.py)
        assert_costs(evaluate(problem, X, impl=impl, window=None), want, FLOAT32_RTOL)
        assert_costs(evaluate(problem, X, precision="float64", impl=impl, window=None),
                     want, 1e-12)
        assert_costs(evaluate(problem, X.astype(np.float32), chunk_size=8, impl=impl,
                              window=None),
                     jp.reference.evaluate_reference(problem, X.astype(np.float32)), FLOAT32_RTOL)


def test_k_larger_than_n_and_single_node():
    rng = np.random.default_rng(5)
    for n, k in ((1, 1), (1, 4), (3, 10), (9, 40)):
        problem = random_problem(rng, n, k=k)
        X = rng.random((4, n)).astype(np.float32)
        want = jp.reference.evaluate_reference(problem, X)
        assert_costs(evaluate(problem, X), want, FLOAT32_RTOL)


def test_capacity_infeasible_is_inf():
    g = jp.CompGraph([1.0, 1.0], [(0, 1)], size_param=[3.0, 3.0], size_out=[1.0, 0.0])
    problem = jp.Problem(g, 2, capacity=2.0)
    costs = evaluate(problem, np.zeros((3, 2), np.float32))
    assert np.all(np.isposinf(costs))
    ok = jp.Problem(g, 2, capacity=3.0)
    np.testing.assert_allclose(evaluate(ok, np.zeros((1, 2), np.float32)), [2.0], rtol=1e-7)


def test_tiny_known_optimum():
    # chain 0 -> 1 -> 2, work 1, 2, 3, outputs 0.5: best 2 blocks {0,1} {2}: 3.5 each
    g = jp.CompGraph([1.0, 2.0, 3.0], [(0, 1), (1, 2)], size_out=[0.5, 0.5, 0.0])
    problem = jp.Problem(g, 2)
    np.testing.assert_allclose(evaluate(problem, np.zeros((1, 3))), [3.5], rtol=1e-7)
    part = decode(problem, np.zeros(3))
    assert part.cuts == (2,)
    assert part.assignment.tolist() == [0, 0, 1]


def test_brute_force_tiny():
    rng = np.random.default_rng(11)
    for _ in range(6):
        problem = random_problem(rng, int(rng.integers(2, 7)), k=int(rng.integers(1, 5)),
                                 multi=bool(rng.integers(2)), params=True, memory=True)
        X = rng.random((3, problem.n))
        costs = evaluate(problem, X, precision="float64")
        for x, c in zip(X, costs, strict=True):
            order = jp.reference.kahn(problem.graph, x)
            np.testing.assert_allclose(c, brute_force_slice(problem, order), rtol=1e-12)


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_decode_matches_reference(precision):
    rng = np.random.default_rng(7)
    for kw in (dict(), dict(multi=True, params=True, memory=True)):
        problem = random_problem(rng, 30, p=0.15, k=4, **kw)
        X = rng.random((5, problem.n))
        parts = decode(problem, X, precision=precision)
        for x, part in zip(X, parts, strict=True):
            ref = jp.reference.decode_reference(problem, x)
            assert np.array_equal(part.order, ref.order)
            pc = jp.evaluate_partition(problem, part.assignment)
            assert part.cost == pc.bottleneck
            if precision == "float64":
                assert part.cuts == ref.cuts
                np.testing.assert_allclose(part.cost, ref.cost, rtol=1e-12)
            else:
                np.testing.assert_allclose(part.cost, ref.cost, rtol=FLOAT32_RTOL)
    single = decode(problem, X[0])
    assert isinstance(single, jp.reference.Partition)


def test_no_recompile():
    rng = np.random.default_rng(1)
    a = random_problem(rng, 50, p=0.05, k=4)
    b = random_problem(rng, 50, p=0.05, k=4)
    spec_a, spec_b = (jp_spec(p) for p in (a, b))
    X = rng.random((20, 50)).astype(np.float32)
    evaluate(a, X)
    decode(a, X[:3])
    with count_compiles() as counts:
        evaluate(a, X)
        evaluate(a, X[:19])  # same population bucket
        decode(a, X[:2])
        if spec_a == spec_b:
            evaluate(b, X)  # another graph in the same bucket
            decode(b, X[:3])
    assert counts["score_chunk"] == 0 and counts["decode_chunk"] == 0, counts


def jp_spec(problem):
    from jaxplace.decoder import problem_spec

    return problem_spec(problem)


def test_same_bucket_other_graph_no_recompile():
    rng = np.random.default_rng(2)
    base = random_problem(rng, 60, p=0.05, k=3)
    from jaxplace.decoder import problem_spec

    spec = problem_spec(base)
    others = []
    while len(others) < 2:
        cand = random_problem(rng, int(rng.integers(57, 61)), p=0.05, k=3)
        if problem_spec(cand) == spec:
            others.append(cand)
    evaluate(base, rng.random((16, base.n)).astype(np.float32))
    with count_compiles() as counts:
        for p in others:
            X = rng.random((16, p.n)).astype(np.float32)
            assert_costs(evaluate(p, X), jp.reference.evaluate_reference(p, X), FLOAT32_RTOL)
    assert counts["score_chunk"] == 0, counts


def test_bucket():
    assert bucket(200) == 208 and bucket(8) == 8 and bucket(2000) == 2048
    for x in range(1, 3000, 7):
        b = bucket(x)
        assert b >= x and (x <= 8 or b <= x * 1.125 + 1)


def test_make_evaluator_inside_scan():
    rng = np.random.default_rng(4)
    problem = random_problem(rng, 25, p=0.2, k=3, params=True, memory=True)
    fn, _ = make_evaluator(problem)
    X = rng.random((4, 8, problem.n)).astype(np.float32)

    @jax.jit
    def loop(X):
        def body(best, x):
            c = fn(x)
            return jnp.minimum(best, c.min()), c
        return jax.lax.scan(body, jnp.inf, X)

    best, costs = loop(X)
    want = jp.reference.evaluate_reference(problem, X.reshape(-1, problem.n)).reshape(4, 8)
    assert_costs(np.asarray(costs), want, FLOAT32_RTOL)
    np.testing.assert_allclose(float(best), want.min(), rtol=FLOAT32_RTOL)


def test_evaluate_graphs_multi():
    rng = np.random.default_rng(9)
    probs = [random_problem(rng, n, p=0.2, k=k, multi=m, params=True, memory=m)
             for n, k, m in ((10, 2, False), (23, 5, True), (17, 30, False))]
    X = rng.random((3, 6, 23)).astype(np.float32)
    got = evaluate_graphs(probs, X)
    for i, p in enumerate(probs):
        assert_costs(got[i], jp.reference.evaluate_reference(p, X[i, :, :p.n]), FLOAT32_RTOL)


def test_bad_input():
    problem = random_problem(np.random.default_rng(0), 5, k=2)
    with pytest.raises(JaxplaceError):
        evaluate(problem, np.zeros((2, 4)))
    with pytest.raises(JaxplaceError):
        evaluate(problem, np.full((2, 5), np.nan))
    with pytest.raises(JaxplaceError):
        evaluate(problem, np.zeros((2, 5)), precision="float16")


def test_chunking_caps_the_dp_table_on_cpu_only():
    from jaxplace.decoder import _lanes as lanes
    from jaxplace.decoder.batching import CACHE_BYTES, bytes_per_candidate, chunk_size_for

    spec = Spec(N=208, T=208, D=24, S=24, K=16, use_param=True)
    capped = chunk_size_for(spec, 4)
    free = chunk_size_for(spec, 4, cache_bytes=None)
    assert capped * lanes.table_rows(spec) * (spec.N + 1) * 4 <= CACHE_BYTES
    assert free > capped  # accelerators: only the memory budget limits a chunk
    assert free * bytes_per_candidate(spec, 4) <= 1 << 30 < 2 * free * bytes_per_candidate(
        spec, 4)
    assert free & (free - 1) == 0 and capped & (capped - 1) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ordered_keys_keep_the_float_order(dtype):
    """The DP compares `lanes.ordered` integer keys instead of floats: the keys must
    order every non-NaN float as the floats do (-0.0 == +0.0, infinities, negatives)
    and map back exactly. (Subnormals are left out: XLA:CPU flushes them to zero, in
    its float compares as in the keys.)"""
    from jaxplace.decoder._lanes import ordered, unordered

    with jax.enable_x64(dtype == np.float64):
        info = np.finfo(dtype)
        special = np.array([0.0, -0.0, np.inf, -np.inf, info.tiny, -info.tiny, info.max,
                            -info.max, 1.0, -1.0], dtype)
        rng = np.random.default_rng(0)
        x = np.concatenate([special, (rng.standard_normal(500) * 10.0 ** rng.integers(
            -30, 30, 500)).astype(dtype)])
        k = np.asarray(ordered(jnp.asarray(x)))
        assert k.dtype == (np.int64 if dtype == np.float64 else np.int32)
        a, b = np.meshgrid(np.arange(len(x)), np.arange(len(x)))
        cmp = lambda v: (v[a] > v[b]).astype(int) - (v[a] < v[b])  # noqa: E731
        np.testing.assert_array_equal(cmp(k), cmp(x))
        back = np.asarray(unordered(jnp.asarray(k), dtype))
        np.testing.assert_array_equal(back, np.where(x == 0, 0.0, x).astype(dtype))
        assert not np.signbit(back[x == 0]).any()
