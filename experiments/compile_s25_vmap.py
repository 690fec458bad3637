"""Tried and dropped in session 25 (`experiments/compile_s25.py --stubs vmap`): the
draws of one shape in `ShiftSearch.neighbours` and `BRKGA._ask` made by one jax.random
call vmapped over their keys (same numbers, 9 threefry hashes instead of 23 in
neighbours): a third of the HLO instructions, but a slower XLA compile (see
experiments/compile_s25.md)."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def randints(keys: jax.Array, shape: tuple, maxval: jnp.ndarray) -> jnp.ndarray:
    """(len(keys), *shape) `jax.random.randint(keys[i], shape, 0, maxval[i])` (maxval[i]
    a scalar or of `shape`), the same numbers as the separate calls, from one inlined
    threefry hash instead of one per call."""
    return jax.vmap(lambda k, hi: jax.random.randint(k, shape, 0, hi))(keys, maxval)


def neighbours(self, data, x, key):
    N, P = self.spec.width, self.batch
    n = data.nn  # () int32 real number of nodes
    k_v, k_u, k_s, k_on, k_nb, k_j = jax.random.split(key, 6)
    shape = (P, self.moves)
    nbr, deg = data.nbr  # (N, Dn) int32 undirected neighbours, (N,) int32 degree
    # Every jax.random call inlines its own threefry hash into the program (~100
    # HLO ops each, most of this method's compile): draws of one shape are made by
    # one call vmapped over their keys instead, which gives the same numbers
    # (threefry is elementwise in key and counter) from one hash.
    focus = self.focus > 0
    if focus:
        pool, cnt = data.pool
        k_f, k_a, k_b = jax.random.split(k_j, 3)
        cap = jnp.maximum(cnt, 1)
        v, u_any, a, b = randints(jnp.stack([k_v, k_u, k_a, k_b]), shape,
                                  jnp.stack([n, n, cap, cap]))
    else:
        v, u_any = randints(jnp.stack([k_v, k_u]), shape, jnp.stack([n, n]))
    near, side, on = jax.vmap(lambda k: jax.random.bernoulli(k, 0.5, shape))(
        jnp.stack([k_nb, k_s, k_on]))
    near = near & (deg[v] > 0)
    if focus:
        foc = (jnp.arange(P) < round(self.focus * P))[:, None] & (cnt > 1)
        vf = jnp.where(foc, pool[a], v)
        j, jf = randints(jnp.stack([k_j, k_f]), shape,
                         jnp.maximum(deg[jnp.stack([v, vf])], 1))
        u = jnp.where(near, nbr[v, j], u_any)
        u = jnp.where(foc, jnp.where(near, nbr[vf, jf], pool[b]), u)
        v = vf
    else:
        j = jax.random.randint(k_j, shape, 0, jnp.maximum(deg[v], 1))
        u = jnp.where(near, nbr[v, j], u_any)
    # half the canonical spacing 1 / (real units): independent of the padding
    side = jnp.where(side, 0.5, -0.5) / data.g.n
    on = on.at[:, 0].set(True)
    X = jnp.broadcast_to(x, (P, N))
    rows = jnp.arange(P)[:, None]
    if not self.spec.NX:
        new = jnp.where(on, x[u] + side, X[rows, v])
        return X.at[rows, v].set(new)
    uo = data.g.unit_of[:N]  # (width,) unit of each node (padding: N)
    for m in range(self.moves):  # move the whole unit of v
        sel = on[:, m:m + 1] & (uo[None, :] == uo[v[:, m]][:, None])
        X = jnp.where(sel, x[u[:, m]][:, None] + side[:, m:m + 1], X)
    return X


def _ask(self, key, state, params):
    pop, n = self.population_size, self.num_dims
    ne, nm = self.sizes(params)
    ranked = state.population[jnp.argsort(state.fitness)]  # (pop, n) best first
    k_mut, k_e, k_o, k_gene = jax.random.split(key, 4)
    row = jnp.arange(pop)
    # Draws of one shape come from one call vmapped over their keys: the same
    # numbers as separate calls (threefry is elementwise in key and counter) from
    # one inlined hash instead of one each, which is most of this method's compile.
    elite_parent, other_parent = jax.vmap(
        lambda k, lo, hi: jax.random.randint(k, (pop,), lo, hi))(
            jnp.stack([k_e, k_o]), jnp.stack([0, ne]), jnp.stack([ne, pop]))
    # genes drawn as (n, pop) and transposed: with jax_threefry_partitionable,
    # element (j, i) comes from counter j * pop + i, so a real gene's draw does not
    # depend on the padded width n (a problem searched alone or padded wider in a
    # search_many bucket draws the same numbers)
    if ranked.dtype == jnp.result_type(float):  # the genes' own (default) dtype
        gene, mutant = jax.vmap(
            lambda k: jax.random.uniform(k, (n, pop), dtype=ranked.dtype).T)(
                jnp.stack([k_gene, k_mut]))
    else:
        gene = jax.random.uniform(k_gene, (n, pop)).T
        mutant = jax.random.uniform(k_mut, (n, pop), dtype=ranked.dtype).T
    from_elite = gene < params.rho
    child = jnp.where(from_elite, ranked[elite_parent], ranked[other_parent])
    population = jnp.where((row < ne)[:, None], ranked,
                           jnp.where((row < ne + nm)[:, None], mutant, child))
    return population, state
