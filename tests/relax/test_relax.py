"""The differentiable relaxation (jaxplace.relax): surrogate == exact cost on one-hot
assignments, gradients, known optima, and the "relax" / "relax+brkga" methods."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import same_cost, tiny_cpu_block_problems, tiny_problems

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.generators import regal
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.relax import RelaxConfig, exact_costs, optimize, relax_graph, soft_costs
from jaxplace.relax.optimize import loss_fn, start_orders
from jaxplace.relax.surrogate import one_hot_log_probs, unit_log_probs
from jaxplace.search import METHODS

#: A cheap descent for tests, shared by all of them (the config is a static argument:
#: one compile per padded shape); compile time dominates, so keep the scan short.
SMALL = dict(restarts=8, steps=100, snapshots=2)


def _check_exact(problem, assignment):
    """The surrogate's exact mode against evaluate_partition (float64, so sums of a
    few one-decimal terms agree to rounding: rtol 1e-9)."""
    try:
        ref = jp.evaluate_partition(problem, assignment)
    except JaxplaceError:
        assume(False)  # cyclic quotient or a split colocation class: no exact cost
    with jax.enable_x64(True):
        rg = relax_graph(problem, jnp.float64)
        got = exact_costs(rg, jnp.asarray(assignment))
        total = np.asarray(got["total"], np.float64)
        for name in ("work", "io_in", "io_out", "overflow"):
            np.testing.assert_allclose(np.asarray(got[name]), getattr(ref, name),
                                       rtol=1e-9, atol=1e-9, err_msg=name)
        # the smooth terms at tau -> 0 are the exact ones (capacity aside)
        soft = soft_costs(rg, *one_hot_log_probs(rg, jnp.asarray(assignment)), 0.0)
        finite = np.isfinite(ref.total)
        np.testing.assert_allclose(np.asarray(soft["total"])[finite], ref.total[finite],
                                   rtol=1e-9, atol=1e-9)
    for a, b in zip(total, ref.total, strict=True):
        assert same_cost(float(a), float(b)), (total, ref.total)
    assert same_cost(float(total.max()), ref.bottleneck)


@settings(max_examples=25)
@given(st.data())
def test_exact_mode_matches_evaluate_partition(data):
    """Overflow, capacity, multi-consumer and multi-output tensors."""
    p = data.draw(tiny_problems(max_nodes=6, max_k=3, multi_tensor=data.draw(st.booleans())))
    a = data.draw(st.lists(st.integers(0, p.k - 1), min_size=p.n, max_size=p.n))
    _check_exact(p, np.asarray(a))


@settings(max_examples=20)
@given(st.data())
def test_exact_mode_cpu_blocks(data):
    """CPU blocks (no transfers, cpu_latency), unsupported nodes, colocation."""
    p = data.draw(tiny_cpu_block_problems(max_nodes=5, training=data.draw(st.booleans())))
    a = data.draw(st.lists(st.integers(0, p.num_blocks - 1), min_size=p.n,
                           max_size=p.n))
    _check_exact(p, np.asarray(a))


def test_exact_mode_on_regal_splits():
    """Contiguous splits of a generated graph (multi-consumer tensors, overflow)."""
    g = regal(seed=5, n=60)
    p = jp.Problem(g, 5, memory=float(np.median(g.size_param) * 8), bandwidth=2.0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        cuts = np.sort(rng.choice(np.arange(1, g.num_nodes), p.k - 1, replace=False))
        a = np.empty(g.num_nodes, np.int64)
        for b, piece in enumerate(np.split(g.topo_order, cuts)):
            a[piece] = b
        _check_exact(p, a)


def test_soft_costs_converge_as_temperature_falls():
    """Logits peaked at an assignment: the soft costs tend to the exact ones as the
    softmax temperature falls (float32; the gap shrinks with tau)."""
    g = regal(seed=2, n=40)
    p = jp.Problem(g, 4)
    rg = relax_graph(p)
    cuts = [10, 20, 30]
    a = np.empty(g.num_nodes, np.int64)
    for b, piece in enumerate(np.split(g.topo_order, cuts)):
        a[piece] = b
    ref = jp.evaluate_partition(p, a).total
    z = jnp.zeros((rg.allowed.shape[0], rg.K)).at[jnp.asarray(g.units.unit_of),
                                                   jnp.asarray(a)].set(1.0)
    gaps = []
    for tau in (1.0, 0.3, 0.1, 0.03):
        lp, l1 = unit_log_probs(rg, z, tau)
        c = soft_costs(rg, lp[rg.unit_of], l1[rg.unit_of])
        gaps.append(float(np.max(np.abs(np.asarray(c["total"]) - ref) / ref.max())))
    assert all(x > y for x, y in zip(gaps, gaps[1:], strict=False)), gaps
    assert gaps[-1] < 1e-6, gaps


def test_gradient_matches_finite_differences():
    """d loss / d logits against central differences in float64 at a fixed temperature
    (directional derivative along a random direction; rtol 1e-6: eps = 1e-6 central
    differences in float64 are good to ~1e-8 relative)."""
    g = regal(seed=7, n=30)
    p = jp.Problem(g, 4, memory=float(np.mean(g.size_param) * 5), capacity=float(
        g.size_param.sum() / 2))
    cfg = RelaxConfig()
    with jax.enable_x64(True):
        rg = relax_graph(p, jnp.float64)
        key = jax.random.key(0)
        z = jax.random.normal(key, rg.allowed.shape, jnp.float64)
        d = jax.random.normal(jax.random.key(1), z.shape, jnp.float64)
        params = {"theta": z, "y": jnp.zeros(z.shape[0], jnp.float64)}
        f = jax.jit(lambda z: loss_fn(rg, dict(params, theta=z), 0.3, cfg)[0])
        grad = jax.jit(jax.grad(f))(z)
        assert grad.dtype == jnp.float64
        eps = 1e-6
        fd = (f(z + eps * d) - f(z - eps * d)) / (2 * eps)
        np.testing.assert_allclose(float(jnp.sum(grad * d)), float(fd), rtol=1e-6)
        assert np.all(np.isfinite(np.asarray(jax.grad(f)(100 * z))))  # sharp: finite
    assert not jax.config.jax_enable_x64


def _chain(n, work=1.0, size=0.0):
    return jp.CompGraph([work] * n, [(i, i + 1) for i in range(n - 1)], None, [size] * n)


def test_chain_of_equal_weights():
    """A chain of 12 equal weights, no transfers, k = 3: the optimum is 4, and both the
    decoded result and the relaxation's own argmax assignment reach it."""
    p = jp.Problem(_chain(12), 3)
    r = jp.search(p, "relax", progress=False, **SMALL)
    assert r.cost == pytest.approx(4.0, rel=1e-9)
    rg = relax_graph(p)
    cfg = RelaxConfig(**SMALL)
    orders = jnp.asarray(start_orders(p, cfg.restarts, rg.unit_of.shape[0]))
    params, _, _ = optimize(rg, jax.random.key(0), cfg, orders)
    costs = []
    for th in params["theta"]:
        a = np.asarray(jnp.argmax(th, -1))[p.graph.units.unit_of]
        try:
            costs.append(jp.evaluate_partition(p, a).bottleneck)
        except JaxplaceError:  # a cyclic quotient
            pass
    assert min(costs) == pytest.approx(4.0, rel=1e-9)


