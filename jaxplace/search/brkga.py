"""Biased random-key genetic algorithm (BRKGA) as an evosax population-based algorithm.

Goncalves and Resende, "Biased random-key genetic algorithms for combinatorial
optimization", J. Heuristics 17 (2011); used for pipeline partitioning by Archer et
al. (ICML 2024).

Each generation keeps the elite fraction of the population unchanged, adds fresh
uniform mutants, and fills the rest by biased uniform crossover of one elite and one
non-elite parent: each gene comes from the elite parent with probability `rho`.

The elite and mutant fractions and `rho` live in `Params` (traced, so they can be
vmapped or tuned without recompiling); only the population size is static. The
population returned by `ask` is laid out as [elites (best first), mutants, offspring].
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from evosax.algorithms.population_based.base import Params as BaseParams
from evosax.algorithms.population_based.base import PopulationBasedAlgorithm, metrics_fn
from evosax.algorithms.population_based.base import State as BaseState
from evosax.core.fitness_shaping import identity_fitness_shaping_fn
from evosax.types import Fitness, Population, Solution
from flax import struct


@struct.dataclass
class State(BaseState):
    population: Population  # (pop, n) float32 random keys in [0, 1)
    fitness: Fitness  # (pop,) float32, lower is better


@struct.dataclass
class Params(BaseParams):
    elite_fraction: float  # share of the population copied unchanged (>= 1 member)
    mutant_fraction: float  # share replaced by fresh uniform random keys
    rho: float  # probability that a child's gene comes from its elite parent


def flat_draw(sample: Callable, key: jax.Array, shape: tuple, **kwargs) -> jax.Array:
    """`sample(key, shape=shape, **kwargs)` (a jax.random sampler) drawn as one flat
    vector and reshaped: the same numbers, since element i of a draw comes from counter
    i, its row-major index; arguments of `shape` (e.g. randint's maxval) are flattened
    alike. XLA:CPU compiles the threefry hash over a 1-D array in about half the time
    of an n-D one, and the hashes are most of the compile of BRKGA's ask and of the
    local search's neighbours."""
    size = math.prod(shape)
    flat = {k: jnp.reshape(a, size) if getattr(a, "shape", None) == tuple(shape) else a
            for k, a in kwargs.items()}
    return sample(key, shape=(size,), **flat).reshape(shape)


class BRKGA(PopulationBasedAlgorithm):
    """Biased random-key GA (Goncalves and Resende 2011), minimizing fitness.

    Example (evosax ask/tell):
        algo = BRKGA(population_size=100, solution=jnp.zeros(n))
        params = algo.default_params
        state = algo.init(key, population, fitness, params)
        population, state = algo.ask(key, state, params)
        state, metrics = algo.tell(key, population, fitness_fn(population), state, params)
    """

    def __init__(
        self,
        population_size: int,
        solution: Solution,
        elite_fraction: float = 0.2,
        mutant_fraction: float = 0.1,
        rho: float = 0.7,
        fitness_shaping_fn: Callable = identity_fitness_shaping_fn,
        metrics_fn: Callable = metrics_fn,
    ):
        """Population size is static; the fractions and rho are only the defaults."""
        super().__init__(population_size, solution, fitness_shaping_fn, metrics_fn)
        if not 0.0 < elite_fraction < 1.0 or not 0.0 <= mutant_fraction < 1.0:
            raise ValueError("need 0 < elite_fraction < 1 and 0 <= mutant_fraction < 1")
        self.elite_ratio = elite_fraction
        self._defaults = (float(elite_fraction), float(mutant_fraction), float(rho))

    @property
    def _default_params(self) -> Params:
        e, m, r = self._defaults
        return Params(elite_fraction=e, mutant_fraction=m, rho=r)

    def _init(self, key: jax.Array, params: Params) -> State:
        return State(
            population=jnp.full((self.population_size, self.num_dims), jnp.nan),
            fitness=jnp.full((self.population_size,), jnp.inf),
            best_solution=jnp.full((self.num_dims,), jnp.nan),
            best_fitness=jnp.inf,
            generation_counter=0,
        )

    def sizes(self, params: Params) -> tuple[jax.Array, jax.Array]:
        """(number of elites, number of mutants) as traced int32 scalars."""
        pop = self.population_size
        ne = jnp.clip(jnp.floor(params.elite_fraction * pop), 1, pop - 1).astype(jnp.int32)
        nm = jnp.clip(jnp.floor(params.mutant_fraction * pop), 0, pop - ne).astype(jnp.int32)
        return ne, nm

    def _ask(self, key: jax.Array, state: State, params: Params
             ) -> tuple[Population, State]:
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
        from_elite = flat_draw(jax.random.uniform, k_gene, (n, pop)).T < params.rho
        child = jnp.where(from_elite, ranked[elite_parent], ranked[other_parent])
        mutant = flat_draw(jax.random.uniform, k_mut, (n, pop), dtype=ranked.dtype).T
        population = jnp.where((row < ne)[:, None], ranked,
                               jnp.where((row < ne + nm)[:, None], mutant, child))
        return population, state

    def _tell(self, key: jax.Array, population: Population, fitness: Fitness,
              state: State, params: Params) -> State:
        fitness = jnp.where(jnp.isnan(fitness), jnp.inf, fitness)
        return state.replace(population=population, fitness=fitness)


__all__ = ["BRKGA", "Params", "State", "flat_draw"]
