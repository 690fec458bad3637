"""precision="float64" on unequal devices and for latency is honoured (x64 scoped to the
call), never silently computed in float32: it agrees with the float64 reference to
rounding, where float32 only agrees to ~1e-6."""

import jax
import numpy as np
import pytest

import jaxplace as jp


def _problem(name):
    g = jp.generators.transformer(layers=2, seed=3)
    if name == "latency":
        return jp.Problem(g, cluster=jp.load_cluster("moirai_inter"), objective="latency")
    return jp.Problem(g, cluster=jp.load_cluster("moirai_intra"))


@pytest.mark.parametrize("name", ["throughput-unequal", "latency"])
def test_float64_matches_the_reference(name):
    problem = _problem(name)
    X = np.random.default_rng(0).random((16, problem.n))
    ref = np.asarray([jp.evaluate_partition(problem, p).cost for p in jp.decode(problem, X)])
    f64 = np.asarray(jp.evaluate(problem, X, precision="float64"))
    f32 = np.asarray(jp.evaluate(problem, X, precision="float32"))
    assert np.allclose(f32, ref, rtol=1e-4)
    assert np.allclose(f64, ref, rtol=1e-12, atol=0), np.max(np.abs(f64 / ref - 1))
    # float32 is really coarser on these numbers (else the test could not fail)
    assert np.max(np.abs(f32 / ref - 1)) > 1e-9
    assert not jax.config.jax_enable_x64  # x64 was scoped to the call
