"""`search_many(..., mode="islands")` and `search(problem, "islands")`: island BRKGA
sized to the device (`jaxplace.search._islands`).

The accelerator mode of batched searches: instead of one 100-wide BRKGA then a local
search per problem, every problem runs `islands` BRKGA populations of `population`
candidates with migration (`IslandSettings`), all problems of a bucket and all their
islands advanced by one compiled call, the bucket cut into groups that fit half the
device's free memory, each group sharded over the local devices along its problems.
`mode=None` picks it on GPUs (`auto_mode`); on CPUs the default mode stays.

Each problem keeps its float64-confirmed best: the island search's best, or the best
heuristic order when that was never beaten (its first island starts from it); then,
as in the default mode, the MIP polish at k <= 4 (`run.polish_result`). Every problem
searches with seed `seed` (not its place in the list) over its bucket's padded shape;
without a time limit its result depends neither on the other problems of the call
(other than through the bucket's shape) nor on the device count.

Budget: evaluations per problem (default: the default search's `default_budget`, at
least MIN_GENERATIONS generations of the islands); a problem runs
budget // (islands x population) - 1 generations after its first populations, fewer
when it reaches its lower bound. With a time limit, buckets run one after another,
each with the time left times its share of the padded work still waiting, stopped
after the compiled call that crosses it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields, replace

import jax
import numpy as np

from jaxplace.decoder.batching import DEFAULT_MEMORY_BUDGET
from jaxplace.decoder.evaluator import AUTO_IMPL, default_platform
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.search._islands import (
    IslandGroup,
    IslandSettings,
    device_mesh,
    group_sizes,
    problems_per_call,
    resolve_settings,
)
from jaxplace.search.many.run import polish_result
from jaxplace.search.result import History, Result

#: The mode names of `search_many(mode=...)`; None picks `auto_mode`.
MODES = ("default", "islands")
#: Island settings by platform when none are given. Accelerators: 4 x 1,024 per
#: problem, the issue's 10^3-10^4, decoder "auto" (per group: the fused kernel on GPUs
#: where it applies, else lanes; on an H200 the fused kernel was the faster decoder
#: and the only one giving the same costs run to run with XLA's default flags).
#: CPUs (explicit `mode="islands"`): on 6 REGAL-like graphs at 30,000 evaluations,
#: 4 x 256 came within 1.025x of the default mode's cost, 2 x 64 within 1.040x
#: (polish off in both; wider populations did better than more generations).
@dataclass(frozen=True)
class ModeSettings(IslandSettings):
    """The island engine's settings and what the mode does after it: `refine_steps`
    rounds of the device refinement (`device_refine`: every unit's cut moves scored
    in one decoder call per round) on each problem's best, before the host's MIP
    polish (0: none)."""

    refine_steps: int = 0

    def check(self) -> None:
        super().check()
        if not isinstance(self.refine_steps, int | np.integer) or self.refine_steps < 0:
            raise JaxplaceError(f"must be an integer >= 0, got {self.refine_steps!r}",
                                field="refine_steps")

    def engine(self) -> IslandSettings:
        """The island engine's part (its compiled programs do not depend on the rest)."""
        return IslandSettings(**{f.name: getattr(self, f.name)
                                 for f in fields(IslandSettings)})


#: Device refinement rounds on accelerators (untuned: no GPU was lent when written;
#: `jaxplace bench gpu`'s islands part measures it). CPUs: none (from the same starts on
#: the k = 4 graphs of the regal-time suite its moves gained 0.04%, the MIP polish 2.4%).
ACCELERATOR_REFINE_STEPS = 16
ACCELERATOR_ISLANDS = ModeSettings(islands=4, population=1024, migrate_every=10,
                                   impl=AUTO_IMPL, refine_steps=ACCELERATOR_REFINE_STEPS)
CPU_ISLANDS = ModeSettings(islands=4, population=256, migrate_every=8)
#: The default budget covers at least this many generations of the islands.
MIN_GENERATIONS = 50
#: search_many options that set the island settings (population: per island).
ISLAND_OPTIONS = {"islands": "islands", "population": "population",
                  "migrate_every": "migrate_every", "migrants": "migrants",
                  "elite_fraction": "elite_fraction", "mutant_fraction": "mutant_fraction",
                  "rho": "rho", "impl": "impl", "refine_steps": "refine_steps"}


def auto_mode(platform: str | None = None) -> str:
    """"islands" on GPUs (a 100-wide population leaves them idle), else "default"."""
    return "islands" if (platform or jax.default_backend()) == "gpu" else "default"


