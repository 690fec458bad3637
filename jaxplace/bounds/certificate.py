"""Certificates: an upper bound (a partition) and the lower-bound ladder that bounds it.

The lower-bound ladder of Archer et al. (ICML 2024): simple,
bottleneck (and its no-dag / no-io variants), bottleneck-guess, exact, plus the LP
relaxation of each MIP (`<name>-lp`). Every bound is valid on its own; a MIP stopped
by its time limit contributes its dual bound, never its incumbent. The certificate's
lower bound is the largest of them, its upper bound the best partition known (the
given one, a sampled one, or the exact MIP's incumbent when better, checked with
`evaluate_partition`).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from jaxplace.bounds._numeric_range import check_sums
from jaxplace.bounds.base import BoundContext, BoundMethod, MethodResult, _num
from jaxplace.bounds.crosscheck import check_rungs
from jaxplace.bounds.registry import (
    BOUNDS,
    DEFAULT_METHODS,
    METHODS,
    MIP_METHODS,
    choose_methods,
    ladder,
)
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.registry import objective_of
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.problem import Problem

__all__ = ["DEFAULT_METHODS", "METHODS", "MIP_METHODS", "OPTIMAL_RTOL", "Certificate",
           "MethodResult", "as_assignment", "certify", "certify_ladder", "pick_methods",
           "sample_partition"]

OPTIMAL_RTOL = 1e-6  # ratio <= 1 + this (plus the MIP gap asked for) counts as optimal


@dataclass
class Certificate:
    """Upper bound, lower bound and how each was obtained.

    Attributes:
        lower_bound: max of the methods' bounds (<= OPT).
        upper_bound: cost of `partition` (>= OPT); inf when no feasible partition is known.
        partition: (n,) int64 block per node of the best partition known, or None.
        partition_source: "given", "sampled" or "exact" (the exact MIP's incumbent).
        method: the method that gave the lower bound.
        results: one MethodResult per method run, in ladder order.
        history: (time, incumbent, bound) of the exact MIP, from HiGHS callbacks (of the
            last method that kept one).
        notes: rungs refuted by a cheaper known plan or whose solver disagreed with
            itself (`crosscheck.check_rungs`), one line each; such a rung's bound is
            not used.
    """

    lower_bound: float
    upper_bound: float
    partition: np.ndarray | None
    partition_source: str | None
    method: str
    results: list[MethodResult]
    history: list[tuple[float, float, float]] = field(default_factory=list)
    tolerance: float = OPTIMAL_RTOL
    settings: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def _repr_html_(self) -> str:
        """Notebooks show the certificate's ladder and plan (`jaxplace.view`)."""
        import importlib

        return importlib.import_module("jaxplace.view").html_fragment(self)

    @property
    def ratio(self) -> float:
        """UB / LB >= 1 (1 proves optimality); inf when LB is 0 < UB or UB unknown."""
        lb, ub = self.lower_bound, self.upper_bound
        if ub == lb:
            return 1.0
        if lb <= 0 or not math.isfinite(ub):
            return math.inf
        return ub / lb

    @property
    def gap(self) -> float:
        """(UB - LB) / UB, HiGHS's convention; 0 when optimal."""
        lb, ub = self.lower_bound, self.upper_bound
        if ub == lb:
            return 0.0
        return (ub - lb) / ub if math.isfinite(ub) and ub > 0 else math.inf

    @property
    def optimal(self) -> bool:
        """The partition is proven optimal (ratio 1 within `tolerance`)."""
        return self.ratio <= 1.0 + self.tolerance

    @property
    def infeasible(self) -> bool:
        """Proven: no partition satisfies the hard capacity."""
        return math.isinf(self.lower_bound)

    def result(self, name: str) -> MethodResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self) -> dict:
        """JSON-ready (non-finite numbers become None; see `infeasible`)."""
        part = None
        if self.partition is not None:
            part = {"assignment": [int(b) for b in self.partition],
                    "cost": _num(self.upper_bound), "source": self.partition_source}
        return {"lower_bound": _num(self.lower_bound), "upper_bound": _num(self.upper_bound),
                "ratio": _num(self.ratio), "gap": _num(self.gap), "optimal": self.optimal,
                "infeasible": self.infeasible, "method": self.method, "partition": part,
                "results": [r.to_dict() for r in self.results],
                "history": [[round(t, 4), _num(i), _num(b)] for t, i, b in self.history],
                "settings": dict(self.settings), "notes": list(self.notes)}

    def summary(self) -> str:
        """The ladder as a small text table."""
        ub = self.upper_bound
        lines = [f"{'method':<20} {'bound':>14} {'LB/UB':>8} {'status':<20} {'time':>8}"]
        for r in self.results:
            frac = r.bound / ub if math.isfinite(ub) and ub > 0 else math.nan
            lines.append(f"{r.name:<20} {r.bound:>14.6g} {frac:>8.4f} {r.status:<20} "
                         f"{r.time:>7.2f}s")
        lines.append(f"upper bound {ub:.6g} ({self.partition_source}), lower bound "
                     f"{self.lower_bound:.6g} ({self.method}), ratio {self.ratio:.6f}"
                     + (" (optimal)" if self.optimal else ""))
        return "\n".join(lines)


