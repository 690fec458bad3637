"""search_many's compiled step: a group of one problem runs the step unbatched
(`program._many_chunk`), a wider group vmapped; both must give the same results."""

import numpy as np
from strategies import small_graph

import jaxplace as jp
from jaxplace.search.many import bucket_summary, search_many


def test_a_group_of_one_equals_the_vmapped_group():
    probs = [jp.Problem(small_graph(s, n), k) for s, n, k in ((0, 24, 4), (1, 30, 4),
                                                             (2, 28, 3))]
    kw = dict(exact=False, budget=600, polish=False, max_programs=1, seed=3)
    assert len(bucket_summary(probs, 1)) == 1
    alone = search_many(probs, group=1, **kw)
    together = search_many(probs, group=len(probs), **kw)
    for x, y in zip(alone, together, strict=True):
        assert np.array_equal(x.priorities, y.priorities) and x.cost == y.cost
        assert x.evaluations == y.evaluations


# -- the program's parts against their plain formulations (session 25's rewrites) ------

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from strategies import tiny_cpu_block_problems  # noqa: E402

from jaxplace.decoder.layout import device_graph  # noqa: E402
from jaxplace.decoder.scoring import score, score_orders  # noqa: E402
from jaxplace.search.brkga import BRKGA, State, flat_draw  # noqa: E402
from jaxplace.search.programs import (  # noqa: E402
    SearchData,
    ShiftSearch,
    neighbour_table,
    orders_of,
)


def test_flat_draws_are_the_shaped_draws():
    shape = (37, 3)

    @jax.jit
    def pairs(key, hi):
        return [
            (flat_draw(jax.random.randint, key, shape, minval=0, maxval=hi),
             jax.random.randint(key, shape, 0, hi)),
            (flat_draw(jax.random.randint, key, shape, minval=2, maxval=7),
             jax.random.randint(key, shape, 2, 7)),
            (flat_draw(jax.random.bernoulli, key, shape, p=0.5),
             jax.random.bernoulli(key, 0.5, shape)),
            (flat_draw(jax.random.uniform, key, (5, 41), dtype=jnp.float32),
             jax.random.uniform(key, (5, 41))),
        ]

    for seed in range(3):
        hi = jax.random.randint(jax.random.key(99 + seed), shape, 0, 9)
        for a, b in pairs(jax.random.key(seed), hi):
            assert a.shape == b.shape and bool(jnp.all(a == b))


def _plain_neighbours(self, data, x, key):
    """`ShiftSearch.neighbours` as one jax.random call per n-D draw (before session 25)."""
    N, P = self.spec.width, self.batch
    n = data.nn
    k_v, k_u, k_s, k_on, k_nb, k_j = jax.random.split(key, 6)
    shape = (P, self.moves)
    v = jax.random.randint(k_v, shape, 0, n)
    nbr, deg = data.nbr
    j = jax.random.randint(k_j, shape, 0, jnp.maximum(deg[v], 1))
    near = jax.random.bernoulli(k_nb, 0.5, shape) & (deg[v] > 0)
    u = jnp.where(near, nbr[v, j], jax.random.randint(k_u, shape, 0, n))
    if self.focus > 0:
        pool, cnt = data.pool
        k_f, k_a, k_b = jax.random.split(k_j, 3)
        foc = (jnp.arange(P) < round(self.focus * P))[:, None] & (cnt > 1)
        v = jnp.where(foc, pool[jax.random.randint(k_a, shape, 0, jnp.maximum(cnt, 1))], v)
        pu = pool[jax.random.randint(k_b, shape, 0, jnp.maximum(cnt, 1))]
        j = jax.random.randint(k_f, shape, 0, jnp.maximum(deg[v], 1))
        u = jnp.where(foc, jnp.where(near, nbr[v, j], pu), u)
    side = jnp.where(jax.random.bernoulli(k_s, 0.5, shape), 0.5, -0.5) / data.g.n
    on = jax.random.bernoulli(k_on, 0.5, shape).at[:, 0].set(True)
    X = jnp.broadcast_to(x, (P, N))
    rows = jnp.arange(P)[:, None]
    new = jnp.where(on, x[u] + side, X[rows, v])
    return X.at[rows, v].set(new)


