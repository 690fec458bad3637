"""The HEAD (session 24) versions of what session 25 rewrote, for A/B in one process
(`experiments/compile_s25.py --stubs old`): `ManyProgram.step` with the canonical form
by a second Kahn (`ShiftSearch.canonical`), and the n-D draws of `BRKGA._ask`
and `ShiftSearch.neighbours` (`sample_priorities` here: the flat normal draw was tried
and dropped, its float transform fused differently, 1 ulp apart)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxplace.decoder.scoring import score
from jaxplace.policy.distribution import sample_latent, squash
from jaxplace.search.brkga import State
from jaxplace.search.many.program import DONE, EVOLVE, INIT, LOCAL, ManyState
from jaxplace.search.programs import SearchData


def sample_priorities(dist, key, num):
    mean = jnp.asarray(dist["mean"], jnp.float32)
    log_std = jnp.asarray(dist["log_std"], jnp.float32)
    return squash(sample_latent(key, mean, log_std, (num,)))


def step(self, d, s):
    """One step of one problem (see the module doc)."""
    P = self.population
    key = jax.random.fold_in(d.key, s.step)
    k_ask, k_nb, k_mut = jax.random.split(key, 3)
    algo = self.algo
    params = algo.default_params
    bstate = State(population=s.pop, fitness=s.fit, best_solution=s.best_x,
                   best_fitness=s.best_f, generation_counter=s.step)
    Xb, _ = algo._ask(k_ask, bstate, params)
    ne, nm = algo.sizes(params)
    row = jnp.arange(P)[:, None]
    mutants = sample_priorities({"mean": d.mean, "log_std": d.log_std}, k_mut, P)
    Xb = jnp.where(d.coupled & (row >= ne) & (row < ne + nm), mutants, Xb)
    Xb = jnp.where(s.phase == INIT, s.pop, Xb)
    sd = SearchData(g=d.g, nbr=(d.nbr, d.deg), nn=d.nn, pool=(d.pool, d.pool_n))
    shift = self.shift
    Xl = shift.neighbours(sd, s.x, k_nb)
    Xl = Xl.at[0].set(jnp.where(jnp.isinf(s.fx), s.x, Xl[0]))
    local = s.phase == LOCAL
    X = jnp.where(local, Xl, Xb)
    f = score(self.spec, d.g, X, window=self.window)
    f = jnp.where(jnp.isnan(f), jnp.inf, f)
    active = s.phase != DONE
    evolving = s.phase <= EVOLVE
    pop = jnp.where(evolving, X, s.pop)
    fit = jnp.where(evolving, f, s.fit)
    i = jnp.argmin(f)
    take = local & (f[i] <= s.fx)
    x = jnp.where(take, shift.canonical(sd, X[i]), s.x)
    fx = jnp.where(take, f[i], s.fx)
    better = active & (f[i] < s.best_f)
    best_x = jnp.where(better, X[i], s.best_x)
    best_f = jnp.where(better, f[i], s.best_f)
    evals = s.evals + jnp.where(active, P, 0)
    last_gain = jnp.where(better, evals, s.last_gain)
    phase = jnp.where(s.phase == INIT, EVOLVE, s.phase)
    to_local = evolving & ((evals >= d.brkga_evals)
                           | (evals - last_gain >= d.brkga_patience))
    start = jnp.where(best_f <= d.f_seed, best_x, d.x_seed)
    x = jnp.where(to_local, start, x)
    fx = jnp.where(to_local, jnp.inf, fx)
    local_start = jnp.where(to_local, evals, s.local_start)
    phase = jnp.where(to_local, LOCAL, phase)
    stale = evals - jnp.maximum(last_gain, local_start) >= d.patience
    done = active & ((best_f <= d.target) | (evals + P > d.budget)
                     | ((phase == LOCAL) & stale))
    phase = jnp.where(done, DONE, phase)
    return ManyState(pop, fit, phase, evals, s.step + jnp.where(active, 1, 0), best_x,
                     best_f, last_gain, x, fx, local_start)


def neighbours(self, data, x, key):
    N, P = self.spec.width, self.batch
    n = data.nn  # () int32 real number of nodes
    k_v, k_u, k_s, k_on, k_nb, k_j = jax.random.split(key, 6)
    shape = (P, self.moves)
    v = jax.random.randint(k_v, shape, 0, n)
    nbr, deg = data.nbr  # (N, Dn) int32 undirected neighbours, (N,) int32 degree
    j = jax.random.randint(k_j, shape, 0, jnp.maximum(deg[v], 1))
    near = jax.random.bernoulli(k_nb, 0.5, shape) & (deg[v] > 0)
    u = jnp.where(near, nbr[v, j], jax.random.randint(k_u, shape, 0, n))
    if self.focus > 0:
        pool, cnt = data.pool
        k_f, k_a, k_b = jax.random.split(k_j, 3)
        foc = (jnp.arange(P) < round(self.focus * P))[:, None] & (cnt > 1)
        v = jnp.where(foc, pool[jax.random.randint(k_a, shape, 0, jnp.maximum(cnt, 1))],
                      v)
        pu = pool[jax.random.randint(k_b, shape, 0, jnp.maximum(cnt, 1))]
        j = jax.random.randint(k_f, shape, 0, jnp.maximum(deg[v], 1))
        u = jnp.where(foc, jnp.where(near, nbr[v, j], pu), u)
    # half the canonical spacing 1 / (real units): independent of the padding
    side = jnp.where(jax.random.bernoulli(k_s, 0.5, shape), 0.5, -0.5) / data.g.n
    on = jax.random.bernoulli(k_on, 0.5, shape).at[:, 0].set(True)
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
    elite_parent = jax.random.randint(k_e, (pop,), 0, ne)
    other_parent = jax.random.randint(k_o, (pop,), ne, pop)
    # genes drawn as (n, pop) and transposed: with jax_threefry_partitionable,
    # element (j, i) comes from counter j * pop + i, so a real gene's draw does not
    # depend on the padded width n (a problem searched alone or padded wider in a
    # search_many bucket draws the same numbers)
    from_elite = jax.random.uniform(k_gene, (n, pop)).T < params.rho
    child = jnp.where(from_elite, ranked[elite_parent], ranked[other_parent])
    mutant = jax.random.uniform(k_mut, (n, pop), dtype=ranked.dtype).T
    population = jnp.where((row < ne)[:, None], ranked,
                           jnp.where((row < ne + nm)[:, None], mutant, child))
    return population, state
