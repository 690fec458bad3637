"""`search_many(problems)`: many problems in few compiled programs, streamed results.

    import jaxplace as jp
    results = jp.search_many([jp.Problem(g, k) for g in graphs for k in (2, 4, 8)],
                             time_limit=60, on_result=lambda i, r: print(i, r.cost))

The problems are grouped into buckets of one padded shape (`buckets`: at most
`max_programs` of them, k a runtime value of the decoder). A bucket is one compiled
program (`program`) that advances the searches of all its problems together,
vmapped over problems x population: BRKGA (population 100, a third of the budget,
stopped early without improvement; at k >= 8 its first population and mutants
drawn from the shipped policy, as in the default search), then a batched local
search on the order from the better of BRKGA's best and the best heuristic order,
each problem on its own schedule with its own budget, patience and target (the
simple lower bound). For k <= 4 a problem's best partition then gets the default
search's MIP polish (`polish_nodes` branch-and-bound nodes; under a time limit also
at most MANY_POLISH_MAX_TIME seconds of HiGHS).

Results stream out as each problem finishes (`on_result(index, result)`, or
`iter_search_many` as a generator); Ctrl-C or `cancel.set()` stops the run and
keeps every finished result and, for each unfinished problem, its best so far (the
best heuristic order when its bucket never started), marked `interrupted`.

Executors: "local" runs the buckets in this process, `workers` of them at once on
host threads (`local`: one per core by default; with a time limit all programs
are compiled first, then each bucket gets a share of the time left by its padded
work); "ray" runs one Ray task per bucket (`num_cpus` each; `ray_address`: an
existing cluster, None: a local one), each with the whole time limit. With no time
limit both give identical results for the same seeds, whatever the workers: every
problem searches with seed `seed` (not its place in the list), and its random stream
does not depend on how steps are cut into chunks or on which thread runs its bucket,
nor (buckets merged only within one window, `buckets`) on the width of its padded
shape: the same problem, k and seed give the same result alone and in any batch.

Modes: "default" (above) or "islands" (`islands_mode`: per problem several wide
BRKGA populations with migration, sized to the device, every problem of a bucket
and all its islands in one call, sharded over the local devices); `mode=None` picks
"islands" on GPUs and "default" elsewhere.

Every reported cost is the float64 reference's (`jaxplace.objectives.throughput.reference`) of the
reported partition.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from jaxplace.decoder.batching import usable_cores
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import simple_lower_bound
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.objectives.throughput.search import (  # the default search's settings
    BRKGA_SHARE,
    POPULATION,
)
from jaxplace.problem import Problem
from jaxplace.search.many.buckets import MAX_PROGRAMS, Bucket, plan_buckets, problem_class
from jaxplace.search.many.run import (  # noqa: F401 (MANY_POLISH_MAX_TIME: public here)
    MANY_POLISH_MAX_TIME,
    bucket_groups,
    default_group,
    run_bucket,
)
from jaxplace.search.result import History, Result

#: Steps per compiled call between host checks (time limit, streaming, focus refresh).
CHUNK_STEPS = 8
METHOD = "many"


@dataclass(frozen=True)
class ManySettings:
    """Per-call settings shared by every bucket (picklable, for Ray tasks).

    budget: evaluations per problem (None: the default search's `default_budget`);
    time_limit: seconds per bucket (None: none); polish: None (the default search's
    rule: k <= 4), True or False; polish_nodes: its branch-and-bound nodes (a
    deterministic limit; None: the default's `polish_nodes(k)`); polish_max_time: its
    HiGHS seconds at most (None: none without a time limit, MANY_POLISH_MAX_TIME under
    one; a number is a wall-clock limit the user gave, so results may then depend on
    the load); group:
    problems of a bucket advanced together by one program call (None:
    `default_group`; mode "islands": as many as fit the device's memory); mode:
    "default" (BRKGA then a local search per problem) or "islands" (`islands_mode`:
    island BRKGA sized to the device; `islands` its `IslandSettings`).
    """

    seed: int = 0
    budget: int | None = None
    time_limit: float | None = None
    population: int = POPULATION
    brkga_share: float = BRKGA_SHARE
    brkga_patience: int | None = None
    patience: int | None = None
    polish: bool | None = None
    chunk: int = CHUNK_STEPS
    group: int | None = None
    polish_max_time: float | None = None
    polish_nodes: int | None = None
    options: tuple = ()
    mode: str = "default"
    islands: object = None  # mode "islands": its IslandSettings (None: the platform's)
    devices: tuple | None = None  # mode "islands": devices to shard over (None: all local)


@dataclass
class Prepared:
    """Host-side facts of one problem, computed once before bucketing."""

    problem: Problem
    index: int
    x_seed: np.ndarray  # (n,) float32 best heuristic order
    f_seed: float  # its float64 reference cost
    lower_bound: float
    cls: tuple = field(default=None)  # problem_class()
    dist: dict | None = None  # the shipped policy's {"mean", "log_std"} (n,) or None


def prepare(problem: Problem, index: int, coupled: bool | None = None,
            policies: dict | None = None) -> Prepared:
    """Validate one problem and compute its heuristic start, size class and (when
    `coupled`; None: the default search's rule, k >= 8) the policy distribution.
    `policies`: loaded policies by name, shared by the problems of one call."""
    from jaxplace.decoder.layout import graph_structure
    from jaxplace.search.baselines import seed_priorities

    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field=f"problems[{index}]")
    problem.objective_impl.require("search_many", field=f"problems[{index}]")
    if coupled is None:
        from jaxplace.objectives.throughput.search import policy_helps

        coupled = policy_helps(problem)
    seeds = seed_priorities(problem.graph)
    costs = [decode_reference(problem, x).cost for x in seeds]
    j = int(np.argmin(costs))
    st = graph_structure(problem.graph)
    return Prepared(problem, index, np.asarray(seeds[j], np.float32), float(costs[j]),
                    float(simple_lower_bound(problem)),
                    problem_class(problem, costs[j], st),
                    policy_distribution(problem, policies) if coupled else None)


def policy_distribution(problem: Problem, policies: dict | None = None) -> dict:
    """The shipped policy's per-node Gaussians for `problem` (NumPy, (n,) each);
    `policies` keeps each loaded policy by name (loading one builds its model: a
    fraction of a second, paid once per call instead of once per problem)."""
    from jaxplace.policy import load_policy, node_distribution
    from jaxplace.policy.routing import default_policy_name

    policies = {} if policies is None else policies
    name = default_policy_name(problem)
    if name not in policies:
        policies[name] = load_policy(None, problem=problem)
    return node_distribution(policies[name], problem, 0.0)


def search_many(problems: Sequence[Problem], method: str | None = None, *,
                time_limit: float | None = None, budget: int | None = None, seed: int = 0,
                executor: str = "local",
                on_result: Callable[[int, Result], None] | None = None,
                cancel: threading.Event | None = None,
                max_programs: int = MAX_PROGRAMS, polish: bool | None = None,
                ray_address: str | None = None, num_cpus: int = 1,
                use_policy: bool | None = None, exact: bool = True,
                workers: int | None = None, mode: str | None = None,
                **options) -> list[Result]:
    """Best partition of every problem, searched in batches (see the module doc).

    Args:
        problems: throughput problems on identical devices (any sizes and k).
        method: "default" (or None): the batched default search, the only one.
        time_limit: seconds for the whole call (local executor, shared among the
            buckets by padded work) or per bucket (Ray: buckets run in parallel).
        budget: decoder evaluations per problem (default: `default_budget`).
        seed: every problem searches with this seed (its result does not depend
            on its batch mates).
        executor: "local" (this process) or "ray" (one Ray task per bucket).
        on_result: called as `on_result(index, result)` as each problem finishes.
        cancel: set it (from any thread) to stop after the chunk in flight.
        max_programs: at most this many buckets, i.e. compiled programs.
        polish: the MIP polish at k <= 4 (None: the default search's rule).
        ray_address: Ray cluster to connect to (None: start or reuse a local one).
        num_cpus: CPU cores each Ray task asks for.
        use_policy: BRKGA's first population and mutants from the shipped policy
            (None: the default search's rule, k >= 8 identical accelerators).
        exact: first prove the problems an exact method fits at once (the planner's
            first step: the DP over ideals on graphs with few ideals); they skip the
            batched search.
        workers: local executor: buckets run at once on this many host threads
            (None: one per CPU core this process may use).
        mode: "default" (BRKGA then a local search per problem), "islands" (island
            BRKGA sized to the device, `islands_mode`: every problem of a bucket and
            all its islands in one call, sharded over the local devices; local
            executor only) or None: "islands" on GPUs, "default" elsewhere.
        options: `population`, `brkga_share`, `brkga_patience`, `patience`, `chunk`,
            `group` (problems per program call; default: 1 on CPUs, the whole bucket
            on accelerators), `polish_nodes` (branch-and-bound nodes of the MIP polish;
            default the default search's, `polish.polish_nodes(k)`), `polish_max_time`
            (seconds, a wall-clock limit; default: none without a time limit,
            MANY_POLISH_MAX_TIME under one). Mode
            "islands": `islands`, `population` (per island), `migrate_every`,
            `migrants`, `elite_fraction`, `mutant_fraction`, `rho`, `impl`, `group`
            (defaults: `islands_mode.CPU_ISLANDS` on CPUs, else ACCELERATOR_ISLANDS),
            `devices` (to shard over; default: every local device).

    Returns:
        One `Result` per problem, in input order (`method` "many").
    """
    problems = problem_list(problems)
    out: list[Result | None] = [None] * len(problems)
    for i, r in iter_search_many(problems, method, time_limit=time_limit, budget=budget,
                                 seed=seed, executor=executor, cancel=cancel,
                                 max_programs=max_programs, polish=polish,
                                 ray_address=ray_address, num_cpus=num_cpus,
                                 use_policy=use_policy, exact=exact, workers=workers,
                                 mode=mode, **options):
        out[i] = r
        if on_result is not None:
            on_result(i, r)
    return out


def iter_search_many(problems: Sequence[Problem], method: str | None = None, *,
                     time_limit: float | None = None, budget: int | None = None,
                     seed: int = 0, executor: str = "local",
                     cancel: threading.Event | None = None,
                     max_programs: int = MAX_PROGRAMS, polish: bool | None = None,
                     ray_address: str | None = None, num_cpus: int = 1,
                     use_policy: bool | None = None, exact: bool = True,
                     workers: int | None = None, mode: str | None = None,
                     **options) -> Iterator[tuple[int, Result]]:
    """`search_many` as a generator of (index, Result), in finishing order; every
    problem is yielded exactly once, also after Ctrl-C or `cancel`."""
    start = time.perf_counter()
    settings = _settings(method, time_limit, budget, seed, polish, options, mode)
    require_executor(executor)
    islands = settings.mode == "islands"
    if islands and executor != "local":
        raise JaxplaceError("mode 'islands' runs on this process's devices: executor "
                            "'local' only", field="executor")
    if islands:
        use_policy = False  # the islands start uniform (and from the heuristic order)
    if workers is not None and int(workers) < 1:
        raise JaxplaceError(f"must be at least 1, got {workers}", field="workers")
    problems = problem_list(problems)
    if not problems:
        return
    cancel = cancel or threading.Event()
    policies: dict = {}
    prepared = [prepare(p, i, use_policy, policies)  # validates
                for i, p in enumerate(problems)]
    solved = []
    if exact:  # the planner's first step: problems an exact method proves at once
        from jaxplace.search._planner import exact_answer

        share = None if time_limit is None else 0.5 * time_limit / len(problems)
        try:
            for i, p in enumerate(problems):
                if cancel.is_set():
                    break
                r = exact_answer(p, seed=seed, time_limit=share)
                if r is not None:
                    solved.append(i)
                    yield i, replace(r, method="many")
        except KeyboardInterrupt:
            cancel.set()
    prepared = [p for p in prepared if p.index not in solved]
    if not prepared:
        return
    buckets = plan_buckets([p.cls for p in prepared], max_programs)
    pending = {p.index for p in prepared}
    try:
        if islands:
            from jaxplace.search.many.islands_mode import islands_buckets

            stream = islands_buckets(prepared, buckets, settings, cancel, start)
        elif executor == "ray":
            from jaxplace.search.many.ray_tasks import ray_buckets

            stream = ray_buckets(prepared, buckets, settings, cancel, ray_address,
                                 num_cpus)
        else:
            from jaxplace.search.many._threads import local_buckets

            stream = local_buckets(prepared, buckets, settings, cancel, start,
                                   workers or usable_cores())
        try:
            for i, r in stream:  # wall time: from this call's start, any executor
                pending.discard(i)
                yield i, replace(r, wall_time=time.perf_counter() - start)
        finally:
            stream.close()  # Ray: cancels the tasks still running
    except KeyboardInterrupt:
        cancel.set()
    by_index = {p.index: p for p in prepared}  # without the problems proved exactly
    for i in sorted(pending):  # never started, or lost to an interrupt
        yield i, seed_result(by_index[i], start)


def require_executor(executor: str) -> None:
    """A JaxplaceError unless `executor` is "local", or "ray" with Ray installed
    (checked before any work, so that nothing is searched or written first)."""
    if executor not in ("local", "ray"):
        raise JaxplaceError(f"must be 'local' or 'ray', got {executor!r}", field="executor")
    if executor == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise JaxplaceError("Ray is not installed: pip install \"jaxplace[ray]\"",
                                field="executor")


def problem_list(problems) -> list:
    """`problems` as a list (a sequence or iterator of anything; each item is checked
    by `prepare`), or a JaxplaceError naming the field."""
    if isinstance(problems, (str, bytes, Problem)) or not isinstance(
            problems, Sequence | Iterator):
        raise JaxplaceError(f"expected a list of Problems, got {type(problems).__name__}",
                            field="problems")
    return list(problems)


def _settings(method, time_limit, budget, seed, polish, options, mode=None
              ) -> ManySettings:
    if method not in (None, "default", METHOD):
        raise JaxplaceError(f"search_many runs the batched default search; got "
                            f"{method!r}", field="method")
    if budget is not None and budget < 1:
        raise JaxplaceError("must be at least 1", field="budget")
    if time_limit is not None and not time_limit > 0:
        raise JaxplaceError("must be positive", field="time_limit")
    from jaxplace.search.many.islands_mode import ISLAND_OPTIONS, check_mode, island_settings

    mode = check_mode(mode)
    known = {"population", "brkga_share", "brkga_patience", "patience", "chunk", "group",
             "polish_max_time", "polish_nodes"}
    islands = None
    if mode == "islands":  # the default mode's phase options do not apply
        known = {"group", "polish_max_time", "polish_nodes", "devices"} | set(ISLAND_OPTIONS)
        islands = island_settings({k: v for k, v in options.items() if k in ISLAND_OPTIONS})
        options = {k: v for k, v in options.items() if k not in ISLAND_OPTIONS}
        if options.get("devices") is not None:
            options["devices"] = tuple(options["devices"])
            if not options["devices"]:
                raise JaxplaceError("no devices", field="devices")
    bad = sorted(set(options) - known)
    if bad:
        raise JaxplaceError(f"unknown option(s) {', '.join(bad)}; known: "
                            f"{', '.join(sorted(known))}", field="options")
    if options.get("group") is not None and int(options["group"]) < 1:
        raise JaxplaceError(f"must be at least 1, got {options['group']}", field="group")
    return ManySettings(seed=int(seed), budget=budget, time_limit=time_limit,
                        polish=polish, mode=mode, islands=islands, **options)


def seed_result(p: Prepared, start: float, interrupted: bool = True) -> Result:
    """The best heuristic order's result (a problem whose search never ran)."""
    part = decode_reference(p.problem, p.x_seed)
    return Result(cost=float(part.cost), partition=part, priorities=p.x_seed,
                  evaluations=0, wall_time=time.perf_counter() - start,
                  history=History.empty(), method=METHOD, lower_bound=p.lower_bound,
                  interrupted=interrupted, info={"start": "heuristic"})


def bucket_summary(problems: Sequence[Problem], max_programs: int = MAX_PROGRAMS
                   ) -> list[Bucket]:
    """The buckets (padded shapes and windows) `search_many` would use."""
    policies: dict = {}
    prepared = [prepare(p, i, policies=policies) for i, p in enumerate(problems)]
    return plan_buckets([p.cls for p in prepared], max_programs)


def geometric_mean(x) -> float:
    x = np.asarray(x, np.float64)
    return float(np.exp(np.mean(np.log(x)))) if len(x) else math.nan


__all__ = ["ManySettings", "bucket_groups", "bucket_summary", "default_group", "iter_search_many",
           "require_executor", "run_bucket", "search_many"]
