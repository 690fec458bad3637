"""Island BRKGA for accelerators: many problems, several wide populations each, one call.

The GPU mode for batched searches. The problems of a bucket are padded to
one Spec and stacked (`stack_graphs`); each problem runs `islands` BRKGA populations
(`jaxplace.search.brkga.BRKGA`, `population` candidates each, 10^3-10^4 on a GPU) and
every `migrate_every` generations the best `migrants` of each island replace the worst
of the next island (a ring). One compiled call advances every island of every problem
of a group by `migrate_every` generations, so a call scores
problems x islands x population candidates (the width a GPU needs; the default
search's 100-wide generations leave it idle).

- Memory: problems go in groups sized from the device's free memory (half of it, or
  `memory_budget` where the backend does not report it), one group after another.
- Devices: a group is sharded over `devices` (default: all local devices) along the
  problem axis with `jax.shard_map`; problems never communicate, so the results are
  the same on any number of devices (tests/test_islands.py runs 4 host devices).
- Reproducible: generation t of island j of problem i draws from
  fold_in(fold_in(fold_in(key(seed), i), j), t): the results depend neither on the
  grouping nor on the devices (they do depend on the padded width, which shapes the
  random keys: another `impl` or bucket draws other keys). On GPUs, run-to-run
  identity may need XLA_FLAGS=--xla_gpu_deterministic_ops=true (not measured: no GPU
  was lent).

This is a standalone search (`island_search`); `search_many` does not route to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.decoder.batching import DEFAULT_MEMORY_BUDGET, bytes_per_candidate
from jaxplace.decoder.evaluator import fused_spec_of
from jaxplace.decoder.layout import Spec, stack_graphs
from jaxplace.decoder.scoring import score_graphs
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem
from jaxplace.search.brkga import BRKGA


@dataclass(frozen=True)
class IslandSettings:
    """Static settings of one island search (one compiled program per Spec)."""

    islands: int = 4
    population: int = 1024
    migrate_every: int = 10
    migrants: int = 2
    elite_fraction: float = 0.2
    mutant_fraction: float = 0.1
    rho: float = 0.7
    impl: str = "lanes"

    def check(self) -> None:
        if self.islands < 1 or self.population < 4 or self.migrate_every < 1:
            raise JaxplaceError("need islands >= 1, population >= 4, migrate_every >= 1",
                                field="islands")
        if not 0 <= self.migrants <= self.population // 2:
            raise JaxplaceError(f"must be between 0 and population/2, got {self.migrants}",
                                field="migrants")


@dataclass
class IslandResult:
    """Best candidate found for one problem."""

    cost: float  # float32 decoder cost of x
    x: np.ndarray  # (n,) float32 priorities
    evaluations: int
    history: np.ndarray  # (generations + 1,) best cost after each generation (0: init)


def _brkga(s: IslandSettings, width: int) -> BRKGA:
    return BRKGA(s.population, jnp.zeros(width, jnp.float32), s.elite_fraction,
                 s.mutant_fraction, s.rho)


def _island_key(seed_key, problem_index, island):
    return jax.random.fold_in(jax.random.fold_in(seed_key, problem_index), island)


def _migrate(s: IslandSettings, pop, fit):
    """Best `migrants` of island j replace the worst of island j+1 (per problem)."""
    E = s.migrants
    order = jnp.argsort(fit, axis=-1)  # (G, I, P) best first
    best, worst = order[..., :E], order[..., -E:]
    src_x = jnp.roll(jnp.take_along_axis(pop, best[..., None], axis=2), 1, axis=1)
    src_f = jnp.roll(jnp.take_along_axis(fit, best, axis=2), 1, axis=1)
    pop = jnp.put_along_axis(pop, jnp.broadcast_to(worst[..., None], src_x.shape), src_x,
                             axis=2, inplace=False)
    fit = jnp.put_along_axis(fit, worst, src_f, axis=2, inplace=False)
    return pop, fit


def _generations(s: IslandSettings, spec: Spec, graphs, keys, pop, fit, best_f, best_x,
                 t0, length: int):
    """`length` generations from t0 for a group: (pop, fit, best_f, best_x, history)."""
    G, I, P, W = pop.shape
    algo = _brkga(s, W)
    params = algo.default_params

    def ask(key, x, f):
        state = algo._init(key, params).replace(population=x, fitness=f)
        return algo._ask(key, state, params)[0]

    ask_all = jax.vmap(jax.vmap(ask))  # over problems, islands

    def step(carry, t):
        pop, fit, best_f, best_x = carry
        k = jax.vmap(jax.vmap(lambda key: jax.random.fold_in(key, t)))(keys)
        pop = ask_all(k, pop, fit)
        fit = score_graphs(spec, graphs, pop.reshape(G, I * P, W), impl=s.impl)
        fit = jnp.where(jnp.isnan(fit), jnp.inf, fit).reshape(G, I, P)
        if s.migrants and I > 1:
            mig = (t % s.migrate_every) == s.migrate_every - 1
            mpop, mfit = _migrate(s, pop, fit)
            pop, fit = jnp.where(mig, mpop, pop), jnp.where(mig, mfit, fit)
        flat = fit.reshape(G, I * P)
        i = jnp.argmin(flat, axis=1)
        f = jnp.take_along_axis(flat, i[:, None], axis=1)[:, 0]
        x = jnp.take_along_axis(pop.reshape(G, I * P, W), i[:, None, None], axis=1)[:, 0]
        better = f < best_f
        best_f = jnp.where(better, f, best_f)
        best_x = jnp.where(better[:, None], x, best_x)
        return (pop, fit, best_f, best_x), best_f

    ts = t0 + jnp.arange(length, dtype=jnp.int32)
    (pop, fit, best_f, best_x), hist = jax.lax.scan(step, (pop, fit, best_f, best_x), ts)
    return pop, fit, best_f, best_x, hist.T


@partial(jax.jit, static_argnames=("s", "spec", "length", "mesh"))
def run_generations(s: IslandSettings, spec: Spec, graphs, keys, pop, fit, best_f, best_x,
                    t0, *, length: int, mesh=None):
    """One compiled call: `length` generations of every island of every problem of a
    group, sharded over `mesh` (axis "prob") when given."""
    body = partial(_generations, s, spec, length=length)
    if mesh is None:
        return body(graphs, keys, pop, fit, best_f, best_x, t0)
    from jax.sharding import PartitionSpec as PS

    prob = PS("prob")
    return jax.shard_map(body, mesh=mesh, in_specs=(prob,) * 6 + (PS(),),
                         out_specs=(prob,) * 5, check_vma=False)(
        graphs, keys, pop, fit, best_f, best_x, t0)


@partial(jax.jit, static_argnames=("s", "spec", "mesh"))
def _initial(s: IslandSettings, spec: Spec, graphs, pop, mesh=None):
    G, I, P, W = pop.shape

    def body(graphs, pop):
        fit = score_graphs(spec, graphs, pop.reshape(pop.shape[0], I * P, W), impl=s.impl)
        return jnp.where(jnp.isnan(fit), jnp.inf, fit).reshape(pop.shape[:3])

    if mesh is None:
        return body(graphs, pop)
    from jax.sharding import PartitionSpec as PS

    return jax.shard_map(body, mesh=mesh, in_specs=(PS("prob"),) * 2, out_specs=PS("prob"),
                         check_vma=False)(graphs, pop)


def problems_per_call(spec: Spec, s: IslandSettings, device, memory_budget: int) -> int:
    """Problems whose islands fit in half the device's free memory (or the budget)."""
    stats = device.memory_stats() or {}
    limit = stats.get("bytes_limit")
    free = (limit - stats.get("bytes_in_use", 0)) // 2 if limit else memory_budget
    per_problem = s.islands * s.population * (bytes_per_candidate(spec, 4) + 8 * spec.width)
    return max(int(free // per_problem), 1)


def island_search(problems: Sequence[Problem], *, generations: int = 100, seed: int = 0,
                  settings: IslandSettings | None = None, devices: Sequence | None = None,
                  memory_budget: int = DEFAULT_MEMORY_BUDGET,
                  max_problems_per_call: int | None = None) -> list[IslandResult]:
    """Island BRKGA over every problem for `generations` generations (see the module
    doc); one `IslandResult` per problem, in order."""
    s = settings or IslandSettings()
    s.check()
    problems = list(problems)
    if not problems:
        raise JaxplaceError("no problems", field="problems")
    for i, p in enumerate(problems):
        if not p.objective_impl.supports("identical_devices"):
            raise JaxplaceError("island search scores identical devices only",
                                field=f"problems[{i}]")
    if generations < 0:
        raise JaxplaceError(f"must be >= 0, got {generations}", field="generations")
    spec = fused_spec_of(problems) if s.impl == "fused" else _merged_spec(problems)
    devs = list(jax.local_devices() if devices is None else devices)
    ndev = len(devs)
    mesh = None
    if ndev > 1:
        from jax.sharding import Mesh

        mesh = Mesh(np.array(devs), ("prob",))
    per_call = problems_per_call(spec, s, devs[0], memory_budget) * ndev
    if max_problems_per_call is not None:
        per_call = min(per_call, max(int(max_problems_per_call), 1))
    per_call = max(per_call // ndev, 1) * ndev
    out: list[IslandResult] = []
    for lo in range(0, len(problems), per_call):
        out += _group(s, spec, problems, range(lo, min(lo + per_call, len(problems))),
                      generations, seed, mesh, ndev)
    return out


def _merged_spec(problems) -> Spec:
    from jaxplace.decoder.layout import problem_spec

    spec = problem_spec(problems[0])
    for p in problems[1:]:
        spec = spec.merge(problem_spec(p))
    return spec


def _group(s: IslandSettings, spec: Spec, problems, idx: range, generations: int,
           seed: int, mesh, ndev: int) -> list[IslandResult]:
    """One group of problems (padded to a multiple of the devices with copies of its
    first problem, whose results are dropped)."""
    members = [problems[i] for i in idx]
    G = -(-len(members) // ndev) * ndev
    padded = members + [members[0]] * (G - len(members))
    index = list(idx) + [idx[0]] * (G - len(members))
    _, graphs = stack_graphs(padded, spec=spec)
    W, I, P = spec.width, s.islands, s.population
    root = jax.random.key(seed)
    keys = jax.vmap(lambda i: jax.vmap(lambda j: _island_key(root, i, j))(
        jnp.arange(I)))(jnp.asarray(index))  # (G, I) keys
    pop = jax.vmap(jax.vmap(lambda k: jax.random.uniform(
        jax.random.fold_in(k, 0), (P, W), jnp.float32)))(keys)
    fit = _initial(s, spec, graphs, pop, mesh=mesh)
    flat = fit.reshape(G, I * P)
    i0 = jnp.argmin(flat, axis=1)
    best_f = jnp.take_along_axis(flat, i0[:, None], axis=1)[:, 0]
    best_x = jnp.take_along_axis(pop.reshape(G, I * P, W), i0[:, None, None], axis=1)[:, 0]
    hist = [np.asarray(best_f)[:, None]]
    t = 0
    while t < generations:
        length = min(s.migrate_every, generations - t)
        pop, fit, best_f, best_x, h = run_generations(
            s, spec, graphs, keys, pop, fit, best_f, best_x, jnp.int32(t + 1),
            length=length, mesh=mesh)
        hist.append(np.asarray(h))
        t += length
    history = np.concatenate(hist, axis=1)
    bf, bx = np.asarray(best_f, np.float64), np.asarray(best_x)
    evals = I * P * (generations + 1)
    return [IslandResult(float(bf[g]), bx[g, :p.n].copy(), evals, history[g])
            for g, p in enumerate(members)]


__all__ = ["IslandResult", "IslandSettings", "island_search", "problems_per_call",
           "run_generations"]
