"""The policy's NumPy forward pass (`jaxplace.policy._numpy_forward`) against the flax
model it replaces at inference, and the policy load that builds no model."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

import jaxplace as jp
from jaxplace.generators import generate, regal
from jaxplace.graph import CompGraph
from jaxplace.policy import SHIPPED_POLICIES, default_policy_path, load_policy, node_distribution
from jaxplace.policy import _checkpoint as ck
from jaxplace.policy import features as F
from jaxplace.policy import _numpy_forward as NF
from jaxplace.policy.inference import _forward, policy_from_model
from jaxplace.policy.model import ModelConfig, PolicyModel

# float32 model vs float64 NumPy: |mean| <= 4 (ulp 4.8e-7), log_std in [-1.5, 0.5]
ATOL = 2e-5


#: one padded shape for every graph here: one compile of the flax model per architecture
SIZES = F.Sizes(N=256, E=1024, M=2048, T=256)


def _flax(policy, f):
    mean, log_std = _forward(policy.graphdef, policy.params, F.pad(f, SIZES))
    n = len(f.node)
    return np.asarray(mean)[:n], np.asarray(log_std)[:n]


def _problems():
    """Graphs of several shapes: REGAL-like, a chain, isolated nodes, a transformer."""
    out = [jp.Problem(regal(s, n=n), k) for s, n, k in ((0, 30, 4), (1, 90, 8),
                                                         (2, 190, 16))]
    n = 12
    chain = CompGraph(np.arange(1, n + 1, dtype=float), np.array([[i, i + 1] for i in
                                                                  range(n - 1)]),
                      np.ones(n), np.full(n, 2.0))
    out.append(jp.Problem(chain, 3))
    lone = CompGraph(np.ones(5), np.zeros((0, 2), np.int64), np.zeros(5), np.zeros(5))
    out.append(jp.Problem(lone, 2))
    out.append(jp.Problem(generate("transformer", layers=2), 4))
    return out


def _small_model(seed=0, **kw):
    """A random (untrained) model whose output weights are not zero."""
    model = PolicyModel(ModelConfig(hidden=16, layers=2, **kw), nnx.Rngs(seed))
    shape = model.final.kernel.get_value().shape
    model.final.kernel[...] = np.random.default_rng(seed).normal(0, 0.5, shape
                                                                  ).astype(np.float32)
    return policy_from_model(model)


@pytest.mark.parametrize("name", SHIPPED_POLICIES)
def test_numpy_forward_equals_the_flax_model_for_the_shipped_policies(name):
    pol = load_policy(str(default_policy_path(name)))
    for p in _problems():
        f = F.featurize(p, anchor=bool(pol.config.dfs_anchor))
        mean, log_std = NF.forward(pol.config, pol.numpy_weights, f)
        m2, s2 = _flax(pol, f)
        assert mean.dtype == np.float32 and mean.shape == (p.n,)
        np.testing.assert_allclose(mean, m2, atol=ATOL, rtol=0)
        np.testing.assert_allclose(log_std, s2, atol=ATOL, rtol=0)
        # not a constant: the check above would pass for a model that ignores the graph
        assert np.ptp(mean) > 1e-3 or p.n < 6


@pytest.mark.parametrize("kw", [{}, {"dfs_anchor": 0.7}, {"init_log_std": -0.5}])
def test_numpy_forward_equals_the_flax_model_for_other_configs(kw):
    pol = _small_model(**kw)
    for p in _problems()[:4]:
        f = F.featurize(p, anchor=bool(pol.config.dfs_anchor))
        got = NF.forward(pol.config, pol.numpy_weights, f)
        want = _flax(pol, f)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, atol=ATOL, rtol=0)


def test_parameter_shapes_are_the_flax_models():
    cfgs = [ModelConfig(), ModelConfig(hidden=16, layers=2, node_features=22,
                                       graph_features=14)]
    cfgs += [ck.read_policy_weights(default_policy_path(n))[0] for n in SHIPPED_POLICIES]
    for cfg in cfgs:
        _, abstract = ck.model_template(cfg)
        want = {k: tuple(v.shape) for k, v in ck._flat(nnx.to_pure_dict(abstract)).items()}
        assert NF.parameter_shapes(cfg) == want


def test_node_distribution_compiles_nothing_and_builds_no_model():
    from jaxplace.compile_cache import count_compiles

    p = jp.Problem(regal(3, n=60), 8)
    pol = load_policy(problem=p)
    with count_compiles() as counts:
        d = node_distribution(pol, p)
    assert counts.built() == 0, dict(counts)
    assert "params" not in vars(pol) and "graphdef" not in vars(pol)
    m2, s2 = _flax(pol, F.featurize(p))  # builds the model now
    np.testing.assert_allclose(d["mean"], m2, atol=ATOL, rtol=0)
    np.testing.assert_allclose(d["log_std"], s2, atol=ATOL, rtol=0)


def test_lazy_params_equal_the_model_read_from_the_file():
    d = default_policy_path(SHIPPED_POLICIES[0])
    _, params, _ = ck.read_policy(d)
    lazy = load_policy(str(d)).params
    a, b = jax.tree.leaves(params), jax.tree.leaves(lazy)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_a_model_with_attention_runs_jitted():
    base = _small_model()
    cfg = dataclasses.replace(base.config, attention_layers=1, attention_heads=2)
    pol = policy_from_model(PolicyModel(cfg, nnx.Rngs(1)))
    assert not NF.supported(cfg)
    p = _problems()[0]
    d = node_distribution(pol, p)
    m2, s2 = _flax(pol, F.featurize(p))  # another padded shape: float32 rounding
    np.testing.assert_allclose(d["mean"], m2, atol=ATOL, rtol=0)
    np.testing.assert_allclose(d["log_std"], s2, atol=ATOL, rtol=0)
    with pytest.raises(ValueError, match="attention"):
        NF.forward(cfg, {}, F.featurize(p))


def test_one_blas_thread_gives_the_same_products():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(190, 640)), rng.normal(size=(640, 128))
    with NF.one_blas_thread():
        inside = a @ b
        with NF.one_blas_thread():  # nested: restores what it found
            again = a @ b
    np.testing.assert_allclose(inside, a @ b, rtol=1e-12, atol=1e-10)
    np.testing.assert_array_equal(inside, again)