def as_assignment(problem: Problem, partition) -> np.ndarray | None:
    """(n,) int64 from a Partition, a PartitionCost, an array, or None."""
    if partition is None:
        return None
    a = getattr(partition, "assignment", partition)
    return evaluate_partition(problem, a).assignment  # validates


def sample_partition(problem: Problem, samples: int = 64, seed: int = 0,
                     time_budget: float = 10.0):
    """Best of `samples` random priority vectors through the reference decoder
    (and the all-equal vector: Kahn by node index); stops early after `time_budget` s.

    Returns:
        (assignment (n,) int64, cost).
    """
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    best = decode_reference(problem, np.zeros(problem.n))
    for _ in range(samples):
        if time.perf_counter() - t0 > time_budget:
            break
        p = decode_reference(problem, rng.random(problem.n))
        if p.cost < best.cost:
            best = p
    return best.assignment, float(best.cost)




def _check_settings(time_limit, threads, rung_time_limit=None) -> None:
    """One-line errors for the time settings (None: no such limit; not both None: a
    solver needs a finite limit) and the thread count."""
    for name, value in (("time_limit", time_limit), ("rung_time_limit", rung_time_limit)):
        if value is not None and not (isinstance(value, numbers.Real)
                                      and not isinstance(value, bool)
                                      and 0 < value < math.inf):
            raise JaxplaceError(f"must be positive and finite, got {value!r}", field=name)
    if time_limit is None and rung_time_limit is None:
        raise JaxplaceError("give a time limit for the whole call or rung_time_limit per "
                            "rung (the solvers need one)", field="time_limit")
    if int(threads) < 1:
        raise JaxplaceError(f"must be at least 1, got {threads!r}", field="threads")


#: Seconds the ladder's starting partition may take to sample (at most this share of
#: a total time).
SAMPLE_SECONDS, SAMPLE_SHARE = 10.0, 0.1


def _start(problem: Problem, partition, samples: int, seed: int,
           time_limit: float | None = None):
    """(assignment or None, its cost, source) of the partition the ladder starts from
    (`time_limit`: the whole ladder's seconds, of which sampling takes SAMPLE_SHARE)."""
    if partition is not None:
        a = as_assignment(problem, partition)
        ub, source = evaluate_partition(problem, a).bottleneck, "given"
    else:
        budget = SAMPLE_SECONDS if time_limit is None else min(
            SAMPLE_SECONDS, SAMPLE_SHARE * time_limit)
        a, ub = sample_partition(problem, samples, seed, time_budget=budget)
        source = "sampled"
    if not math.isfinite(ub):
        return None, ub, None
    return a, ub, source


def _reporter(progress, name: str):
    """progress(name, ...) as the context's callable(elapsed, incumbent, bound)."""
    if progress is None:
        return None
    return lambda t, inc, bnd: progress(name, t, inc, bnd)


