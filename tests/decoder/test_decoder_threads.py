"""Host threads over chunks (one CPU device) and the per-call sampled window: both
give the float64 reference's costs, and the same costs as one thread / the full DP."""

from __future__ import annotations

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL, Evaluator, SampledWindow
from jaxplace.decoder.batching import Batching, plan_chunks
from jaxplace.errors import JaxplaceError
from jaxplace.generators import regal_set
from jaxplace.objectives.throughput.reference import evaluate_reference


@pytest.fixture(scope="module")
def problem():
    return jp.Problem(regal_set(1, seed=11)[0], 8)


def _pop(problem, P, seed=0):
    return np.random.default_rng(seed).random((P, problem.n), dtype=np.float32)


def test_threads_match_one_thread_and_the_reference(problem):
    X = _pop(problem, 300)
    one = Evaluator(problem, window=None, threads=1, chunk_size=64)(X)
    two = Evaluator(problem, window=None, threads=2, chunk_size=64)(X)
    np.testing.assert_array_equal(one, two)
    ref = evaluate_reference(problem, X[:40])
    np.testing.assert_allclose(two[:40], ref, rtol=1e-5)


def test_threads_carry_float64(problem):
    X = _pop(problem, 100, seed=1).astype(np.float64)
    got = Evaluator(problem, precision="float64", window=None, threads=2,
                    chunk_size=32)(X)
    ref = evaluate_reference(problem, X)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_plan_gives_every_thread_a_chunk(problem):
    ev = Evaluator(problem, window=None, threads=2)
    plan = plan_chunks(1000, spec=ev.spec, itemsize=4, batching=ev.batching)
    assert plan.threads == 2 and plan.count >= 2 and plan.size * plan.count >= 1000
    one = plan_chunks(1000, spec=ev.spec, itemsize=4, batching=Batching(threads=1))
    assert one.threads == 1
    with pytest.raises(JaxplaceError, match="threads"):
        Batching.of(threads=0)


def test_sampled_window_is_exact_and_used(problem):
    # the best rows of a population set a window far below N; the worst rows then
    # exceed its bound and are recomputed with the full DP
    X = _pop(problem, 600, seed=2)
    full = Evaluator(problem, window=None, threads=2, chunk_size=64)(X)
    order = np.argsort(full)
    Xs = X[order]  # the sample (first round of chunks) holds the cheapest rows
    ev = Evaluator(problem, window="sample", threads=2, chunk_size=64)
    policy = ev.window
    assert isinstance(policy, SampledWindow)
    head = policy.sample_rows(len(Xs), 128)
    assert head == 128
    L = policy.after_sample(ev._bounds if ev._bounds is not None else
                            jp.decoder.block_bounds(problem), ev.spec, full[order][:head])
    assert L is not None and L < ev.spec.N  # a real restriction
    # windowed sums round in another order: equal to float32 rounding, and to the
    # float64 reference within FLOAT32_RTOL
    np.testing.assert_allclose(ev(Xs), full[order], rtol=1e-6)
    got = jp.evaluate(problem, X)
    np.testing.assert_allclose(got, full, rtol=1e-6)
    np.testing.assert_allclose(got, evaluate_reference(problem, X), rtol=FLOAT32_RTOL)


def test_small_calls_use_the_full_dp(problem):
    assert SampledWindow().sample_rows(100, 64) == 0
    X = _pop(problem, 10, seed=3)
    np.testing.assert_array_equal(jp.evaluate(problem, X),
                                  jp.evaluate(problem, X, window=None))
