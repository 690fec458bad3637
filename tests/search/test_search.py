"""Search: BRKGA (evosax interface), the compiled driver, methods, and optimality."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from brute import brute_force_optimum
from strategies import same_cost, small_graph, tiny_problem

import jaxplace as jp
from jaxplace.search import ALGORITHMS, BRKGA, METHODS, Result, search
from jaxplace.search import driver as driver_mod
from jaxplace.search.baselines import (
    dfs_order,
    order_to_priorities,
    random_reference,
    seed_priorities,
)
from jaxplace.search.programs import SearchData, arrangement_cost, arrangement_edges

# float32 decoder costs versus the float64 reference: sums of <= n float32 terms.
RTOL = 1e-5


# -- BRKGA: evosax interface ------------------------------------------------------------


def _brkga(pop=20, n=7):
    algo = BRKGA(population_size=pop, solution=jnp.zeros(n))
    return algo, algo.default_params


def _sphere(X):
    return jnp.sum((X - 0.3) ** 2, axis=1)


def test_brkga_ask_tell_shapes_and_layout():
    algo, params = _brkga()
    key = jax.random.key(0)
    X0 = jax.random.uniform(key, (20, 7))
    f0 = _sphere(X0)
    state = algo.init(key, X0, f0, params)
    X, state = algo.ask(jax.random.key(1), state, params)
    assert X.shape == (20, 7) and X.dtype == jnp.float32
    # elites first: the 4 best of X0 (20% of 20), best first, unchanged
    np.testing.assert_array_equal(np.asarray(X[:4]), np.asarray(X0[jnp.argsort(f0)[:4]]))
    # mutants (10%: 2) are fresh keys in [0, 1); offspring genes come from the parents
    assert np.all((np.asarray(X) >= 0) & (np.asarray(X) < 1))
    parents = np.asarray(X0)
    for row in np.asarray(X[6:]):
        assert all(np.any(parents[:, j] == row[j]) for j in range(7))
    state, metrics = algo.tell(jax.random.key(2), X, _sphere(X), state, params)
    assert state.population.shape == (20, 7) and state.fitness.shape == (20,)
    assert int(state.generation_counter) == 1
    assert float(metrics["best_fitness"]) <= float(jnp.min(f0))


def test_brkga_elites_survive_and_improve_monotonically():
    algo, params = _brkga()
    key = jax.random.key(3)
    X = jax.random.uniform(key, (20, 7))
    state = algo.init(key, X, _sphere(X), params)
    best = []
    for _ in range(30):
        k1, k2, key = jax.random.split(key, 3)
        X, state = algo.ask(k1, state, params)
        f = _sphere(X)
        best.append(float(jnp.min(f)))
        state, _ = algo.tell(k2, X, f, state, params)
    assert all(b2 <= b1 for b1, b2 in zip(best, best[1:], strict=False))
    assert best[-1] < best[0]


def test_brkga_jit_no_recompile_and_deterministic():
    algo, params = _brkga()
    key = jax.random.key(0)
    X0 = jax.random.uniform(key, (20, 7))
    state = algo.init(key, X0, _sphere(X0), params)
    X1, _ = algo.ask(jax.random.key(5), state, params)
    size = BRKGA.ask._cache_size()
    for s in range(3):
        X, st2 = algo.ask(jax.random.key(10 + s), state, params)
        state, _ = algo.tell(jax.random.key(20 + s), X, _sphere(X), st2, params)
    # tuned hyperparameters are traced, not static: no recompile either
    algo.ask(jax.random.key(7), state, params.replace(rho=0.9, elite_fraction=0.3))
    assert BRKGA.ask._cache_size() == size
    X2, _ = algo.ask(jax.random.key(5), algo.init(key, X0, _sphere(X0), params), params)
    np.testing.assert_array_equal(np.asarray(X1), np.asarray(X2))
    X3, _ = algo.ask(jax.random.key(6), algo.init(key, X0, _sphere(X0), params), params)
    assert not np.array_equal(np.asarray(X1), np.asarray(X3))


def test_brkga_scans_and_vmaps_over_params():
    algo, params = _brkga()
    key = jax.random.key(0)
    X0 = jax.random.uniform(key, (20, 7))
    state = algo.init(key, X0, _sphere(X0), params)

    def run(params, state):
        def body(state, k):
            k1, k2 = jax.random.split(k)
            X, state = algo.ask(k1, state, params)
            state, m = algo.tell(k2, X, _sphere(X), state, params)
            return state, m["best_fitness"]
        return jax.lax.scan(body, state, jax.random.split(key, 10))[1]

    rhos = params.replace(rho=jnp.array([0.5, 0.7, 0.9]))
    out = jax.jit(jax.vmap(run, in_axes=(jax.tree.map(lambda x: 0 if jnp.ndim(x) else None,
                                                       rhos), None)))(rhos, state)
    assert out.shape == (3, 10)


def test_brkga_rejects_bad_fractions():
    with pytest.raises(ValueError):
        BRKGA(population_size=10, solution=jnp.zeros(3), elite_fraction=1.0)


# -- search methods ---------------------------------------------------------------------

REQUIRED = ["default", "random", "brkga", "mla", "mla-weighted", "dfs", "SimpleGA",
            "CMA_ES", "DifferentialEvolution", "PSO", "Open_ES"]
# compile time dominates these tests: the slowest-compiling algorithms run with -m heavy
HEAVY = {"DifferentialEvolution", "PSO", "Open_ES"}
SMALL = dict(budget=400, population_size=20, progress=False)


def test_registry_holds_required_algorithms():
    for name in ["BRKGA", "SimpleGA", "CMA_ES", "DifferentialEvolution", "PSO", "Open_ES"]:
        assert name in ALGORITHMS
    assert set(REQUIRED) <= set(METHODS) | {"brkga"}


@pytest.mark.parametrize("method", [pytest.param(m, marks=pytest.mark.heavy) if m in HEAVY
                                    else m for m in REQUIRED])
def test_every_method_returns_a_consistent_result(method):
    p = jp.Problem(small_graph(1), 3)
    r = search(p, method, budget=400, population_size=20, seed=0, progress=False)
    assert isinstance(r, Result)
    cost = jp.evaluate_partition(p, r.partition.assignment)
    assert cost.feasible
    assert same_cost(r.cost, cost.bottleneck)
    assert r.cost >= jp.simple_lower_bound(p) * (1 - 1e-12)
    # the priorities decode (float64 reference) to the reported cost
    ref = jp.reference.decode_reference(p, r.priorities)
    assert np.isclose(ref.cost, r.cost, rtol=RTOL)
    assert r.priorities.shape == (p.n,) and r.priorities.dtype == np.float32
    assert 1 <= r.evaluations <= 1200
    assert r.wall_time > 0
    if method not in ("dfs", "mla", "mla-weighted"):  # mla's history is the arrangement
        h = r.history
        assert len(h) >= 1 and np.all(np.diff(h.best) <= 0) and np.all(np.diff(h.evaluations) > 0)
        assert np.isclose(h.best[-1], r.cost, rtol=RTOL)


def test_method_names_case_insensitive_and_unknown():
    p = jp.Problem(small_graph(1), 3)  # same shapes as above: compiled chunks are reused
    assert search(p, "BRKGA", **SMALL).method == "brkga"
    assert search(p, "cma_es", **SMALL).method == "CMA_ES"
    with pytest.raises(jp.JaxplaceError, match="unknown method"):
        search(p, "annealing-42")
    with pytest.raises(jp.JaxplaceError):
        search(p, "brkga", budget=0)


def test_seeded_determinism():
    p = jp.Problem(small_graph(3), 3)
    a = search(p, "brkga", seed=7, **SMALL)
    b = search(p, "brkga", seed=7, **SMALL)
    np.testing.assert_array_equal(a.priorities, b.priorities)
    assert a.cost == b.cost
    np.testing.assert_array_equal(a.history.best, b.history.best)


def test_brkga_beats_its_first_population():
    from jaxplace.generators import regal

    p = jp.Problem(regal(3, n=60), 8)  # random keys are far from optimal here
    r = search(p, "brkga", budget=2000, population_size=40, seed=0, progress=False)
    assert r.history.best[-1] < r.history.best[0]


def test_random_best_matches_reference_oracle():
    p = jp.Problem(small_graph(5), 3)
    r = search(p, "random", budget=300, seed=1, progress=False)
    assert np.isclose(jp.reference.evaluate_reference(p, r.priorities[None])[0], r.cost, rtol=RTOL)
    part, done, x = random_reference(p, 50, seed=1, time_limit=None, progress=False)
    assert done == 50 and np.isclose(jp.reference.decode_reference(p, x).cost, part.cost)


def test_time_limit_and_target_stop_early():
    p = jp.Problem(small_graph(6, n=40), 4)
    lb = jp.simple_lower_bound(p)
    r = search(p, "brkga", budget=10**6, target_ratio=100.0, progress=False)
    assert 100 <= r.evaluations <= 4000 and not r.interrupted and r.cost <= 100 * lb
    # the initial population is evaluated inside the first compiled chunk (compiled
    # above: under a time limit a call still compiling past it answers with its
    # first solution, jaxplace.search.deadline)
    r = search(p, "brkga", budget=10**6, time_limit=1e-9, progress=False)  # > 0: required
    assert r.interrupted and 100 <= r.evaluations <= 4000


def test_ctrl_c_keeps_best(monkeypatch):
    p = jp.Problem(small_graph(7, n=40), 4)
    calls = {"n": 0}
    real = driver_mod._postfix

    def flaky(pbar, best, lb):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real(pbar, best, lb)

    monkeypatch.setattr(driver_mod, "_postfix", flaky)
    r = search(p, "brkga", budget=100_000, population_size=20, progress=False)
    assert r.interrupted and r.evaluations < 100_000
    assert np.isclose(jp.reference.decode_reference(p, r.priorities).cost, r.cost, rtol=RTOL)


def test_user_seeds_enter_the_population():
    g = small_graph(8)
    p = jp.Problem(g, 3)
    x = order_to_priorities(dfs_order(g))
    r = search(p, "brkga", budget=20, population_size=20, seeds=x[None], progress=False)
    assert r.cost <= jp.reference.decode_reference(p, x).cost * (1 + RTOL)


# -- baselines --------------------------------------------------------------------------


def test_dfs_and_level_orders_are_topological():
    g = small_graph(9, n=30)
    order = dfs_order(g)
    jp.reference.check_order(g, order)  # raises if not a topological order
    np.testing.assert_array_equal(jp.reference.kahn(g, order_to_priorities(order)), order)
    seeds = seed_priorities(g)
    assert seeds.shape == (3, g.num_nodes)
    pos = np.empty(g.num_nodes, int)
    for x in seeds:
        pos[jp.reference.kahn(g, x)] = np.arange(g.num_nodes)
        assert np.all(pos[g.edges[:, 0]] < pos[g.edges[:, 1]])


@pytest.mark.parametrize("weighted", [False, True])
def test_arrangement_cost_matches_numpy(weighted):
    from jaxplace.decoder import device_graph

    g = small_graph(10, n=20)
    p = jp.Problem(g, 2)
    spec, dg = device_graph(p)
    data = SearchData(g=dg, la=arrangement_edges(p, weighted))
    X = np.asarray(jax.random.uniform(jax.random.key(0), (5, spec.width)), np.float32)
    got = np.asarray(arrangement_cost(spec, data, jnp.asarray(X)))
    for x, c in zip(X, got, strict=True):
        pos = np.empty(g.num_nodes, int)
        pos[jp.reference.kahn(g, x[:g.num_nodes])] = np.arange(g.num_nodes)
        want = 0.0
        for t in range(g.num_tensors):
            u = g.tensor_producer[t]
            for v in g.tensor_consumers[g.tensor_ptr[t]:g.tensor_ptr[t + 1]]:
                want += (g.tensor_size[t] if weighted else 0) * abs(pos[u] - pos[v])
        if not weighted:
            want = sum(abs(pos[u] - pos[v]) for u, v in g.edges)
        assert np.isclose(c, want, rtol=RTOL)


# -- optimality on tiny graphs -----------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, pytest.param(3, marks=pytest.mark.heavy),
                                  pytest.param(4, marks=pytest.mark.heavy),
                                  pytest.param(5, marks=pytest.mark.heavy)])
def test_default_search_finds_brute_force_optimum(seed):
    p = tiny_problem(seed)
    opt = brute_force_optimum(p)
    r = search(p, seed=seed, progress=False)
    assert same_cost(r.cost, opt, rtol=1e-6), (r.cost, opt)


# -- driver details, default-search pieces -----------------------------------------------


def test_chunk_size_divides_the_steps_when_it_can():
    from jaxplace.search.driver import _chunk_size

    assert _chunk_size(99, 21) == 11 and 99 % _chunk_size(99, 21) == 0
    assert _chunk_size(5, 21) == 5
    assert _chunk_size(97, 21) == 21  # prime: no divisor nearby, drops < 21 steps
    assert _chunk_size(0, 8) == 1


def test_brkga_spends_exactly_its_budget():
    p = jp.Problem(small_graph(1), 3)
    r = search(p, "brkga", budget=400, population_size=20, seed=0, progress=False)
    assert r.evaluations == 400
    assert r.history.evaluations[0] == 20 and r.history.evaluations[-1] == 400


def test_patience_stops_a_stagnating_search():
    g = jp.CompGraph(np.ones(6), [(i, i + 1) for i in range(5)])  # a path: one order
    p = jp.Problem(g, 2)
    r = search(p, budget=50_000, progress=False)  # default: stagnation stop
    assert r.evaluations < 50_000 and not r.interrupted
    assert same_cost(r.cost, brute_force_optimum(p), rtol=1e-6)


def test_bottleneck_pool_holds_the_bottleneck_block_and_its_neighbours():
    from jaxplace.search import bottleneck_pool

    p = jp.Problem(small_graph(2, n=30), 5)
    x = np.random.default_rng(0).random(p.n).astype(np.float32)
    part = jp.reference.decode_reference(p, x)
    cost = jp.evaluate_partition(p, part.assignment)
    pool, cnt = bottleneck_pool(p, x, 32)
    nodes = set(np.asarray(pool)[:int(cnt)].tolist())
    b = int(np.argmax(cost.total))
    assert set(np.flatnonzero(part.assignment == b).tolist()) <= nodes
    seq = part.assignment[part.order]
    neighbours = {int(c) for i in range(1, len(seq)) if seq[i - 1] != seq[i]
                  and b in (seq[i - 1], seq[i]) for c in (seq[i - 1], seq[i])} - {b}
    assert neighbours
    want = set(np.flatnonzero(np.isin(part.assignment, [b, *neighbours])).tolist())
    assert nodes == want


def test_seeds_put_free_units_next_to_their_tensor_partner():
    # training-like graph: 0 -> 1 -> 2 forward; 3 is a backward node of its own colour
    # class with no ordering edge (a "free" unit) that exchanges a big tensor with 1
    g = jp.CompGraph([1.0, 1.0, 1.0, 1.0], [(0, 1), (1, 2), (1, 3)],
                     size_out=[0.1, 5.0, 0.1, 0.0],
                     node_attrs={"is_backward": np.array([False, False, False, True]),
                                 "color_class": np.array([-1, -1, -1, 9])})
    units = g.units
    assert units.num_units == 4
    for x in seed_priorities(g):
        up = np.asarray(x)[np.asarray([units.unit_members(u)[0] for u in range(4)])]
        order = jp.reference.kahn(jp.CompGraph(np.ones(4), [(0, 1), (1, 2)]), up)
        pos = {int(v): i for i, v in enumerate(order)}
        assert pos[3] == pos[1] + 1, order


def test_shift_search_focus_keeps_the_best_and_reports_it():
    from jaxplace.search import shift_search

    p = jp.Problem(small_graph(1), 3)
    x0 = np.random.default_rng(1).random(p.n).astype(np.float32)
    f0 = jp.reference.decode_reference(p, x0).cost
    out = shift_search(p, x0, steps=16, batch=64, focus=0.5, chunk=8, seed=0)
    assert out.evaluations == 16 * 64
    assert out.best_f <= f0 * (1 + RTOL)
    ref = jp.reference.decode_reference(p, out.best_x[:p.n])
    assert np.isclose(ref.cost, out.best_f, rtol=RTOL)


# -- compiled-code reuse ---------------------------------------------------------------


def test_driver_chunk_and_decoder_compile_once_per_shape():
    from compiles import count_compiles

    from jaxplace.decoder import problem_spec

    a = jp.Problem(small_graph(1), 3)
    # the block window is part of the program and depends on the graph's first
    # solution: without it, graphs of one shape class share the program
    search(a, "brkga", seed=0, windowed=False, **SMALL)
    rng_seed = 100
    b = None
    while b is None:  # another graph in the same padded bucket
        cand = jp.Problem(small_graph(rng_seed), 3)
        if problem_spec(cand) == problem_spec(a):
            b = cand
        rng_seed += 1
    with count_compiles() as counts:
        search(a, "brkga", seed=1, windowed=False, **SMALL)
        search(b, "brkga", seed=2, windowed=False, **SMALL)
    assert counts["_loop_chunk"] == 0, counts


def test_score_fn_traces_once_per_shape():
    import chex

    p = jp.Problem(small_graph(2), 3)
    ev = jp.Evaluator(p)
    fn = jax.jit(chex.assert_max_traces(ev.score_fn(), n=1))
    rng = np.random.default_rng(0)
    for _ in range(3):
        X = rng.random((16, p.n)).astype(np.float32)
        got = np.asarray(fn(X), np.float64)
        np.testing.assert_allclose(got, jp.reference.evaluate_reference(p, X), rtol=RTOL)


def test_stop_rule_cancel_and_observer():
    import threading

    from jaxplace.search import Progress, StopRule

    p = jp.Problem(small_graph(7, n=40), 4)
    cancel = threading.Event()
    seen = []

    def observer(ev: Progress):
        seen.append(ev)
        if len(seen) == 3:
            cancel.set()

    r = search(p, "brkga", budget=100_000, population_size=20, progress=False,
               stop=StopRule(cancel=cancel), observer=observer)
    # a first solution (the DFS linearization) comes before anything compiles
    assert seen[0].phase == "dfs" and seen[0].evaluations == 1
    assert r.interrupted and r.evaluations < 100_000 and len(seen) == 3
    assert seen[-1].best_x.shape == (p.n,)
    assert r.evaluations - seen[-1].evaluations in (0, 1)
    assert r.cost <= min(e.best_cost for e in seen) * (1 + RTOL)
    for e in seen:
        ref = jp.reference.decode_reference(p, e.best_x).cost
        assert np.isclose(ref, e.best_cost, rtol=RTOL)


def test_registry_methods_share_one_calling_convention():
    from jaxplace.search import METHODS, Method
    from jaxplace.search.request import finish

    def run(req):
        return finish(req, "mine", np.zeros(req.problem.n), 1, jp.search.History.empty(),
                      False)

    METHODS["mine-test"] = Method("mine-test", run, 1)
    try:
        r = search(jp.Problem(small_graph(1), 3), "mine-test", progress=False)
        assert r.method == "mine" and r.evaluations == 1
    finally:
        del METHODS["mine-test"]


def test_time_limit_shortens_chunks_without_recompiling():
    from compiles import count_compiles

    p = jp.Problem(small_graph(6, n=40), 4)
    search(p, "brkga", budget=2000, population_size=20, progress=False)  # compile
    with count_compiles() as counts:
        r = search(p, "brkga", budget=10**7, population_size=20, time_limit=1.5,
                   progress=False)
    assert r.interrupted and counts["_loop_chunk"] == 0, counts
    assert r.wall_time < 1.5 * 1.25 + 0.5, r.wall_time  # generous: CI machines are noisy


def test_observer_reports_the_best_of_all_phases():
    p = jp.Problem(small_graph(4, n=40), 8)
    seen = []
    r = search(p, budget=3000, progress=False, observer=seen.append, search_only=True)
    costs = [e.best_cost for e in seen]
    assert seen[0].phase == "dfs" and {"brkga", "local"} & {e.phase for e in seen}
    assert all(b <= a for a, b in zip(costs, costs[1:], strict=False))
    assert r.cost <= costs[-1] * (1 + RTOL)


# -- policy-driven methods (the shipped checkpoint) --------------------------------------


@pytest.mark.parametrize("method", ["policy", "policy+brkga"])
def test_policy_methods_return_consistent_results(method):
    p = jp.Problem(small_graph(1), 3)
    r = search(p, method, budget=200, population_size=20, seed=0, progress=False)
    assert r.method == method and r.evaluations == 200 and r.info["policy"] == "gnn-v3"
    cost = jp.evaluate_partition(p, r.partition.assignment)
    assert cost.feasible and same_cost(r.cost, cost.bottleneck)
    assert np.isclose(jp.reference.decode_reference(p, r.priorities).cost, r.cost,
                      rtol=RTOL)
    # the first candidate is the policy's mode: one evaluation gives exactly it
    one = search(p, method if method == "policy" else "policy", budget=1, progress=False)
    assert one.evaluations == 1 and r.cost <= one.cost * (1 + RTOL)


def test_default_search_coupled_with_the_policy():
    p = jp.Problem(small_graph(1), 3)
    seen = []
    r = search(p, budget=600, population_size=20, seed=0, progress=False,
               use_policy=True, observer=seen.append, search_only=True)
    assert "policy+brkga" in {e.phase for e in seen}
    assert r.method == "default" and r.evaluations <= 600 and r.info["policy"] == "gnn-v3"
    assert "policy" not in search(p, budget=600, population_size=20, seed=0, progress=False,
                                  use_policy=False).info
    cost = jp.evaluate_partition(p, r.partition.assignment)
    assert cost.feasible and same_cost(r.cost, cost.bottleneck)
    # its first population holds the policy's mode, so it is never worse than it
    one = search(p, "policy", budget=1, progress=False)
    assert r.cost <= one.cost * (1 + RTOL)


def test_shipped_policy_is_chosen_by_the_problem():
    # graphs with colocation classes get the training-graph policy (the orphan one
    # when some unit is free), every other graph gnn-v3; the search methods follow
    from jaxplace.generators import training_graph
    from jaxplace.policy import (
        COLOCATION_POLICY,
        DEFAULT_POLICY,
        ORPHAN_POLICY,
        default_policy_name,
        default_policy_path,
        load_policy,
    )

    plain = jp.Problem(small_graph(1), 3)
    coloc = jp.Problem(training_graph(small_graph(0), seed=0), 3)
    orphan = jp.Problem(training_graph(small_graph(0), seed=0, orphan=0.3), 3)
    assert coloc.graph.units.num_units < coloc.n and plain.graph.units.trivial
    assert len(coloc.graph.units.free_units()) == 0 < len(orphan.graph.units.free_units())
    assert orphan.graph.units.has_free_units
    assert not coloc.graph.units.has_free_units and not plain.graph.units.has_free_units
    assert default_policy_name(plain) == default_policy_name() == DEFAULT_POLICY
    assert default_policy_name(coloc) == COLOCATION_POLICY != DEFAULT_POLICY
    assert default_policy_name(orphan) == ORPHAN_POLICY != COLOCATION_POLICY
    assert load_policy(problem=coloc).path == str(default_policy_path(COLOCATION_POLICY))
    assert load_policy(problem=orphan).path == str(default_policy_path(ORPHAN_POLICY))
    modes = {}
    for p, name in ((plain, DEFAULT_POLICY), (coloc, COLOCATION_POLICY),
                    (orphan, ORPHAN_POLICY)):
        routed = search(p, "policy", budget=1, seed=0, progress=False)
        named = search(p, "policy", budget=1, seed=0, progress=False,
                       policy=str(default_policy_path(name)))
        assert np.array_equal(routed.priorities, named.priorities)
        assert (routed.info["policy"], named.info["policy"]) == (
            name, str(default_policy_path(name)))
        modes[name] = routed.priorities
    # the default search couples the same policy
    r = search(orphan, budget=300, population_size=20, seed=0, progress=False,
               use_policy=True, search_only=True)
    assert r.info["policy"] == ORPHAN_POLICY
    # the policies give different modes on the same training graphs
    for p, name, other in ((coloc, COLOCATION_POLICY, DEFAULT_POLICY),
                           (orphan, ORPHAN_POLICY, COLOCATION_POLICY)):
        r = search(p, "policy", budget=1, seed=0, progress=False,
                   policy=str(default_policy_path(other)))
        assert not np.array_equal(modes[name], r.priorities)


def test_policy_brkga_starts_from_the_heuristic_orders_on_graphs_with_free_units():
    # on graphs with free units the first population holds the DFS / ASAP / ALAP
    # orders (free units placed), so the result is never worse than any of them
    from jaxplace.generators import training_graph
    from jaxplace.search.baselines import seed_priorities
    from jaxplace.search.policy import _to_keys, heuristic_seeds_apply

    plain = jp.Problem(small_graph(1), 3)
    orphan = jp.Problem(training_graph(small_graph(0), seed=0, orphan=0.3), 3)
    assert not heuristic_seeds_apply(plain) and heuristic_seeds_apply(orphan)
    assert heuristic_seeds_apply(plain, True) and not heuristic_seeds_apply(orphan, False)
    seeds = seed_priorities(orphan.graph)
    for x in seeds:  # keys in (0, 1) with the same order and ties
        y = _to_keys(x)
        assert 0 < y.min() and y.max() < 1
        assert np.array_equal(np.sign(x[:, None] - x[None]), np.sign(y[:, None] - y[None]))
    best = min(jp.reference.decode_reference(orphan, x).cost for x in seeds)
    for h in (None, True):
        r = search(orphan, "policy+brkga", budget=40, population_size=20, seed=0,
                   progress=False, heuristic_seeds=h)
        assert r.cost <= best * (1 + RTOL)
    # the option is consumed by the method, not handed to the evolutionary algorithm
    off = search(orphan, "policy+brkga", budget=40, population_size=20, seed=0,
                 progress=False, heuristic_seeds=False)
    assert off.evaluations == 40 and off.info["policy"] == "gnn-v4-train"



def test_policy_means_are_anchored_to_the_dfs_order_on_graphs_with_free_units():
    from jaxplace.generators import training_graph
    from jaxplace.policy import dfs_ranks, load_policy, node_distribution
    from jaxplace.search.baselines import seed_priorities
    from jaxplace.search.policy import DFS_ANCHOR, dfs_anchor_for

    plain = jp.Problem(small_graph(1), 3)
    orphan = jp.Problem(training_graph(small_graph(0), seed=0, orphan=0.3), 3)
    a = dfs_ranks(orphan)
    assert a.min() >= -1 and a.max() <= 1 and a.shape == (orphan.n,)
    x = seed_priorities(orphan.graph)[0]
    assert np.array_equal(np.sign(x[:, None] - x[None]), np.sign(a[:, None] - a[None]))
    u = orphan.graph.units.unit_of  # a unit's members share its rank
    for k in np.unique(u):
        assert np.ptp(a[u == k]) == 0
    r = dfs_ranks(plain)  # no ties: exactly evenly spaced from 1 (first) to -1
    np.testing.assert_allclose(np.sort(r), np.linspace(-1, 1, plain.n), atol=1e-12)
    pol = load_policy(problem=orphan)
    raw, anchored = node_distribution(pol, orphan), node_distribution(pol, orphan, 0.5)
    np.testing.assert_allclose(anchored["mean"], raw["mean"] + 0.5 * a, atol=1e-6)
    np.testing.assert_array_equal(anchored["log_std"], raw["log_std"])
    assert dfs_anchor_for(orphan) == DFS_ANCHOR > 0 and dfs_anchor_for(plain) == 0
    assert dfs_anchor_for(orphan, coupled=True) == 0  # policy+brkga: off by default
    assert dfs_anchor_for(plain, "0.25") == 0.25
    # the search methods sample from the anchored distribution and say so
    for method, default in (("policy", DFS_ANCHOR), ("policy+brkga", 0.0)):
        kw = dict(budget=40, population_size=20, seed=0, progress=False)
        auto = search(orphan, method, **kw)
        off = search(orphan, method, dfs_anchor=0, **kw)
        on = search(orphan, method, dfs_anchor=2, **kw)
        assert auto.info.get("dfs_anchor", 0.0) == default
        assert "dfs_anchor" not in off.info and on.info["dfs_anchor"] == 2
    one = search(orphan, "policy", budget=1, progress=False)
    mode = 1 / (1 + np.exp(-(raw["mean"] + DFS_ANCHOR * a)))
    assert np.isclose(one.cost, jp.reference.decode_reference(orphan, mode).cost,
                      rtol=RTOL)
    assert "dfs_anchor" not in search(plain, "policy", budget=1, progress=False).info
    with pytest.raises(jp.JaxplaceError, match="dfs_anchor"):
        search(orphan, "policy", budget=1, progress=False, dfs_anchor="nan")


def test_policy_method_reports_a_bad_checkpoint(tmp_path):
    p = jp.Problem(small_graph(1), 3)
    with pytest.raises(jp.JaxplaceError, match="missing|not found|no such"):
        search(p, "policy", budget=10, policy=str(tmp_path / "nope"), progress=False)


def test_balanced_first_solution_for_huge_graphs(monkeypatch):
    from jaxplace.objectives.throughput import search as throughput_search

    g = small_graph(3, n=40)
    p = jp.Problem(g, 4)
    part = throughput_search.balanced_cut(p, dfs_order(g))
    cost = jp.evaluate_partition(p, part.assignment)
    assert cost.feasible and same_cost(part.cost, cost.bottleneck)
    assert part.num_blocks == 4 and sorted(set(part.assignment.tolist())) == [0, 1, 2, 3]
    monkeypatch.setattr(throughput_search, "FIRST_SOLUTION_MAX_NODES", 10)
    seen = []
    r = search(p, "brkga", budget=40, population_size=20, progress=False,
               observer=seen.append)
    assert seen[0].phase == "dfs" and seen[0].partition is not None
    assert same_cost(seen[0].best_cost, part.cost)
    assert r.cost <= part.cost * (1 + RTOL)