#: Under a time limit, a closed-form rung's weight in the split of the time left
#: against a rung that solves (LP, MIP, DP, BB&R): closed forms take a second or less
#: (`cross`'s bisection stops at its deadline with the bound it has).
CLOSED_FORM_WEIGHT = 0.25
#: Under a time limit, rungs that start with less than this left are skipped (a
#: HiGHS model alone takes longer to build); the closed form "simple" always runs.
MIN_RUNG_SECONDS = 0.2


def _kind(registry: Mapping[str, BoundMethod], name: str) -> str:
    kind = getattr(registry, "kind", None)  # a `Ladder` tells without loading the rung
    return kind(name) if kind is not None else registry[name].kind


def _rung_limit(registry, todo: list[str], i: int, per_rung: float | None,
                end: float | None) -> float | None:
    """Seconds for rung todo[i]: under a time limit (`end`, a perf_counter time) its
    weighted share of what is left, so that time a rung did not use goes to the rungs
    after it and the last rung takes the rest; at most `per_rung` (None: no cap);
    None: skip the rung (no time left)."""
    cap = math.inf if per_rung is None else per_rung
    if end is None:
        return cap
    weight = [CLOSED_FORM_WEIGHT if _kind(registry, m) == "closed-form" else 1.0
              for m in todo[i:]]
    left = end - time.perf_counter()
    if left < MIN_RUNG_SECONDS:
        return None if todo[i] != "simple" else min(cap, MIN_RUNG_SECONDS)
    return min(cap, left * weight[0] / sum(weight))


def _run_ladder(problem: Problem, todo: list[str], registry: Mapping[str, BoundMethod],
                ctx: BoundContext, progress, end: float | None = None,
                every_rung: bool = False, per_rung: float | None = None):
    """Run the methods in order, each seeing the bound and partition found before it;
    under a time limit (`end`) each gets its share of what is left, at most
    `per_rung` (`_rung_limit`);
    once the bound proves the best cost optimal (OPTIMAL_RTOL) the rest are skipped
    unless `every_rung`.

    Returns:
        (results, the final context, the name of the method whose partition replaced
        the starting one, or None).
    """
    results: list[MethodResult] = []
    found_by = None
    # the rungs first: loading a deferred one imports its modules (scipy, BB&R: 1-3 s
    # under load), which a time limit must count before it is split
    rungs = {name: registry[name] for name in todo}
    for i, name in enumerate(todo):
        if not every_rung and ctx.lower_bound * (1 + OPTIMAL_RTOL) >= ctx.upper_bound:
            results.append(MethodResult(name, 0.0, "skipped (proven)", 0.0,
                                        kind=_kind(registry, name)))
            continue
        limit = _rung_limit(registry, todo, i, per_rung, end)
        if limit is None:  # a bound of 0 is valid: the rung proves nothing
            results.append(MethodResult(name, 0.0, "skipped (time limit)", 0.0,
                                        kind=_kind(registry, name)))
            continue
        r = rungs[name].run(problem, ctx.replace(progress=_reporter(progress, name),
                                                 time_limit=limit))
        results.append(r)
        if r.assignment is not None:
            cost = evaluate_partition(problem, r.assignment).bottleneck
            if cost < ctx.upper_bound * (1 - 1e-12):
                ctx = ctx.replace(assignment=r.assignment, upper_bound=cost)
                found_by = name
        if progress is not None:
            progress(name, r.time, ctx.upper_bound, r.bound)
        ctx = ctx.replace(lower_bound=max(ctx.lower_bound, r.bound))
    return results, ctx, found_by


def _certificate(results: list[MethodResult], ctx: BoundContext, source: str | None,
                 settings: dict) -> Certificate:
    """The certificate of a finished ladder (its bound: the first largest result)."""
    lb, lb_method = -math.inf, "none"
    for r in results:
        if r.bound > lb:
            lb, lb_method = r.bound, r.name
    ub = ctx.upper_bound
    if ctx.assignment is not None and ub < lb <= ub * (1 + 1e-6):
        # bounds carry solver tolerances (about 1e-9 relative); never exceed a real cost
        # (a larger excess would be a bug, and is left visible as a ratio below 1)
        lb = ub
    history = next((r.history for r in reversed(results) if r.history), [])
    return Certificate(lower_bound=float(max(lb, 0.0) if lb > -math.inf else 0.0),
                       upper_bound=float(ub), partition=ctx.assignment,
                       partition_source=source, method=lb_method, results=results,
                       history=list(history),
                       tolerance=OPTIMAL_RTOL + settings["mip_rel_gap"], settings=settings)


