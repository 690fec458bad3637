"""Certificates: an upper bound (a partition) and the lower-bound ladder that bounds it.

The ladder of ../shared/docs/mtpp.md section 3 (Archer et al., ICML 2024): simple,
bottleneck (and its no-dag / no-io variants), bottleneck-guess, exact, plus the LP
relaxation of each MIP (`<name>-lp`). Every bound is valid on its own; a MIP stopped
by its time limit contributes its dual bound, never its incumbent. The certificate's
lower bound is the largest of them, its upper bound the best partition known (the
given one, a sampled one, or the exact MIP's incumbent when better, checked with
`evaluate_partition`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.bounds.bottleneck import bottleneck_bound
from jaxplace.bounds.exact import exact_bound, exact_model
from jaxplace.bounds.guess import guess_bound
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

MIP_METHODS = ("bottleneck", "bottleneck-no-dag", "bottleneck-no-io", "bottleneck-guess",
               "exact")
# In ladder order: certify runs the methods in this order whatever order they are given.
METHODS = ("simple", *(f"{m}-lp" for m in MIP_METHODS), *MIP_METHODS)
DEFAULT_METHODS = ("simple", "bottleneck", "bottleneck-guess", "exact")
OPTIMAL_RTOL = 1e-6  # ratio <= 1 + this (plus the MIP gap asked for) counts as optimal


@dataclass
class MethodResult:
    """One rung of the ladder.

    Attributes:
        name: method name, e.g. "exact" or "bottleneck-lp".
        bound: a valid lower bound on OPT (time units); +inf when proven infeasible.
        status: solver status ("Optimal", "Time limit reached", ...) or "closed form".
        time: wall seconds including the model build.
        gap: the MIP's relative gap between its incumbent and its bound (None for LPs
            and closed forms); a gap > 0 means the bound is a dual bound at a limit.
        kind: "closed-form", "lp" or "mip".
        build_time: seconds spent building the model(s).
        nodes: branch-and-bound nodes (sum over solves).
        solves: number of HiGHS solves (k for bottleneck-guess).
        size: (columns, rows, non-zeros) of the (first) model.
    """

    name: str
    bound: float
    status: str
    time: float
    gap: float | None = None
    kind: str = "mip"
    build_time: float = 0.0
    nodes: int = 0
    solves: int = 0
    size: tuple[int, int, int] | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "bound": _num(self.bound), "status": self.status,
                "time": round(self.time, 4), "gap": _num(self.gap), "kind": self.kind,
                "build_time": round(self.build_time, 4), "nodes": self.nodes,
                "solves": self.solves, "size": list(self.size) if self.size else None}


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
        history: (time, incumbent, bound) of the exact MIP, from HiGHS callbacks.
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
                "settings": dict(self.settings)}

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


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


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
    from jaxplace.reference import decode_reference

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


def _check_method(name: str) -> None:
    if name not in METHODS:
        raise JaxplaceError(f"unknown method {name!r}; choose from {', '.join(METHODS)}",
                            field="methods")


def certify(problem: Problem, partition=None, methods=DEFAULT_METHODS, *,
            time_limit: float = 60.0, threads: int = 1, mip_rel_gap: float = 1e-6,
            progress=None, samples: int = 64, seed: int = 0) -> Certificate:
    """Bound OPT from below with the ladder and from above with the best partition known.

    Args:
        problem: the instance.
        partition: a `Partition`, an assignment (block per node), or None (then the best
            of `samples` random priority vectors through the reference decoder).
        methods: names from METHODS, run in ladder order.
        time_limit: seconds per method (bottleneck-guess splits it over its k solves).
        threads: HiGHS threads for the single solves; worker processes (one thread each)
            for the k solves of bottleneck-guess.
        mip_rel_gap: relative gap at which HiGHS stops; small so that "optimal" is real.
        progress: optional callable(method, elapsed, incumbent, bound), called as the
            MIPs progress (throttled) and once per finished method.
        samples, seed: random priority vectors when `partition` is None.

    Returns:
        Certificate.
    """
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    for m in methods:
        _check_method(m)
    if not (time_limit > 0):
        raise JaxplaceError(f"must be positive, got {time_limit!r}", field="time_limit")
    if int(threads) < 1:
        raise JaxplaceError(f"must be at least 1, got {threads!r}", field="threads")
    todo = [m for m in METHODS if m in set(methods)]

    if partition is not None:
        best_a = as_assignment(problem, partition)
        best_ub = evaluate_partition(problem, best_a).bottleneck
        source = "given"
    else:
        best_a, best_ub = sample_partition(problem, samples, seed)
        source = "sampled"
    if not math.isfinite(best_ub):
        best_a, source = None, None

    L = simple_lower_bound(problem)
    # The MIPs model accelerator blocks only (colocation and forward-only contiguity
    # included); with CPU blocks or CPU-only ops they are skipped (bound 0, still valid).
    hetero = problem.cpus > 0 or not bool(problem.supported.all())
    results: list[MethodResult] = []
    history: list = []
    lb, lb_method = -math.inf, "none"

    def report(name):
        def cb(t, inc, bnd):
            if progress is not None:
                progress(name, t, inc, bnd)
        return cb

    for name in todo:
        t0 = time.perf_counter()
        relax = name.endswith("-lp")
        base = name[:-3] if relax else name
        kind = "lp" if relax else "mip"
        if name == "simple":
            r = MethodResult(name, L, "closed form", time.perf_counter() - t0,
                             kind="closed-form")
        elif hetero:
            r = MethodResult(name, 0.0, "skipped: CPU blocks not modelled", 0.0, kind=kind)
        elif base == "exact":
            # the exact MIP starts from the best bound proven so far (z >= it)
            z_lb = None if relax or not math.isfinite(lb) else max(lb, L)
            model = exact_model(problem, relax=relax, z_lb=z_lb)
            res, found, _ = exact_bound(problem, None if relax else best_a, relax=relax,
                                        time_limit=time_limit, threads=threads,
                                        mip_rel_gap=mip_rel_gap, model=model,
                                        progress=report(name))
            if not relax:
                history = res.history
                if found is not None:
                    cost = evaluate_partition(problem, found).bottleneck
                    if cost < best_ub * (1 - 1e-12):
                        best_a, best_ub, source = found, cost, "exact"
            r = MethodResult(name, res.bound, res.status, time.perf_counter() - t0,
                             gap=None if relax else _num(res.gap), kind=kind,
                             build_time=model.build_time, nodes=res.nodes, solves=1,
                             size=(model.ncol, model.nrow, model.nnz))
        elif base == "bottleneck-guess":
            def gprog(j, k, res, _name=name, _t0=t0):
                if progress is not None:
                    progress(_name, time.perf_counter() - _t0, math.inf, res.bound)
            bound, per, build = guess_bound(problem, relax=relax, time_limit=time_limit,
                                            workers=threads, mip_rel_gap=mip_rel_gap,
                                            progress=gprog)
            weakest = min(per, key=lambda s: s.bound)
            gaps = [s.gap for s in per if s.gap is not None and math.isfinite(s.gap)]
            r = MethodResult(name, bound, weakest.status, time.perf_counter() - t0,
                             gap=None if relax else (max(gaps) if gaps else None),
                             kind=kind, build_time=build, nodes=sum(s.nodes for s in per),
                             solves=len(per))
        else:
            variant = {"bottleneck": "full", "bottleneck-no-dag": "no-dag",
                       "bottleneck-no-io": "no-io"}[base]
            res, model = bottleneck_bound(problem, variant, relax=relax,
                                          time_limit=time_limit, threads=threads,
                                          mip_rel_gap=mip_rel_gap)
            r = MethodResult(name, res.bound, res.status, time.perf_counter() - t0,
                             gap=None if relax else _num(res.gap), kind=kind,
                             build_time=model.build_time, nodes=res.nodes, solves=1,
                             size=(model.ncol, model.nrow, model.nnz))
        results.append(r)
        if progress is not None:
            progress(name, r.time, best_ub, r.bound)
        if r.bound > lb:
            lb, lb_method = r.bound, name
    if best_a is not None and best_ub < lb <= best_ub * (1 + 1e-6):
        # bounds carry solver tolerances (about 1e-9 relative); never exceed a real cost
        # (a larger excess would be a bug, and is left visible as a ratio below 1)
        lb = best_ub
    settings = {"time_limit": time_limit, "threads": int(threads),
                "mip_rel_gap": mip_rel_gap, "methods": todo}
    return Certificate(lower_bound=float(max(lb, 0.0) if lb > -math.inf else 0.0),
                       upper_bound=float(best_ub), partition=best_a,
                       partition_source=source, method=lb_method, results=results,
                       history=list(history), tolerance=OPTIMAL_RTOL + mip_rel_gap,
                       settings=settings)
