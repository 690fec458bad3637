"""One compiled program that advances the searches of many problems together.

`search_many` (jaxplace.search.many) pads a bucket of G problems to one `Spec` and
runs `many_chunk`: `count` steps of `many_step`, vmapped over the G problems, each
step scoring P candidates per problem with the batched decoder. Every problem walks
through the default search's two phases on its own schedule:

    INIT    evaluate the initial population (uniform keys, or policy samples)
    EVOLVE  BRKGA generations (`BRKGA._ask`; mutants from the policy where the
            default search couples it), until the problem's BRKGA budget or its
            BRKGA patience is spent
    LOCAL   `ShiftSearch` moves from the better of BRKGA's best and the best
            heuristic order (P neighbours per step, plateau moves)
    DONE    budget, patience or target reached: the problem's lanes idle

Both candidate sets (offspring and neighbours) are built every step and the phase
picks one per problem (building them is cheap next to scoring), so the two phases
share one compiled program and problems in different phases advance in the same
call. Step t of problem i draws from fold_in(key_i, t): the results do not depend on
how the steps are cut into chunks, or on which other problems share the bucket
(beyond the padded shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from jaxplace.decoder.layout import Spec
from jaxplace.decoder.scoring import score_orders
from jaxplace.policy.distribution import sample_priorities
from jaxplace.search.brkga import BRKGA, State
from jaxplace.search.programs import SearchData, ShiftSearch

INIT, EVOLVE, LOCAL, DONE = 0, 1, 2, 3
PHASE_NAMES = ("init", "brkga", "local", "done")


@struct.dataclass
class ManyData:
    """Per-problem device arrays (a leading axis G when stacked).

    Attributes:
        g: the padded DeviceGraph.
        nbr: (width, Dn) int32 undirected neighbours; deg: (width,) int32 degrees.
        nn: () int32 real number of nodes.
        pool: (width,) int32 nodes to focus local moves on; pool_n: () int32 count
            (0 or 1: no focus), refreshed by the host between chunks.
        x_seed: (width,) float32 best heuristic order's priorities; f_seed: its cost.
        budget, brkga_evals, brkga_patience, patience: () int32 evaluation counts.
        target: () float32: stop once the best cost is at most this.
        key: the problem's PRNG key.
        mean, log_std: (width,) float32 the shipped policy's per-node Gaussians;
            coupled: () bool: BRKGA's mutants are drawn from them (REGAL's coupling,
            the default search's rule), else uniform.
    """

    g: object
    nbr: jnp.ndarray
    deg: jnp.ndarray
    nn: jnp.ndarray
    pool: jnp.ndarray
    pool_n: jnp.ndarray
    x_seed: jnp.ndarray
    f_seed: jnp.ndarray
    budget: jnp.ndarray
    brkga_evals: jnp.ndarray
    brkga_patience: jnp.ndarray
    patience: jnp.ndarray
    target: jnp.ndarray
    key: jnp.ndarray
    mean: jnp.ndarray
    log_std: jnp.ndarray
    coupled: jnp.ndarray


@struct.dataclass
class ManyState:
    """Per-problem search state (a leading axis G when stacked)."""

    pop: jnp.ndarray  # (P, width) BRKGA population (INIT: the initial one)
    fit: jnp.ndarray  # (P,) its costs
    phase: jnp.ndarray  # () int32: INIT, EVOLVE, LOCAL or DONE
    evals: jnp.ndarray  # () int32 evaluations spent
    step: jnp.ndarray  # () int32 steps taken (the PRNG stream position)
    best_x: jnp.ndarray  # (width,)
    best_f: jnp.ndarray  # () float32
    last_gain: jnp.ndarray  # () int32: evals when best_f last improved
    x: jnp.ndarray  # (width,) local-search incumbent (canonical form)
    fx: jnp.ndarray  # () float32 its cost (inf: not yet evaluated)
    local_start: jnp.ndarray  # () int32: evals when LOCAL began


@dataclass(frozen=True)
class ManyProgram:
    """Static configuration of one bucket's program (hashable: one compile each)."""

    spec: Spec
    population: int
    window: int | None = None
    moves: int = 3
    focus: float = 0.5
    elite_fraction: float = 0.2
    mutant_fraction: float = 0.1
    rho: float = 0.7

    @property
    def algo(self) -> BRKGA:
        return BRKGA(self.population, jnp.zeros(self.spec.width, jnp.float32),
                     self.elite_fraction, self.mutant_fraction, self.rho)

    @property
    def shift(self) -> ShiftSearch:
        return ShiftSearch(self.spec, self.population, self.moves, self.focus, self.window)

    def init_state(self, X0: jnp.ndarray, x_seed: jnp.ndarray) -> ManyState:
        """State of one problem before its first step, from (P, width) X0."""
        P = self.population
        return ManyState(
            pop=X0, fit=jnp.full((P,), jnp.inf, jnp.float32),
            phase=jnp.asarray(INIT, jnp.int32), evals=jnp.asarray(0, jnp.int32),
            step=jnp.asarray(0, jnp.int32), best_x=X0[0],
            best_f=jnp.asarray(jnp.inf, jnp.float32),
            last_gain=jnp.asarray(0, jnp.int32), x=x_seed,
            fx=jnp.asarray(jnp.inf, jnp.float32), local_start=jnp.asarray(0, jnp.int32))

    def step(self, d: ManyData, s: ManyState) -> ManyState:
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
        # the decoder's Kahn orders give the local incumbent's canonical form (no
        # second Kahn in the program)
        f, orders = score_orders(self.spec, d.g, X, window=self.window)
        f = jnp.where(jnp.isnan(f), jnp.inf, f)
        active = s.phase != DONE
        evolving = s.phase <= EVOLVE
        pop = jnp.where(evolving, X, s.pop)
        fit = jnp.where(evolving, f, s.fit)
        i = jnp.argmin(f)
        take = local & (f[i] <= s.fx)
        x = jnp.where(take, shift.canonical_order(sd, orders[:, i]), s.x)
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


def _many_chunk(program: ManyProgram, data: ManyData, state: ManyState, count):
    """`count` (traced) steps of every problem of the bucket."""
    if state.phase.shape[0] == 1:
        # a group of one (the CPU default): the step unbatched, since vmap turns the
        # decoder's gathers and scatters into batched ones with materialized index
        # arrays (the decoder alone scored 5-35% slower vmapped over one problem)
        one = lambda t: jax.tree.map(lambda a: a[0], t)  # noqa: E731
        d = one(data)
        out = jax.lax.fori_loop(0, count, lambda _, s: program.step(d, s), one(state))
        return jax.tree.map(lambda a: a[None], out)
    step = jax.vmap(program.step)
    return jax.lax.fori_loop(0, count, lambda _, s: step(data, s), state)


many_chunk = jax.jit(_many_chunk, static_argnums=(0,))

__all__ = ["DONE", "EVOLVE", "INIT", "LOCAL", "PHASE_NAMES", "ManyData", "ManyProgram",
           "ManyState", "many_chunk"]