#: Under a time limit, the share of it that picking the ladder may take (counting the
#: ideals, `registry.choose_methods`); a count not finished by then picks the MIP ladder.
PICK_SHARE = 0.05

#: Keywords of earlier versions, and what took their place.
_RENAMED = {"total_time": "time_limit is now the whole call's seconds (rung_time_limit "
                          "caps each rung)"}


def pick_methods(problem: Problem, *, deadline: float | None = None
                 ) -> tuple[tuple[str, ...], str]:
    """(bounds, why): the bounds `certify` runs on `problem` when none are named; the
    CLI's `certify` and `partition --certify` run the same. With a bound registry
    (throughput on identical accelerators) the ladder expected to prove the problem
    fastest (`registry.choose_methods`: the DP over ideals when they are few, else the
    closed forms, the bottleneck and exact MIPs, the checks and BB&R where they fit),
    else the objective's `default_bounds`. `deadline` (a perf_counter time): the count
    of ideals gives up there (then the MIP ladder)."""
    obj = objective_of(problem)
    if not obj.supports("bound_registry"):
        return tuple(obj.default_bounds), f"the default bounds of {obj.label}"
    return choose_methods(problem, deadline=deadline)


def certify(problem: Problem, partition=None, methods=None, *,
            time_limit: float | None = 60.0, rung_time_limit: float | None = None,
            threads: int = 1, mip_rel_gap: float = 1e-6, progress=None,
            samples: int = 64, seed: int = 0,
            registry: Mapping[str, BoundMethod] | None = None,
            every_rung: bool | None = None, **renamed) -> Certificate:
    """Bound OPT from below and from above under the problem's objective
    (`jaxplace.objectives`): on identical accelerators the ladder of `certify_ladder`;
    other objectives run their own bounds (their `bound_methods`; a method they do not
    support is a JaxplaceError, never a bound computed under another objective).

    Args:
        methods: bound names (None: `pick_methods`, the ladder the CLI picks, recorded
            in `Certificate.settings["picked"]`; with a bound registry it stops at the
            first rung that proves the partition optimal).
        time_limit: seconds for the whole call: picking the methods (at most PICK_SHARE
            of it), the starting partition and every rung, each rung getting its share
            of what is left when it starts and the last one the rest (`certify_ladder`);
            None: no limit on the whole (then `rung_time_limit` is required).
        rung_time_limit: seconds per rung at most (None: its share only).
        every_rung: run the rungs after a proof too (see `certify_ladder`; None: when
            `methods` are named, each runs; the picked ladder stops at a proof).
        threads, mip_rel_gap, progress, samples, seed, registry: see `certify_ladder`.
    """
    start = time.perf_counter()
    for name in renamed:
        if name in _RENAMED:
            raise JaxplaceError(_RENAMED[name], field=name)
        raise TypeError(f"certify() got an unexpected keyword argument {name!r}")
    obj = objective_of(problem)
    _check_settings(time_limit, threads, rung_time_limit)
    settings = dict(threads=threads, mip_rel_gap=mip_rel_gap, progress=progress,
                    samples=samples, seed=seed, rung_time_limit=rung_time_limit)
    if every_rung is not None:
        obj.require("bound_registry", field="every_rung")
        settings["every_rung"] = bool(every_rung)
    picked = None
    if registry is not None:
        obj.require("bound_registry", field="registry")
        settings["registry"] = registry
        if methods is not None and not ladder(methods, registry):
            raise JaxplaceError("no bound named", field="methods")
    elif methods is not None:  # checked here once: none named proves nothing
        methods = obj.check_bound_methods(methods)
    else:
        deadline = None if time_limit is None else start + PICK_SHARE * time_limit
        methods, picked = pick_methods(problem, deadline=deadline)
        if obj.supports("bound_registry"):
            settings.setdefault("every_rung", False)
    left = None if time_limit is None else max(
        time_limit - (time.perf_counter() - start), 1e-3)
    cert = obj.certify(problem, partition, methods, time_limit=left, **settings)
    cert.settings["time_limit"] = time_limit  # the caller's, not what picking left
    if picked is not None:
        cert.settings["picked"] = picked
    return cert


