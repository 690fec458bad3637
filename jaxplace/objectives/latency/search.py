"""Searching priorities for the latency objective (the `jp.search` side).

Every search method that scores candidates through `SearchRequest.fitness` (default,
random, brkga, every evosax algorithm) scores a latency problem with the batched list
scheduler (`jaxplace.objectives.latency.decoder`); `latency_result` turns the best priorities
into a `Result` through the float64 reference. The default search for latency:

1. BRKGA (population 100) with the heuristic priorities in its first population: the
   HEFT upward ranks (so the EFT greedy baseline is a candidate from the start), the
   DFS linearization, ASAP/ALAP-style seeds of `search.baselines.seed_priorities`;
   half the budget, stopped after PATIENCE evaluations without improvement.
2. A (1 + batch) local search (`KeyShift`): each candidate moves a few ops' keys next
   to another op's key (so Kahn emits it right before or after that op), accepting
   no-worse candidates; the rest of the budget, same patience.
3. The answer is the best schedule of the searches, the seeds and the baselines of
   `jaxplace.objectives.latency.baselines` (fastest single device, EFT greedy, best contiguous
   pipeline), by the float64 reference: the default search is never worse than any of
   them. A baseline schedule is not always a list schedule of some priorities (the
   earliest-finish rule never puts a whole graph on a device that is slower for its
   first ops); when one wins, `Result.info["baseline"]` names it, `Result.schedule`
   and `Result.assignment` are its, and `Result.priorities` give its op order only.
4. `latency.refine.refine` (host, float64 reference): from the answer and each
   baseline schedule, a local search over device assignments and the op order with
   devices fixed (`REFINE_SECONDS` in all, half from the answer, option `refine_seconds`; 0
   turns it off; never past the search's time limit, skipped after a cancel).
   It reaches schedules no priority vector gives (an op off its earliest-finish
   device): on the 26 small instances of `python -m experiments.bench.latency --small` that the
   MILP solved exactly, search / optimum went from a geometric mean of 1.017 (max
   1.12) to 1.0034 (24 of 26 within 1%). When it wins,
   `Result.info["refined"]` is True and the schedule is the refined one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.latency.baselines import BASELINES, upward_ranks
from jaxplace.objectives.latency.instance import Schedule
from jaxplace.objectives.latency.reference import kahn_order, list_schedule
from jaxplace.objectives.latency._refine import refine, start_order
from jaxplace.partition import Partition

#: Share of the budget spent by BRKGA; the rest goes to the local search.
BRKGA_SHARE = 0.5
POPULATION = 100
#: Stop a phase after this many evaluations without improvement.
PATIENCE = 6000
#: Seconds of the final device/order local search (`latency.refine`).
REFINE_SECONDS = 5.0


@dataclass(frozen=True, eq=False)
class ScheduledPartition(Partition):
    """A `Partition` of the latency objective that carries its schedule: its cost is
    that schedule's event order replayed (`reference.replay_schedule`), not the
    earliest-start schedule of `order`, which may be longer (a refined or baseline
    schedule, or one a MILP found, is no list schedule of its op order)."""

    schedule: Schedule | None = None


def schedule_partition(graph, x, schedule: Schedule) -> ScheduledPartition:
    """A `Partition` standing for a schedule: the Kahn order of x, no cuts, the device
    of every op as its assignment, the makespan as its cost, the schedule itself."""
    return ScheduledPartition(kahn_order(graph, x), (),
                              np.asarray(schedule.device, np.int64),
                              float(schedule.makespan), schedule=schedule)


def latency_result(req, method: str, x, evaluations: int, history, interrupted: bool,
                   info: dict | None = None, schedule: Schedule | None = None):
    """The `Result` of priorities x for a latency problem: their list schedule (float64
    reference), or `schedule` when given."""
    from jaxplace.search.result import Result

    inst = req.problem.latency
    x = np.asarray(x, np.float32)[:req.problem.n]
    s = list_schedule(inst, x) if schedule is None else schedule
    return Result(cost=s.makespan, partition=schedule_partition(inst.graph, x, s),
                  priorities=x, evaluations=int(evaluations),
                  wall_time=time.perf_counter() - req.start, history=history,
                  method=method, lower_bound=req.lower_bound, interrupted=interrupted,
                  info=info or {}, schedule=s)


def latency_seeds(problem) -> np.ndarray:
    """(S, n) float32 heuristic priorities: HEFT upward ranks first, then the seeds of
    the throughput search (DFS linearization, layerings)."""
    from jaxplace.search.baselines import seed_priorities

    r = upward_ranks(problem.latency)
    r = (r / max(float(r.max()), 1e-300)).astype(np.float32)[None]
    return np.concatenate([r, np.asarray(seed_priorities(problem.graph), np.float32)])


def latency_default(req):
    """The default search of a latency problem (module docstring)."""
    from jaxplace.search.key_shift import brkga_then_shift
    from jaxplace.search.request import finish

    problem, opt = req.problem, dict(req.options)
    budget, P = req.budget, max(2, min(req.population_size or POPULATION, req.budget // 3))
    seeds = latency_seeds(problem)
    if req.seeds is not None:
        seeds = np.concatenate([np.asarray(req.seeds, np.float32).reshape(-1, problem.n),
                                seeds])
    patience = opt.get("patience", PATIENCE)
    gens = max(int(budget * opt.get("brkga_share", BRKGA_SHARE)) // P, 1)
    # before the search, so their time counts against the time limit (the best
    # contiguous pipeline alone takes ~20 s at 20k ops)
    base = _baseline_schedules(problem.latency)
    best_x, best_f, evals, history, interrupted, info = brkga_then_shift(
        req, seeds, budget_brkga=gens * P, population=P, patience=patience)
    res = finish(req, "default", best_x, evals, history, interrupted, info=info)
    for x in seeds:  # float32 ranking may differ from float64: keep the exact best
        s = list_schedule(problem.latency, x)
        if s.makespan < res.cost:
            res = finish(req, "default", x, evals, history, interrupted,
                         info={**info, "from_seed": True})
    res = _best_of_baselines(req, res, base)
    return _refined(req, res, base, float(opt.get("refine_seconds", REFINE_SECONDS)))


def _refined(req, res, baselines: list, seconds: float):
    """`res`, or a shorter schedule found by `latency.refine` from it and from the
    baseline schedules (module docstring, step 4)."""
    from jaxplace.search.baselines import order_to_priorities

    inst = req.problem.latency
    if req.stop.time_limit is not None:  # within the search's time limit
        seconds = min(seconds, req.stop.time_limit - (time.perf_counter() - req.start))
    if res.interrupted or req.stop.cancelled():
        return res
    starts = [res.schedule, *baselines]
    starts = [s for s in starts if np.isfinite(s.makespan)]
    if seconds <= 0 or not starts or inst.num_devices < 2:
        return res
    best = res.schedule
    for i, s0 in enumerate(starts):  # half the time from the answer, half the rest
        share = 0.5 if i == 0 else 0.5 / max(len(starts) - 1, 1)
        s = refine(inst, s0, time_limit=seconds * (share if len(starts) > 1 else 1.0),
                   seed=req.seed + i)
        if s.makespan < best.makespan:
            best = s
    if best is res.schedule:
        return res
    return latency_result(req, res.method, order_to_priorities(start_order(inst, best)),
                          res.evaluations, res.history, res.interrupted,
                          info={**res.info, "refined": True,
                                "unrefined_cost": float(res.cost)}, schedule=best)


def _baseline_schedules(inst) -> list:
    """The schedules of `latency.baselines.BASELINES`, in its order."""
    return [fn(inst) for fn in BASELINES.values()]


def _best_of_baselines(req, res, schedules: list):
    """`res`, or the best of the baseline `schedules` when it is shorter (module
    docstring)."""
    from jaxplace.search.baselines import order_to_priorities

    inst = req.problem.latency
    for name, s in zip(BASELINES, schedules, strict=True):
        if s.makespan < res.cost:
            topo = np.empty(inst.n, np.int64)
            topo[inst.graph.topo_order] = np.arange(inst.n)
            order = np.lexsort((topo, s.start))  # a topological order (zero-time ops)
            res = latency_result(req, res.method, order_to_priorities(order),
                                 res.evaluations, res.history, res.interrupted,
                                 info={**res.info, "baseline": name}, schedule=s)
    return res


__all__ = ["ScheduledPartition", "latency_default", "latency_result", "latency_seeds",
           "schedule_partition"]