def _plain_ask_draws(key, pop, n, ne):
    k_mut, k_e, k_o, k_gene = jax.random.split(key, 4)
    return (jax.random.randint(k_e, (pop,), 0, ne), jax.random.randint(k_o, (pop,), ne, pop),
            jax.random.uniform(k_gene, (n, pop)).T, jax.random.uniform(k_mut, (n, pop)).T)


def test_neighbours_and_ask_draw_what_the_plain_calls_draw():
    problem = jp.Problem(small_graph(5, 30), 4)
    spec, g = device_graph(problem)
    nbr, deg = neighbour_table(problem, spec.width)
    pool = jnp.zeros(spec.width, jnp.int32).at[:6].set(jnp.array([3, 4, 9, 10, 11, 20]))
    x = jax.random.uniform(jax.random.key(1), (spec.width,))
    for focus, cnt in ((0.0, 0), (0.5, 6), (0.5, 1)):
        sh = ShiftSearch(spec, 16, 3, focus)
        data = SearchData(g=g, nbr=(nbr, deg), nn=jnp.int32(problem.n),
                          pool=(pool, jnp.int32(cnt)))
        pair = jax.jit(lambda d, x, k, sh=sh: (sh.neighbours(d, x, k),
                                               _plain_neighbours(sh, d, x, k)))
        for t in range(3):
            a, b = pair(data, x, jax.random.key(10 + t))
            assert bool(jnp.all(a == b))
    pop, n = 20, 33
    algo = BRKGA(pop, jnp.zeros(n, jnp.float32))
    params = algo.default_params
    P0 = jax.random.uniform(jax.random.key(2), (pop, n))
    fit = jax.random.uniform(jax.random.key(3), (pop,))
    state = State(population=P0, fitness=fit, best_solution=P0[0], best_fitness=0.0,
                  generation_counter=0)
    ne, nm = (int(a) for a in algo.sizes(params))
    ask = jax.jit(lambda k, s: algo._ask(k, s, params)[0])
    for t in range(3):
        key = jax.random.key(20 + t)
        got = ask(key, state)
        e, o, gene, mutant = _plain_ask_draws(key, pop, n, ne)
        ranked = P0[jnp.argsort(fit)]
        child = jnp.where(gene < params.rho, ranked[e], ranked[o])
        row = jnp.arange(pop)[:, None]
        want = jnp.where(row < ne, ranked, jnp.where(row < ne + nm, mutant, child))
        assert bool(jnp.all(got == want))


@settings(max_examples=5, deadline=None)
@given(tiny_cpu_block_problems(max_nodes=6))
def test_the_decoders_orders_are_kahns(problem):
    """`score_orders` hands out the Kahn orders it sliced: the canonical form of a
    scored candidate is the one a second Kahn (`ShiftSearch.canonical`) gives."""
    spec, g = device_graph(problem)
    X = jax.random.uniform(jax.random.key(problem.n), (6, spec.width))
    X = X.at[1].set(X[0]).at[2].set(0.5)  # ties, broken by the node index
    sh = ShiftSearch(spec, 6)

    @jax.jit
    def both(g, X):
        data = SearchData(g=g)
        f, orders = score_orders(spec, g, X)
        return (f, score(spec, g, X), orders.T, orders_of(spec, g, X),
                jax.vmap(sh.canonical_order, (None, 1))(data, orders),
                jax.vmap(sh.canonical, (None, 0))(data, X))

    f, f0, orders, orders0, x, x0 = (np.asarray(a) for a in both(g, X))
    assert np.array_equal(f, f0, equal_nan=True)
    assert np.array_equal(orders, orders0) and np.array_equal(x, x0)