def test_two_chains_known_optimum():
    """Two independent chains of 6 nodes with heavy tensors, k = 3: the optimum puts
    each chain in its own block (cost 6, no transfers; splitting a chain costs 3 + 5);
    an order interleaving the chains pays for cut tensors. (Same padded shapes as
    the chain above: no new compile.)"""
    edges = [(i, i + 1) for i in range(5)] + [(i, i + 1) for i in range(6, 11)]
    g = jp.CompGraph([1.0] * 12, edges, None, [5.0] * 12)
    p = jp.Problem(g, 3)
    r = jp.search(p, "relax", progress=False, **SMALL)
    assert r.cost == pytest.approx(6.0, rel=1e-9)


#: The seeded case of the search tests (one graph, so the decoder compiles once).
CASE = dict(seed=11, n=40)


def test_relax_result_is_exact_and_beats_random():
    """A valid partition whose reported cost is its exact cost, with gradient steps
    reported, no worse than random search with as many evaluations (seeded)."""
    p = jp.Problem(regal(**CASE), 4)
    r = jp.search(p, "relax", budget=64, seed=0, progress=False, **SMALL)
    assert r.evaluations == 64
    assert r.info["gradient_steps"] == SMALL["restarts"] * SMALL["steps"]
    assert r.cost == pytest.approx(jp.evaluate_partition(p, r.assignment).bottleneck,
                                   rel=1e-12)
    assert r.cost == pytest.approx(decode_reference(p, r.priorities).cost, rel=1e-12)
    rnd = jp.search(p, "random", budget=64, seed=0, progress=False)
    assert r.cost <= rnd.cost


def test_registry_and_cli_know_the_methods():
    assert {"relax", "relax+brkga"} <= set(METHODS)
    assert METHODS["relax"].budget_for(jp.Problem(regal(**CASE), 4)) == 256
    with pytest.raises(JaxplaceError, match="unknown option"):
        jp.search(jp.Problem(_chain(12), 3), "relax", progress=False, no_such_option=1)


@pytest.mark.heavy
def test_relax_brkga():
    """relax+brkga spends its budget and reports exact costs no worse than its relaxed
    seeds."""
    p = jp.Problem(regal(**CASE), 4, bandwidth=0.5)
    r = jp.search(p, "relax+brkga", budget=400, seed=1, progress=False,
                  relax_share=0.2, population_size=40, **SMALL)
    assert r.method == "relax+brkga"
    assert r.evaluations <= 400
    assert r.cost <= r.info["relax_best"] * (1 + 1e-6)
    assert r.cost == pytest.approx(jp.evaluate_partition(p, r.assignment).bottleneck,
                                   rel=1e-12)


def test_optimize_compiles_once_per_shape():
    """A new problem of the same padded shapes reuses the compiled descent."""
    cfg = RelaxConfig(**SMALL)
    g = regal(**CASE)
    rg1, rg2 = (relax_graph(jp.Problem(g, 4, bandwidth=b)) for b in (1.0, 3.0))
    orders = jnp.asarray(start_orders(jp.Problem(g, 4), cfg.restarts, rg1.unit_of.shape[0]))
    optimize(rg1, jax.random.key(0), cfg, orders)
    before = optimize._cache_size()
    optimize(rg2, jax.random.key(1), cfg, orders)
    assert optimize._cache_size() == before


@pytest.mark.heavy
def test_cpu_block_problem_runs():
    """CPU blocks and unsupported nodes: a valid partition (unsupported nodes on CPUs)."""
    g = regal(seed=9, n=40)
    rng = np.random.default_rng(0)
    sup = rng.random(g.num_nodes) > 0.1
    attrs = {"cpu_latency": g.work * 3, "supported_on_accel": sup}
    g2 = jp.CompGraph(g.work, g.edges, g.size_param, g.size_out, node_attrs=attrs)
    p = jp.Problem(g2, 3, cpus=1)
    r = jp.search(p, "relax", budget=32, progress=False, **SMALL)
    cost = jp.evaluate_partition(p, r.assignment)
    assert np.isfinite(r.cost) and cost.bottleneck == pytest.approx(r.cost, rel=1e-12)
