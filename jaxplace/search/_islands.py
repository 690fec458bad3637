"""Island BRKGA for accelerators: many problems, several wide populations each, one call.

The engine of `search_many(..., mode="islands")` and `search(problem, "islands")`
(`jaxplace.search.many.islands_mode`). The problems of a group are padded to one
Spec and stacked (`stack_graphs`); each problem runs `islands` BRKGA populations
(`jaxplace.search.brkga.BRKGA`, `population` candidates each, 10^3-10^4 on a GPU) and
every `migrate_every` generations the best `migrants` of each island replace the worst
of the next island (a ring). One compiled call advances every island of every problem
of a group by `migrate_every` generations, so a call scores
problems x islands x population candidates (the width a GPU needs; the default
search's 100-wide generations leave it idle).

- Stops: each problem has its own generation count (its budget) and target (its
  lower bound); past either, its best is frozen while the group's call goes on for the
  others, so a problem's result does not depend on which problems share its group.
- Memory: problems go in groups sized from the device's free memory (half of it, or
  `memory_budget` where the backend does not report it), one group after another.
- Devices: a group is sharded over `devices` (default: all local devices) along the
  problem axis with `jax.shard_map`; problems never communicate, so the results are
  the same on any number of devices (tests/search/test_islands.py runs 4 host devices).
- Reproducible: generation t of island j of problem i draws from
  fold_in(fold_in(key(seed + i), j), t): the results depend neither on the grouping
  nor on the devices. The draws are made gene-major (`BRKGA` and the first
  populations), so a real gene's numbers do not depend on the padded width either
  (a restricted `window` still changes which candidates win). On a GPU the lanes
  decoder's scatter-adds are atomics: run-to-run identity with it needs
  XLA_FLAGS=--xla_gpu_deterministic_ops=true; the fused kernel (`impl="fused"`, what
  `impl="auto"` picks there) has no atomics.
- Decoder: `impl="auto"` resolves per group (`resolve_settings`): the fused kernel on
  GPUs when it takes every problem of the group (its padded shape then the kernel's
  power-of-two one, no window), else lanes; a CPU keeps lanes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.decoder.batching import DEFAULT_MEMORY_BUDGET, bytes_per_candidate
from jaxplace.decoder.evaluator import AUTO_IMPL, default_platform, resolve_impl
from jaxplace.decoder.fused import fused_spec
from jaxplace.decoder.layout import Spec, stack_graphs
from jaxplace.decoder.scoring import IMPLS, score
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem
from jaxplace.search.brkga import BRKGA


@dataclass(frozen=True)
class IslandSettings:
    """Static settings of one island search (one compiled program per Spec).

    impl: the decoder ("lanes", "fused", "simple"; "auto": resolved per group by
    `resolve_settings`). window: blocks of at most this many units in the lanes
    decoder's DP (None: the full DP; dropped when "auto" resolves to the fused
    kernel). A restricted DP never scores a candidate below its true cost, so the
    best is still confirmed by the float64 reference afterwards.
    """

    islands: int = 4
    population: int = 1024
    migrate_every: int = 10
    migrants: int = 2
    elite_fraction: float = 0.2
    mutant_fraction: float = 0.1
    rho: float = 0.7
    impl: str = "lanes"
    window: int | None = None

    def check(self) -> None:
        if self.islands < 1 or self.population < 4 or self.migrate_every < 1:
            raise JaxplaceError(f"need islands >= 1, population >= 4, migrate_every >= 1; "
                                f"got {self.islands}, {self.population}, "
                                f"{self.migrate_every}", field="islands")
        if not 0 <= self.migrants <= self.population // 2:
            raise JaxplaceError(f"must be between 0 and population/2, got {self.migrants}",
                                field="migrants")
        if self.impl not in IMPLS + (AUTO_IMPL,):
            raise JaxplaceError(f"must be one of {', '.join(IMPLS + (AUTO_IMPL,))}, got "
                                f"{self.impl!r}", field="impl")
        if self.window is not None and self.impl not in ("lanes", AUTO_IMPL):
            raise JaxplaceError("a window applies to impl='lanes' only", field="window")

    @property
    def width(self) -> int:
        """Candidates per problem and generation."""
        return self.islands * self.population


def resolve_settings(s: IslandSettings, spec: Spec, platform: str | None = None
                     ) -> tuple[IslandSettings, Spec]:
    """(settings with a concrete decoder, the Spec its program pads to) for a group
    padded to `spec` on `platform` (None: JAX's default backend): "auto" is the fused
    kernel on GPUs when it takes the group's graphs (`decoder.evaluator.resolve_impl`),
    else lanes; the fused kernel runs the full DP at its power-of-two shape."""
    impl = resolve_impl(s.impl, spec, platform=platform)
    if impl in ("fused", "sparse"):  # the Pallas kernels: full DP, power-of-two shapes
        return replace(s, impl=impl, window=None), fused_spec(spec)
    return (s if impl == s.impl else replace(s, impl=impl)), spec


@dataclass
class IslandResult:
    """Best candidate found for one problem."""

    cost: float  # float32 decoder cost of x
    x: np.ndarray  # (n,) float32 priorities
    evaluations: int
    history: np.ndarray  # (generations run + 1,) best cost after each generation (0: init)
    generations: int = 0  # generations that counted (up to its budget or target)


def elites(s: IslandSettings) -> int:
    """Elites per island and generation (`BRKGA.sizes`' count, static)."""
    algo = _brkga(s, 1)
    with jax.ensure_compile_time_eval():
        return int(algo.sizes(algo.default_params)[0])


def _brkga(s: IslandSettings, width: int) -> BRKGA:
    return BRKGA(s.population, jnp.zeros(width, jnp.float32), s.elite_fraction,
                 s.mutant_fraction, s.rho)


def _score(s: IslandSettings, spec: Spec, graphs, X, tau=None):
    """(G, C) costs of (G, C, W) candidates (inf for NaN). `tau` ((G,), the sparse
    kernel only): a candidate provably above its problem's tau costs +inf."""
    if s.impl == "sparse" and tau is not None:
        f = jax.vmap(lambda g, x, t: score(spec, g, x, impl="sparse", tau=t))(graphs, X, tau)
    else:
        f = jax.vmap(partial(score, spec, impl=s.impl, window=s.window))(graphs, X)
    return jnp.where(jnp.isnan(f), jnp.inf, f)


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
                 stop_t, target, t0, length: int):
    """Generations t0 .. t0 + length - 1 of a group: (pop, fit, best_f, best_x,
    history). Generation 0 scores the first populations as they are (one scorer in
    the program, so one compile); problem i's best changes only at generations
    t <= stop_t[i] while it is above target[i]."""
    G, I, P, W = pop.shape
    algo = _brkga(s, W)
    params = algo.default_params

    def ask(key, x, f):
        state = algo._init(key, params).replace(population=x, fitness=f)
        return algo._ask(key, state, params)[0]

    ask_all = jax.vmap(jax.vmap(ask))  # over problems, islands

    ne = elites(s)

    def step(carry, t):
        pop, fit, best_f, best_x = carry
        k = jax.vmap(jax.vmap(lambda key: jax.random.fold_in(key, t)))(keys)
        pop = jnp.where(t == 0, pop, ask_all(k, pop, fit))
        # the elites are copied unchanged, best first (`BRKGA._ask` ranks by the same
        # argsort): their fitness is carried, only the other rows are scored. At t = 0
        # the first P - ne rows are scored and the last ne (random draws) count as
        # worst, replaced at t = 1.
        ranked = jnp.take_along_axis(fit, jnp.argsort(fit, axis=-1), axis=-1)
        kept = jnp.where(t == 0, jnp.full((G, I, ne), jnp.inf, fit.dtype),
                         ranked[..., :ne])
        rows = jnp.where(t == 0, pop[:, :, :P - ne], pop[:, :, ne:])
        # the sparse kernel's bound: a new row worse than every island's worst elite
        # can become neither an elite nor a migrant, so its exact cost is not needed
        # (+inf; BRKGA draws its non-elite parent uniformly, whatever their order)
        tau = jnp.where(t == 0, jnp.inf, jnp.max(kept[..., -1], axis=1))
        new = _score(s, spec, graphs, rows.reshape(G, I * (P - ne), W), tau).reshape(
            G, I, P - ne)
        fit = jnp.where(t == 0, jnp.concatenate([new, kept], axis=-1),
                        jnp.concatenate([kept, new], axis=-1))
        if s.migrants and I > 1:
            mig = (t % s.migrate_every) == s.migrate_every - 1
            mpop, mfit = _migrate(s, pop, fit)
            pop, fit = jnp.where(mig, mpop, pop), jnp.where(mig, mfit, fit)
        flat = fit.reshape(G, I * P)
        i = jnp.argmin(flat, axis=1)
        f = jnp.take_along_axis(flat, i[:, None], axis=1)[:, 0]
        x = jnp.take_along_axis(pop.reshape(G, I * P, W), i[:, None, None], axis=1)[:, 0]
        better = (f < best_f) & (t <= stop_t) & (best_f > target)
        best_f = jnp.where(better, f, best_f)
        best_x = jnp.where(better[:, None], x, best_x)
        return (pop, fit, best_f, best_x), best_f

    ts = t0 + jnp.arange(length, dtype=jnp.int32)
    (pop, fit, best_f, best_x), hist = jax.lax.scan(step, (pop, fit, best_f, best_x), ts)
    return pop, fit, best_f, best_x, hist.T


@partial(jax.jit, static_argnames=("s", "spec", "length", "mesh"))
def run_generations(s: IslandSettings, spec: Spec, graphs, keys, pop, fit, best_f, best_x,
                    stop_t, target, t0, *, length: int, mesh=None):
    """One compiled call: `length` generations of every island of every problem of a
    group, sharded over `mesh` (axis "prob") when given."""
    body = partial(_generations, s, spec, length=length)
    args = (graphs, keys, pop, fit, best_f, best_x, stop_t, target)
    if mesh is None:
        return body(*args, t0)
    from jax.sharding import PartitionSpec as PS

    prob = PS("prob")
    return jax.shard_map(body, mesh=mesh, in_specs=(prob,) * len(args) + (PS(),),
                         out_specs=(prob,) * 5, check_vma=False)(*args, t0)


def problems_per_call(spec: Spec, s: IslandSettings, device, memory_budget: int) -> int:
    """Problems whose islands fit in half the device's free memory (or the budget)."""
    stats = device.memory_stats() or {}
    limit = stats.get("bytes_limit")
    free = (limit - stats.get("bytes_in_use", 0)) // 2 if limit else memory_budget
    per_problem = s.width * (bytes_per_candidate(spec, 4) + 8 * spec.width)
    return max(int(free // per_problem), 1)


def device_mesh(devices: Sequence | None, problems: int):
    """(mesh or None, device count): at most one device per problem."""
    devs = list(jax.local_devices() if devices is None else devices)[:max(problems, 1)]
    if len(devs) <= 1:
        return None, 1
    from jax.sharding import Mesh

    return Mesh(np.array(devs), ("prob",)), len(devs)


def group_sizes(count: int, per_call: int, ndev: int) -> tuple[int, int]:
    """(groups, padded problems per group): equal groups of at most `per_call`
    problems, a multiple of `ndev`, so that every group runs one compiled shape."""
    per_call = max(per_call // ndev, 1) * ndev
    groups = -(-count // per_call)
    size = -(-count // groups)
    return groups, -(-size // ndev) * ndev


class IslandGroup:
    """One group of problems whose islands advance together (see the module doc).

    problems[i] searches with key(seed + indices[i]) for generations[i] generations
    after its first populations (its evaluations: `settings.width` x (generations +
    1) at most) or until its best reaches targets[i]; seeds[i] (an (n,) priority
    vector or None) replaces the first candidate of its first island. The group is
    padded to `size` problems with copies of its first one (results dropped). Calls
    always run `migrate_every` generations (one compiled program per shape; the
    first call scores the first populations as its generation 0).
    """

    def __init__(self, s: IslandSettings, spec: Spec, problems: Sequence[Problem],
                 indices: Sequence[int], seed: int, generations: Sequence[int], *,
                 seeds: Sequence | None = None, targets: Sequence[float] | None = None,
                 mesh=None, size: int | None = None):
        platform = None if mesh is None else mesh.devices.flat[0].platform
        s.check()
        self.s, self.spec = resolve_settings(s, spec, platform)
        self.mesh = mesh
        self.problems = list(problems)
        m = len(self.problems)
        self.size = G = max(size or m, m)
        pad = G - m
        self.padded = self.problems + [self.problems[0]] * pad
        self.indices = list(indices) + [indices[0]] * pad
        self.seed = int(seed)
        self.gens = np.asarray(list(generations) + [0] * pad, np.int64)
        tg = [-np.inf] * m if targets is None else list(targets)
        self.targets = np.asarray(tg + [np.inf] * pad, np.float32)  # pads stop at once
        self.seeds = list(seeds) if seeds is not None else [None] * m
        self.t = 0  # generations run, the first populations' scoring (0) included
        self.state = None
        self.history: list[np.ndarray] = []

    @property
    def horizon(self) -> int:
        return int(self.gens.max(initial=0))

    def start(self) -> None:
        """Build the device arrays (the first populations, not yet scored)."""
        s, spec, G = self.s, self.spec, self.size
        W, I, P = spec.width, s.islands, s.population
        _, self.graphs = stack_graphs(self.padded, spec=spec)
        keys = jnp.stack([jax.random.key(self.seed + i) for i in self.indices])
        self.keys = jax.vmap(lambda k: jax.vmap(lambda j: jax.random.fold_in(k, j))(
            jnp.arange(I)))(keys)  # (G, I)
        # drawn as (W, P) and transposed, as BRKGA's genes: with threefry-partitionable
        # counters a real gene's draw does not depend on the padded width W
        pop = jax.vmap(jax.vmap(lambda k: jax.random.uniform(
            jax.random.fold_in(k, 0), (W, P), jnp.float32).T))(self.keys)
        rows = [(g, x) for g, x in enumerate(self.seeds) if x is not None]
        if rows:
            host = np.array(pop)
            for g, x in rows:
                x = np.asarray(x, np.float32).ravel()[:W]
                host[g, 0, 0, :] = 0.0
                host[g, 0, 0, :len(x)] = x
            pop = jnp.asarray(host)
        fit = jnp.full((G, I, P), jnp.inf, jnp.float32)
        best_f = jnp.full((G,), jnp.inf, jnp.float32)
        self.state = (pop, fit, best_f, pop[:, 0, 0])
        self.history = []
        self.stop_t = jnp.asarray(self.gens.astype(np.int32))
        self.target = jnp.asarray(self.targets)

    def finished(self) -> bool:
        """Every problem ran its generations or reached its target."""
        if not self.history:
            return False
        best = self.history[-1][:, -1]
        return bool(np.all((self.t > self.gens) | (best <= self.targets)))

    def advance(self) -> None:
        """One compiled call: `migrate_every` generations (calls always run the full
        length, one compiled program per shape; problems past their count are
        frozen)."""
        if self.state is None:
            self.start()
        pop, fit, best_f, best_x = self.state
        length = self.s.migrate_every
        pop, fit, best_f, best_x, h = run_generations(
            self.s, self.spec, self.graphs, self.keys, pop, fit, best_f, best_x,
            self.stop_t, self.target, jnp.int32(self.t), length=length, mesh=self.mesh)
        h = np.asarray(h)  # waits for the call: an interrupt leaves the group as it was
        self.state = (pop, fit, best_f, best_x)
        self.history.append(h)
        self.t += length

    def run(self) -> list[IslandResult]:
        """Advance until `finished`; the results."""
        if self.state is None:
            self.start()
        while not self.finished():
            self.advance()
        return self.results()

    def results(self) -> list[IslandResult]:
        """Best so far of every (unpadded) problem (at least one call must have run)."""
        if not self.history:
            raise JaxplaceError("no generation ran yet", field="group")
        _, _, best_f, best_x = self.state
        hist = np.concatenate(self.history, axis=1)
        bf, bx = np.asarray(best_f, np.float64), np.asarray(best_x)
        out = []
        for g, p in enumerate(self.problems):
            used = self.used_generations(g, hist[g])
            out.append(IslandResult(float(bf[g]), bx[g, :p.n].copy(),
                                    self.s.width * (used + 1), hist[g, :used + 1].copy(),
                                    used))
        return out

    def used_generations(self, g: int, hist: np.ndarray) -> int:
        """Generations that counted for problem g: up to its count, the time run, or
        the one whose best reached its target."""
        used = min(int(self.gens[g]), self.t - 1)
        reached = np.flatnonzero(hist <= self.targets[g])
        return min(used, int(reached[0])) if len(reached) else used


def island_search(problems: Sequence[Problem], *, generations: int | Sequence[int] = 100,
                  seed: int = 0, settings: IslandSettings | None = None,
                  devices: Sequence | None = None, spec: Spec | None = None,
                  seeds: Sequence | None = None, targets: Sequence[float] | None = None,
                  memory_budget: int = DEFAULT_MEMORY_BUDGET,
                  max_problems_per_call: int | None = None) -> list[IslandResult]:
    """Island BRKGA over every problem for `generations` generations (one count, or
    one per problem); problem i searches with seed `seed + i` (see the module doc and
    `IslandGroup` for `seeds` and `targets`). `spec`: the padded shape (default: the
    merged Spec of the problems). One `IslandResult` per problem, in order."""
    s = settings or IslandSettings()
    s.check()
    problems = list(problems)
    if not problems:
        raise JaxplaceError("no problems", field="problems")
    check_problems(problems)
    gens = ([int(generations)] * len(problems) if np.ndim(generations) == 0
            else [int(g) for g in generations])
    if len(gens) != len(problems) or min(gens) < 0:
        raise JaxplaceError(f"must be >= 0 (one count, or one per problem), got "
                            f"{generations}", field="generations")
    s, spec = resolve_settings(s, merged_spec(problems) if spec is None else spec,
                               default_platform(devices))
    mesh, ndev = device_mesh(devices, len(problems))
    dev0 = (list(jax.local_devices()) if devices is None else list(devices))[0]
    per_call = problems_per_call(spec, s, dev0, memory_budget) * ndev
    if max_problems_per_call is not None:
        per_call = min(per_call, max(int(max_problems_per_call), 1))
    groups, size = group_sizes(len(problems), per_call, ndev)
    step = -(-len(problems) // groups)
    out: list[IslandResult] = []
    for lo in range(0, len(problems), step):
        idx = range(lo, min(lo + step, len(problems)))
        out += IslandGroup(s, spec, [problems[i] for i in idx], list(idx), seed,
                           [gens[i] for i in idx],
                           seeds=None if seeds is None else [seeds[i] for i in idx],
                           targets=None if targets is None else [targets[i] for i in idx],
                           mesh=mesh, size=size).run()
    return out


def check_problems(problems: Sequence[Problem], field: str = "problems") -> None:
    """Island search scores the identical-device model only."""
    for i, p in enumerate(problems):
        if not isinstance(p, Problem):
            raise JaxplaceError(f"expected a Problem, got {type(p).__name__}",
                                field=f"{field}[{i}]")
        if not p.objective_impl.supports("identical_devices"):
            raise JaxplaceError("island search scores identical devices only",
                                field=f"{field}[{i}]")


def merged_spec(problems) -> Spec:
    from jaxplace.decoder.layout import problem_spec

    spec = problem_spec(problems[0])
    for p in problems[1:]:
        spec = spec.merge(problem_spec(p))
    return spec


__all__ = ["IslandGroup", "IslandResult", "IslandSettings", "check_problems",
           "device_mesh", "group_sizes", "island_search", "merged_spec",
           "problems_per_call", "resolve_settings", "run_generations"]