def certify_ladder(problem: Problem, partition=None, methods=DEFAULT_METHODS, *,
                   time_limit: float | None = 60.0, rung_time_limit: float | None = None,
                   threads: int = 1, mip_rel_gap: float = 1e-6,
                   progress=None, samples: int = 64, seed: int = 0,
                   registry: Mapping[str, BoundMethod] = BOUNDS,
                   every_rung: bool = True) -> Certificate:
    """Bound OPT from below with the ladder and from above with the best partition known
    (throughput on identical accelerators).

    Args:
        problem: the instance.
        partition: a `Partition`, an assignment (block per node), or None (then the best
            of `samples` random priority vectors through the reference decoder).
        methods: names from METHODS (a sequence or "a,b,c"), run in ladder order.
        time_limit: seconds for the whole ladder, the starting partition included
            (None: no limit on the whole, then `rung_time_limit` per rung): each rung
            gets its share of what is left when it starts (a closed form
            CLOSED_FORM_WEIGHT of a solve's), so that time a rung leaves unused goes
            on and the last rung (the exact MIP in the default order) takes the rest;
            rungs reached with less than MIN_RUNG_SECONDS left are skipped (bound 0,
            status "skipped (time limit)"). Under load a MIP may still run a little
            past its share (HiGHS checks its clock between steps).
        rung_time_limit: seconds per rung at most (None: its share only); the
            benchmarks comparing rungs give every rung the same (bottleneck-guess
            splits it over its k solves).
        threads: HiGHS threads for the single solves; worker processes (one thread each)
            for the k solves of bottleneck-guess.
        mip_rel_gap: relative gap at which HiGHS stops; small so that "optimal" is real.
        progress: optional callable(method, elapsed, incumbent, bound), called as the
            MIPs progress (throttled) and once per finished method.
        samples, seed: random priority vectors when `partition` is None.
        registry: name -> BoundMethod to take the methods from, in ladder order
            (default `registry.BOUNDS`).
        every_rung: run every method even after the bound proves the partition optimal
            (benchmarks comparing rungs); False skips the methods after such a proof
            (bound 0, status "skipped (proven)"): they cannot raise it (`jp.certify`'s
            picked ladder does).

    Returns:
        Certificate.

    Raises:
        JaxplaceError: an unknown method, bad settings, or numbers the bounds cannot
            handle (sums that overflow, a range HiGHS cannot load).
    """
    end = None if time_limit is None else time.perf_counter() + time_limit
    todo = ladder(methods, registry)
    _check_settings(time_limit, threads, rung_time_limit)
    check_sums(problem)
    best_a, best_ub, source = _start(problem, partition, samples, seed, time_limit)
    ctx = BoundContext(time_limit=min(t for t in (time_limit, rung_time_limit)
                                      if t is not None),
                       threads=int(threads), mip_rel_gap=mip_rel_gap, assignment=best_a,
                       upper_bound=best_ub)
    results, ctx, found_by = _run_ladder(problem, todo, registry, ctx, progress, end,
                                         every_rung, rung_time_limit)
    settings = {"time_limit": time_limit, "rung_time_limit": rung_time_limit,
                "threads": int(threads), "mip_rel_gap": mip_rel_gap, "methods": todo}
    # a bound above the simple one must not exceed a known plan's cost
    results, notes = check_rungs(problem, results, ctx.upper_bound, found_by or source)
    cert = _certificate(results, ctx, found_by or source, settings)
    cert.notes = notes
    return cert