def check_mode(mode: str | None) -> str:
    """The mode to run (None: `auto_mode`), or a JaxplaceError naming the choices."""
    if mode is None:
        return auto_mode()
    if mode not in MODES:
        raise JaxplaceError(f"must be one of {', '.join(MODES)} (or None: islands on "
                            f"GPUs), got {mode!r}", field="mode")
    return mode


def island_settings(options: dict, platform: str | None = None) -> ModeSettings:
    """The platform's settings, overridden by `options` (search_many's keywords)."""
    base = CPU_ISLANDS if (platform or jax.default_backend()) == "cpu" else \
        ACCELERATOR_ISLANDS
    s = replace(base, **{ISLAND_OPTIONS[k]: v for k, v in options.items()
                         if k in ISLAND_OPTIONS})
    s.check()
    return s


def island_budget(problem, budget: int | None, s: IslandSettings) -> int:
    from jaxplace.search.default import default_budget

    if budget is not None:
        return int(budget)
    return max(default_budget(problem), s.width * (MIN_GENERATIONS + 1))


def generations_of(budget: int, s: IslandSettings) -> int:
    """Generations after the first populations within `budget` evaluations."""
    return max(int(budget) // s.width - 1, 0)


def islands_buckets(prepared, buckets, settings, cancel: threading.Event, start: float
                    ) -> Iterator[tuple[int, Result]]:
    """Yields (index, Result) of every problem of `buckets` (see the module doc);
    `settings`: search_many's `ManySettings` (mode "islands")."""
    base = settings.islands or island_settings({})
    if not isinstance(base, ModeSettings):  # plain engine settings: no refinement
        base = ModeSettings(**{f.name: getattr(base, f.name) for f in fields(base)})
    refine_steps = base.refine_steps
    base = base.engine()
    runs = []  # (bucket, group members, IslandGroup)
    platform = default_platform(settings.devices)
    for b in buckets:
        members = [prepared[i] for i in b.members]
        # "auto": per bucket (its groups share its padded shape, so "every problem of
        # the group" is "every problem of the bucket")
        s, spec = resolve_settings(
            replace(base, window=b.window if base.impl in ("lanes", AUTO_IMPL) else None),
            b.spec, platform)
        mesh, ndev = device_mesh(settings.devices, len(members))
        dev0 = (settings.devices or jax.local_devices())[0]
        per_call = problems_per_call(spec, s, dev0, DEFAULT_MEMORY_BUDGET) * ndev
        if settings.group is not None:
            per_call = min(per_call, int(settings.group))
        groups, size = group_sizes(len(members), per_call, ndev)
        step = -(-len(members) // groups)
        for lo in range(0, len(members), step):
            part = members[lo:lo + step]
            budgets = [island_budget(m.problem, settings.budget, s) for m in part]
            group = IslandGroup(
                s, spec, [m.problem for m in part], [0] * len(part),  # key(seed + 0) each
                settings.seed, [generations_of(x, s) for x in budgets],
                seeds=[m.x_seed for m in part],
                targets=[m.lower_bound * (1 + 1e-6) for m in part], mesh=mesh, size=size)
            group.refine_steps = refine_steps
            runs.append((b, part, group, b.work() * len(part) / len(members)))
    waiting = sum(r[3] for r in runs)
    for b, part, group, work in runs:
        if cancel.is_set():
            return
        limit = None
        if settings.time_limit is not None:
            left = settings.time_limit - (time.perf_counter() - start)
            limit = time.perf_counter() + left * min(1.0, work / waiting)
        waiting -= work
        yield from run_group(b, part, group, settings, cancel, start, limit)


def run_group(bucket, part, group: IslandGroup, settings, cancel, start, deadline):
    """One group from start to stop (the first call always runs unless cancelled;
    then a call only before `deadline`); yields every member's Result, none when no
    call ran (the caller reports the heuristic starts)."""
    times: list[float] = []  # seconds since `start` after each call
    interrupted = False
    try:
        group.start()
        while not group.finished():
            if cancel.is_set() or (deadline is not None and times
                                   and time.perf_counter() >= deadline):
                interrupted = True
                break
            group.advance()
            times.append(time.perf_counter() - start)
    except KeyboardInterrupt:
        interrupted = True
        cancel.set()
    if not group.history:
        return
    results = group.results()
    refined = None
    steps = getattr(group, "refine_steps", 0)
    if steps and not interrupted and not cancel.is_set() and (
            deadline is None or time.perf_counter() < deadline):
        try:
            results, refined = refine_results(group, results, steps)
        except Exception as exc:  # noqa: BLE001 - an optional improvement: the island
            # answers stand, the failure is said in every result's info and warned once
            import warnings

            said = f"{type(exc).__name__}: {exc}"[:300]
            warnings.warn(f"device refinement failed, answers unrefined: {said}",
                          RuntimeWarning, stacklevel=2)
            refined = [{"steps": int(steps), "error": said}] * len(results)
    times += [time.perf_counter() - start] * (len(group.history) - len(times))
    info = {"mode": "islands", "islands": group.s.islands,
            "population": group.s.population, "migrate_every": group.s.migrate_every,
            "impl": group.s.impl,
            "bucket": {"N": group.spec.N, "K": group.spec.K, "window": group.s.window,
                       "problems": len(bucket.members), "group": group.size}}
    # The members' MIP polishes run on the host's cores side by side (HiGHS releases
    # the GIL; each polish is one HiGHS thread under a node limit, so the answers do
    # not depend on how many run at once): on a GPU host they were most of the wall.
    infos = [info if refined is None else {**info, "refine": refined[i]}
             for i in range(len(part))]
    workers = max(1, min(len(part), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers, thread_name_prefix="jaxplace-polish") as pool:
        done = pool.map(lambda mr: finish(mr[0], mr[1], group.s, times, mr[2], settings,
                                          start, interrupted, cancel),
                        zip(part, results, infos, strict=True))
        for m, res in zip(part, done, strict=True):
            yield m.index, res


def refine_results(group: IslandGroup, results: list, steps: int):
    """(results with each problem's best refined on the device, per-problem info):
    `device_refine.refine_group` on the group's stacked graphs and best rows (one
    compiled call, sharded as the group), kept only where the decoder's cost of the
    refined row is below the island search's."""
    from jaxplace.search.many._device_refine import refine_group

    t0 = time.perf_counter()
    _, _, _, best_x = group.state
    X, F, applied = refine_group(group.spec, group.s.impl, int(steps), group.graphs,
                                 best_x, mesh=group.mesh)
    X, F, applied = np.asarray(X), np.asarray(F), np.asarray(applied)
    wall = time.perf_counter() - t0
    out, infos = [], []
    for g, r in enumerate(results):
        n = group.problems[g].n
        better = bool(F[g] < r.cost and applied[g] > 0)
        if better:
            r = replace(r, cost=float(F[g]), x=X[g, :n].copy())
        out.append(r)
        infos.append({"steps": int(steps), "moves": int(applied[g]), "improved": better,
                      "evaluations": int(steps) * 2 * group.spec.N + 1,
                      "group_wall_s": round(wall, 3)})
    return out, infos


def finish(m, r, s: IslandSettings, times: list[float], info: dict, settings, start: float,
           interrupted: bool, cancel: threading.Event | None = None) -> Result:
    """The Result of problem `m` (a `Prepared`) from its `IslandResult`."""
    p = m.problem
    x = np.asarray(r.x, np.float32)[:p.n]
    part = decode_reference(p, x)
    info = {**info, "generations": r.generations, "evaluations": r.evaluations}
    if not part.cost <= m.f_seed:  # the heuristic start was never beaten
        part, x = decode_reference(p, m.x_seed), m.x_seed
        info["start"] = "heuristic"
    evals = r.evaluations
    if not interrupted and not (cancel is not None and cancel.is_set()):
        part, x, evals = polish_result(p, m.lower_bound, part, x, evals, info, settings,
                                       time.perf_counter() - start)
        if info.get("polish", {}).get("stopped"):
            interrupted = True  # a wall-clock limit the user gave cut it short
            info["stopped"] = "time limit"
    t = np.arange(len(r.history))
    calls = np.minimum(t // s.migrate_every, len(times) - 1)
    hist = History((t + 1).astype(np.int64) * s.width, np.asarray(times)[calls],
                   np.asarray(r.history, np.float64))
    return Result(cost=float(part.cost), partition=part, priorities=x,
                  evaluations=int(evals), wall_time=time.perf_counter() - start,
                  history=hist, method="many", lower_bound=m.lower_bound,
                  interrupted=interrupted, info=info)


__all__ = ["ACCELERATOR_ISLANDS", "ACCELERATOR_REFINE_STEPS", "CPU_ISLANDS", "ISLAND_OPTIONS",
           "MIN_GENERATIONS", "MODES", "ModeSettings", "auto_mode", "check_mode", "finish",
           "generations_of", "island_budget", "island_settings", "islands_buckets",
           "refine_results", "run_group"]
