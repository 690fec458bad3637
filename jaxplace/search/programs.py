"""Search programs for the compiled driver (see driver.py): evosax, random, local search.

A program is a frozen (hashable) dataclass holding only static configuration; it
satisfies the `Program` protocol:

    evaluations_per_step: int        candidates scored per step
    init_steps: int                  extra steps that evaluate the starting X0
    blank(data, key, X0) -> carry    the initial carry, without evaluating
    step(data, carry, key) -> (carry, X, f)   X: (P, width) candidates, f: (P,) costs

Device arrays (the padded graph, tunable parameters) travel in `data`, a
`SearchData` pytree, so one compiled chunk serves every graph of the same padded
shape. What a candidate costs is a `Fitness`: a hashable callable
`fitness(data, X) -> (P,)`: the decoder (`DecodeFitness`) or the linear-arrangement
surrogate (`ArrangementFitness`); the other objectives bring theirs from their own
packages (`objectives.latency.decoder.LatencyFitness`,
`objectives.throughput_unequal.decoder.HeteroFitness`).

Candidates are (P, width) float32 priority rows; columns >= n are padding that the
decoder ignores.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import optax
from evosax.algorithms.population_based.base import PopulationBasedAlgorithm
from flax import struct

from jaxplace.decoder.kahn import kahn_one, positions, priority_keys
from jaxplace.decoder.layout import Spec, bucket
from jaxplace.decoder.scoring import score, score_orders, unit_priorities
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem
from jaxplace.search.brkga import flat_draw

# -- fitness --------------------------------------------------------------------------


def orders_of(spec: Spec, g, X: jnp.ndarray) -> jnp.ndarray:
    """(P, N) int32 Kahn orders of placement units for (P, width) node priorities."""
    keys = jax.vmap(priority_keys, in_axes=(0, None))(unit_priorities(spec, g, X), g.n)
    return jax.vmap(kahn_one, in_axes=(None, None, 0))(spec, g, keys)


def arrangement_cost(spec: Spec, data, X: jnp.ndarray) -> jnp.ndarray:
    """(P,) linear-arrangement cost sum_e w(e) |pos(u) - pos(v)| of Kahn(x)."""
    u, v, w = data.la
    g = data.g
    pos = jax.vmap(positions)(orders_of(spec, g, X))  # (P, N) position of each unit
    if spec.NX:  # node -> its unit's position
        pos = jnp.take(pos, g.unit_of[:spec.width], axis=1, mode="clip")
    return jnp.sum(w * jnp.abs(pos[:, u] - pos[:, v]).astype(jnp.float32), axis=1)


@struct.dataclass
class SearchData:
    """Device arrays a program reads (a pytree; unused fields stay None).

    Attributes:
        g: the padded DeviceGraph.
        params: the evosax Params of the algorithm (EvosaxProgram).
        la: (u, v, w) (E,) edges of the arrangement cost (ArrangementFitness).
        nbr: ((width, Dn) int32 undirected neighbours, (width,) int32 degrees).
        nn: () int32 real number of nodes (ShiftSearch).
        pool: ((width,) int32 nodes, () int32 count) to focus moves on (ShiftSearch
            with focus > 0): the incumbent's bottleneck block and its neighbours.
        dist: a node-priority distribution for programs that sample from a policy.
    """

    g: Any
    params: Any = None
    la: Any = None
    nbr: Any = None
    nn: Any = None
    pool: Any = None
    dist: Any = None


class Fitness(Protocol):
    """A hashable callable (P, width) priorities -> (P,) costs, lower is better."""

    def __call__(self, data: SearchData, X: jnp.ndarray) -> jnp.ndarray: ...


@dataclass(frozen=True)
class DecodeFitness:
    """The bottleneck cost of SliceGraph(Kahn(x)): the real objective.

    `window` (static): blocks of at most that many units (`jaxplace.decoder.window`):
    exact for every candidate whose cost is below the window's block bound, an
    achievable over-estimate for the others, which a search discards anyway.
    """

    spec: Spec
    window: int | None = None

    def __call__(self, data: SearchData, X: jnp.ndarray) -> jnp.ndarray:
        return score(self.spec, data.g, X, window=self.window)


@dataclass(frozen=True)
class ArrangementFitness:
    """The linear-arrangement cost of Kahn(x) (MLA / MLA-weighted surrogates)."""

    spec: Spec

    def __call__(self, data: SearchData, X: jnp.ndarray) -> jnp.ndarray:
        return arrangement_cost(self.spec, data, X)


def arrangement_edges(problem: Problem, weighted: bool):
    """(u, v, w) edge arrays padded to a bucketed length (padding: weight 0).

    w = 1 per DAG edge, or (weighted) the size / B of the tensors u sends to v.
    """
    g = problem.graph
    if weighted:
        pairs = {}
        for t in range(g.num_tensors):
            p = int(g.tensor_producer[t])
            for c in g.tensor_consumers[g.tensor_ptr[t]:g.tensor_ptr[t + 1]]:
                pairs[(p, int(c))] = pairs.get((p, int(c)), 0.0) + g.tensor_size[t]
        e = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        w = np.array([pairs[tuple(x)] for x in e.tolist()]) / problem.bandwidth
    else:
        e = g.edges
        w = np.ones(len(e))
    E = bucket(max(len(e), 1))
    u = np.zeros(E, np.int32)
    v = np.zeros(E, np.int32)
    ww = np.zeros(E, np.float32)
    u[:len(e)], v[:len(e)], ww[:len(e)] = e[:, 0], e[:, 1], w
    return jnp.asarray(u), jnp.asarray(v), jnp.asarray(ww)


#: Columns of the neighbour table at least (a power of two); wider only for higher degrees.
MIN_NEIGHBOUR_WIDTH = 64


def neighbour_table(problem: Problem, N: int):
    """((N, Dn) int32 undirected neighbours padded with 0, (N,) int32 degrees)."""
    g = problem.graph
    nb = [[] for _ in range(N)]
    for u, v in g.edges.tolist():
        nb[u].append(v)
        nb[v].append(u)
    deg = np.array([len(a) for a in nb], np.int32)
    # A fixed floor of 64 columns: the table is only gathered from (P x moves reads), so
    # its width costs nothing, while a width per graph was a compiled program per graph.
    D = max(MIN_NEIGHBOUR_WIDTH, 1 << max(int(deg.max(initial=0)) - 1, 0).bit_length())
    table = np.zeros((N, D), np.int32)
    for i, a in enumerate(nb):
        table[i, :len(a)] = a
    return jnp.asarray(table), jnp.asarray(deg)


def order_priorities(order: jnp.ndarray, N: int, n=None) -> jnp.ndarray:
    """(N,) float32 priorities under which Kahn reproduces the topological `order`:
    (n - i) / n at position i, n the real length (default N; positions >= n are
    padding), so the spacing of the real positions does not depend on the padding."""
    n = N if n is None else n
    return jnp.zeros(N, jnp.float32).at[order].set(
        (n - jnp.arange(N, dtype=jnp.float32)) / n)


# -- programs -------------------------------------------------------------------------


class Program(Protocol):
    """What the compiled driver runs (see the module doc)."""

    evaluations_per_step: int
    init_steps: int

    def blank(self, data: SearchData, key: jax.Array, X0: jnp.ndarray) -> Any: ...

    def step(self, data: SearchData, carry: Any, key: jax.Array
             ) -> tuple[Any, jnp.ndarray, jnp.ndarray]: ...


#: Constructor keywords suited to random keys in [0, 1] (evosax defaults otherwise);
#: built once so that programs holding them hash equal across searches.
ALGORITHM_KWARGS: dict[str, dict] = {
    "SimpleGA": {"std_schedule": optax.constant_schedule(0.1)},
    "Open_ES": {"optimizer": optax.adam(0.05), "std_schedule": optax.constant_schedule(0.1)},
}


def algorithms() -> dict[str, type]:
    """Every evosax-style algorithm the driver can run, by name (BRKGA first)."""
    import evosax.algorithms

    from jaxplace.search.brkga import BRKGA

    return {"BRKGA": BRKGA, **evosax.algorithms.algorithms}


@dataclass(frozen=True)
class EvosaxProgram:
    """Any evosax algorithm (ask/tell) over a fitness.

    Hashed by its configuration (algorithm name, population, width, options), so
    equal configurations share compiled chunks; the algorithm object is built once
    per program.
    """

    name: str
    population: int
    width: int
    fitness: Any
    options: tuple = ()

    @cached_property
    def algo(self):
        cls = algorithms()[self.name]
        kw = {**ALGORITHM_KWARGS.get(self.name, {}), **dict(self.options)}
        try:
            return cls(population_size=self.population,
                       solution=jnp.zeros(self.width, jnp.float32), **kw)
        except (AssertionError, TypeError, ValueError) as e:
            raise JaxplaceError(f"cannot build {self.name} with population "
                                f"{self.population}: {e}", field="method") from e

    @property
    def evaluations_per_step(self) -> int:
        return self.population

    init_steps = 1  # the first step evaluates X0 and initializes the algorithm

    @property
    def population_based(self) -> bool:
        return isinstance(self.algo, PopulationBasedAlgorithm)

    def _algo_init(self, key, X, f, params):
        if self.population_based:
            return self.algo.init(key, X, f, params)
        return self.algo.init(key, X[jnp.argmin(f)], params)

    def blank(self, data, key, X0):
        """(placeholder state, X0, first=True): no evaluation."""
        f = jnp.zeros(X0.shape[0], jnp.float32)
        return self._algo_init(key, X0, f, data.params), X0, jnp.asarray(True)

    def step(self, data, carry, key):
        state, X0, first = carry
        k_ask, k_tell, k_init = jax.random.split(key, 3)
        params = data.params
        X, asked = self.algo.ask(k_ask, state, params)
        X = jnp.where(first, X0, X)  # step 0 evaluates the initial population
        f = self.fitness(data, X)
        told, _ = self.algo.tell(k_tell, X, f, asked, params)
        fresh = self._algo_init(k_init, X, jnp.where(jnp.isnan(f), jnp.inf, f), params)
        state = jax.tree.map(lambda a, b: jnp.where(first, a, b), fresh, told)
        return (state, X0, jnp.asarray(False)), X, f


@dataclass(frozen=True)
class RandomProgram:
    """Independent uniform priority vectors, `batch` per step (random-T)."""

    width: int
    batch: int
    fitness: Any

    init_steps = 1  # X0 is ignored: every step, the first included, samples uniformly

    @property
    def evaluations_per_step(self) -> int:
        return self.batch

    def blank(self, data, key, X0):
        return jnp.zeros((), jnp.int32)

    def step(self, data, carry, key):
        X = jax.random.uniform(key, (self.batch, self.width), jnp.float32)
        return carry, X, self.fitness(data, X)


@dataclass(frozen=True)
class ShiftSearch:
    """Batched local search on the order: (1 + batch) with plateau moves and restarts.

    The incumbent is kept in canonical form x[order[i]] = (n - i) / n (n real units), so
    a candidate that gives node v the priority of node u plus or minus half a step asks
    Kahn to emit v right before or after u (as far as the precedences allow). Each candidate
    applies `moves` such shifts (the first to a random node, the others each with
    probability 1/2). Moves to a neighbour's position and to random positions are
    mixed. The best candidate replaces the incumbent when it is no worse (walking
    along plateaus of the bottleneck objective), which is what lets it shift work
    across a cut that is not yet the bottleneck. Half the shifts move v next to one
    of its graph neighbours (data.nbr, see `neighbour_table`), half anywhere.

    With `focus` > 0, that share of the candidates draws the moved node from
    data.pool (the incumbent's bottleneck block and the blocks next to it in the
    order, refreshed by the host between chunks) and the anchor from its graph
    neighbours (half) or the pool (half): moves across the bottleneck's boundaries
    rather than anywhere. A moved node takes its whole
    placement unit along (all members get the new priority).
    """

    spec: Spec
    batch: int
    moves: int = 3
    focus: float = 0.0
    window: int | None = None

    @property
    def evaluations_per_step(self) -> int:
        return self.batch

    def canonical(self, data, x):
        return self.canonical_order(data, orders_of(self.spec, data.g, x[None])[0])

    def canonical_order(self, data, order):
        """The canonical form of the candidate whose Kahn order of units is `order`."""
        g = data.g
        u = order_priorities(order, self.spec.N, g.n)  # (N,) per unit
        if not self.spec.NX:
            return u
        return jnp.take(u, g.unit_of[:self.spec.width], mode="fill", fill_value=0.0)

    init_steps = 0  # the first step's candidate 0 is X0[0] itself (cost still unknown)

    def blank(self, data, key, X0):
        return X0[0], jnp.asarray(jnp.inf, jnp.float32)

    def neighbours(self, data, x, key):
        N, P = self.spec.width, self.batch
        n = data.nn  # () int32 real number of nodes
        k_v, k_u, k_s, k_on, k_nb, k_j = jax.random.split(key, 6)
        shape = (P, self.moves)
        # every draw flat (`flat_draw`: the same numbers, half the compile)
        randint = partial(flat_draw, jax.random.randint, shape=shape, minval=0)
        coin = partial(flat_draw, jax.random.bernoulli, shape=shape, p=0.5)
        v = randint(k_v, maxval=n)
        nbr, deg = data.nbr  # (N, Dn) int32 undirected neighbours, (N,) int32 degree
        j = randint(k_j, maxval=jnp.maximum(deg[v], 1))
        near = coin(k_nb) & (deg[v] > 0)
        u = jnp.where(near, nbr[v, j], randint(k_u, maxval=n))
        if self.focus > 0:
            pool, cnt = data.pool
            k_f, k_a, k_b = jax.random.split(k_j, 3)
            foc = (jnp.arange(P) < round(self.focus * P))[:, None] & (cnt > 1)
            v = jnp.where(foc, pool[randint(k_a, maxval=jnp.maximum(cnt, 1))], v)
            pu = pool[randint(k_b, maxval=jnp.maximum(cnt, 1))]
            j = randint(k_f, maxval=jnp.maximum(deg[v], 1))
            u = jnp.where(foc, jnp.where(near, nbr[v, j], pu), u)
        # half the canonical spacing 1 / (real units): independent of the padding
        side = jnp.where(coin(k_s), 0.5, -0.5) / data.g.n
        on = coin(k_on).at[:, 0].set(True)
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

    def step(self, data, carry, key):
        x, fx = carry
        X = self.neighbours(data, x, key)
        X = X.at[0].set(jnp.where(jnp.isinf(fx), x, X[0]))  # first step: evaluate x
        # the decoder's own Kahn orders give the canonical form: no second Kahn in
        # the program (a scan over N units: compile and step time)
        f, orders = score_orders(self.spec, data.g, X, window=self.window)
        i = jnp.argmin(f)
        take = f[i] <= fx
        x = jnp.where(take, self.canonical_order(data, orders[:, i]), x)
        fx = jnp.where(take, f[i], fx)
        return (x, fx), X, f


__all__ = ["ArrangementFitness", "DecodeFitness", "EvosaxProgram", "Fitness",
           "Program",
           "RandomProgram", "SearchData", "ShiftSearch", "algorithms", "arrangement_cost",
           "arrangement_edges", "neighbour_table", "order_priorities", "orders_of"]
