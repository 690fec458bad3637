"""Branch, bound and remember (BB&R) over ideals: lower bounds and proofs past the DP.

The DP over ideals (`dp`) enumerates every ideal; on random DAGs there are far too
many. BB&R visits only the chains of ideals that its bounds cannot cut, depth first,
remembering the states it has refuted (`search`). It answers one question, "is
there a split with every block <= T?" (`feasible`), and `solve_bbr` asks it for a
sequence of guesses T between a lower bound and the best split known (guess and check,
as in Alvarez-Miranda, Pereira and Vila's BB&R for SALBP-2, Computers & Operations
Research 2024, which climbs the cycle time from a lower bound):
- a refuted T is a lower bound on OPT (OPT > T), whatever happens later, so a run
  stopped by its time limit still reports the largest T refuted;
- a split found at T is a new best split (re-checked with `evaluate_partition`);
- a check stopped by its budget proves nothing; the search goes on below that guess.
The guesses climb from the bound (refuting is cheap far below OPT, hard near it) and a
last guess just under the best split's cost proves it optimal (`LAST_GUESS_RTOL`).

The model is the DP's (`jaxplace.exact.atoms`): contiguous splits with transfers,
overflow, hard capacity, colocation classes, forward-only contiguity of training
graphs, CPU blocks and CPU-only ops; orphan backward units are atoms like any other.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.exact.bbr.cross import crossing_bound
from jaxplace.exact.bbr.model import Model, build_model, tdata
from jaxplace.exact.bbr.search import CheckStats, Memo, OutOfTime, check
from jaxplace.objectives.throughput.cost import evaluate_partition, simple_lower_bound
from jaxplace.problem import Problem

#: Refuted to within this (relative to the best cost) of a guess that ran out of time,
#: that guess is asked again with a fresh budget.
RETRY_RTOL = 1e-4

#: A split of cost U is reported optimal once U (1 - LAST_GUESS_RTOL) is refuted (the
#: certificate's tolerance is 1e-6).
LAST_GUESS_RTOL = 1e-7


@dataclass(frozen=True)
class BbrConfig:
    """How `solve_bbr` spends its time.

    Attributes:
        step: the first guess is this far (relative) above the lower bound; the step
            doubles after a refutation and shrinks to a quarter of the gap after a
            check that ran out of budget.
        share: each check gets this fraction of the time left.
        min_check: seconds; with less time left no check starts.
        max_memo: refuted states remembered (each ~100-200 bytes).
        prove_first: try the best split's cost first (proves it optimal when BB&R is
            fast enough), and again after each better split it finds (a descent).
        descent: the share of the time limit those checks may take in all.
        give_up: stop after this many checks in a row that ran out of time before
            the first blocks were all listed (too many blocks for BB&R).
    """

    step: float = 0.01
    share: float = 0.25
    min_check: float = 0.05
    max_memo: int = 1_000_000
    prove_first: bool = True
    descent: float = 0.3
    give_up: int = 3


@dataclass
class Check:
    """One guess: T, the answer ("refuted", "feasible", "unknown"), seconds, nodes."""

    T: float
    answer: str
    time: float
    nodes: int


@dataclass
class BbrResult:
    """The outcome of `solve_bbr`.

    Attributes:
        lower_bound: the largest T refuted (or the bound given / the simple bound);
            inf when no split exists.
        cost: the best split's cost (inf: none known).
        assignment: (n,) int64 its blocks (accelerators 0..k-1 in pipeline order, then
            CPUs), or None.
        optimal: `cost` is proven optimal (its cost less LAST_GUESS_RTOL was refuted).
        infeasible: proven: no split at all.
        checks: every guess, in order.
        found: the best split came from BB&R (not the one given).
        memo: refuted states remembered at the end; time: seconds.
        cross_bound: the forced crossings' bound the climb started from
            (`cross.crossing_bound`; -inf: not computed).
    """

    lower_bound: float
    cost: float
    assignment: np.ndarray | None
    optimal: bool
    infeasible: bool
    checks: list = field(default_factory=list)
    found: bool = False
    memo: int = 0
    time: float = 0.0
    cross_bound: float = -math.inf

    @property
    def nodes(self) -> int:
        return sum(c.nodes for c in self.checks)

    @property
    def status(self) -> str:
        if self.infeasible:
            return "infeasible"
        if self.optimal:
            return "optimal"
        refuted = sum(c.answer == "refuted" for c in self.checks)
        return f"refuted {refuted} of {len(self.checks)}"


def assignment_of(problem: Problem, model: Model, blocks) -> np.ndarray:
    """(n,) int64 assignment of the blocks [(bitset, on_cpu), ...] in pipeline order."""
    block = np.empty(model.num_atoms, dtype=np.int64)
    acc = cpu = 0
    for S, on_cpu in blocks:
        atoms = [a for a in range(model.num_atoms) if (S >> a) & 1]
        if on_cpu:
            block[atoms], cpu = problem.k + cpu, cpu + 1
        else:
            block[atoms], acc = acc, acc + 1
    return block[model.atom_of]


def feasible(problem: Problem, T: float, *, model: Model | None = None,
             memo: Memo | None = None, time_limit: float | None = None,
             max_nodes: float = math.inf):
    """Is there a split of `problem` with every block <= T (within RTOL)?

    Returns:
        ("feasible", assignment) with its cost <= T (1 + 1e-6); ("refuted", None): no
        split costs <= T, so OPT > T; ("unknown", None): stopped by the limits.
    """
    model = build_model(problem) if model is None else model
    memo = Memo() if memo is None else memo
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    try:
        blocks = check(model, tdata(model, T), memo, deadline, max_nodes)
    except OutOfTime:
        return "unknown", None
    if blocks is None:
        return "refuted", None
    a = assignment_of(problem, model, blocks)
    cost = evaluate_partition(problem, a).bottleneck
    if not cost <= T * (1 + 1e-6) + 1e-9:
        raise RuntimeError(f"BB&R split costs {cost!r} above its guess {T!r}")
    return "feasible", a


def _start(problem: Problem, upper_bound, partition):
    """(assignment or None, its cost) of the split to beat."""
    if partition is not None:
        a = np.asarray(getattr(partition, "assignment", partition), dtype=np.int64)
        cost = evaluate_partition(problem, a).bottleneck
        if upper_bound is None or cost <= upper_bound:
            return a, cost
    return None, (math.inf if upper_bound is None else float(upper_bound))


def solve_bbr(problem: Problem, *, upper_bound: float | None = None, partition=None,
              lower_bound: float = -math.inf, time_limit: float | None = None,
              config: BbrConfig = BbrConfig(), model: Model | None = None) -> BbrResult:
    """Bound and, when time allows, solve `problem` by BB&R guess and check.

    Args:
        problem: throughput on identical accelerators (CPU blocks allowed).
        upper_bound: a known cost (splits >= it need not be found); partition: a known
            split (its cost bounds too, and it is returned when nothing beats it).
        lower_bound: a proven lower bound to climb from (the simple bound at least).
        time_limit: seconds in all (None: until proven; exponential in the worst case).
        config: `BbrConfig`.

    Returns:
        BbrResult; same inputs and no time limit give the same answer.
    """
    t0 = time.perf_counter()
    deadline = math.inf if time_limit is None else t0 + time_limit
    model = build_model(problem) if model is None else model
    memo = Memo(config.max_memo)
    best, hi = _start(problem, upper_bound, partition)
    lo = max(float(simple_lower_bound(problem)), float(lower_bound))
    out = BbrResult(lo, hi, best, False, False)
    if not math.isfinite(lo):
        out.lower_bound, out.infeasible = math.inf, True
        return _done(out, memo, t0)
    # the forced crossings' bound (closed form, milliseconds): the climb starts there
    out.lower_bound = out.cross_bound = crossing_bound(
        model.cross, lo, hi, deadline=t0 + 0.25 * (deadline - t0))

    def ask(T: float, budget: float) -> str:
        t1 = time.perf_counter()
        stats = CheckStats()
        try:
            blocks = check(model, tdata(model, T), memo, t1 + budget, stats=stats)
            answer = "refuted" if blocks is None else "feasible"
        except OutOfTime:
            blocks, answer = None, "unknown"
        out.checks.append(Check(T, answer, time.perf_counter() - t1, stats.nodes))
        if answer == "feasible":
            a = assignment_of(problem, model, blocks)
            cost = evaluate_partition(problem, a).bottleneck
            if not cost <= T * (1 + 1e-6) + 1e-9:
                raise RuntimeError(f"BB&R split costs {cost!r} above its guess {T!r}")
            if cost < out.cost:
                out.cost, out.assignment, out.found = cost, a, True
        return answer

    if not math.isfinite(hi):  # no split known: is there one at all?
        ans = ask(math.inf, _left(deadline))
        if ans == "refuted":
            out.lower_bound, out.infeasible = math.inf, True
            return _done(out, memo, t0)
        if ans == "unknown":
            return _done(out, memo, t0)
    _climb(out, ask, deadline, config)
    return _done(out, memo, t0)


def _left(deadline: float) -> float:
    return deadline - time.perf_counter()


def _climb(out: BbrResult, ask, deadline: float, config: BbrConfig) -> None:
    """Guess and check between out.lower_bound and out.cost (module doc). While the
    guess just under the best split keeps finding better splits it is asked again (a
    descent, as in BB&R for SALBP-2), for at most `config.descent` of the time."""
    top = out.cost  # the upper end: the best cost, or a guess left unanswered
    step = config.step * out.lower_bound
    prove = config.prove_first
    descent_left = config.descent * max(0.0, _left(deadline))
    stuck = 0
    while True:
        hi = out.cost
        target = hi * (1 - LAST_GUESS_RTOL)
        if out.lower_bound >= target:
            out.optimal = True
            return
        left = _left(deadline)
        if left < config.min_check:
            return
        proving = prove and descent_left > config.min_check
        if proving:  # try to prove the split optimal
            T = target
        elif top >= hi:  # climb by the step; near the split, try to prove it
            T = target if hi - out.lower_bound <= 4 * step else out.lower_bound + step
        elif top - out.lower_bound <= RETRY_RTOL * hi:
            # refuted up to a guess that ran out of time: ask it again, with the larger
            # budget the time left now gives (the memo keeps what was refuted)
            T, top = top, hi
        else:  # below a guess left unanswered: never past the middle
            T = min(out.lower_bound + max(step, 1e-12 * hi), 0.5 * (out.lower_bound + top))
        t1 = time.perf_counter()
        budget = left * config.share
        if proving:
            budget = min(budget, descent_left)
        ans = ask(T, max(config.min_check, budget))
        if proving:
            descent_left -= time.perf_counter() - t1
        prove = proving and ans == "feasible"
        stuck = stuck + 1 if ans == "unknown" and out.checks[-1].nodes <= 1 else 0
        if stuck >= config.give_up:  # never past listing the first blocks: hand the
            return  # time back (the guesses only get closer to the bound)
        if ans == "refuted":
            out.lower_bound = max(out.lower_bound, T)
            step *= 2
        elif ans == "feasible":
            top = out.cost
        else:
            top = min(top, T)
            step = 0.25 * (T - out.lower_bound)


def _done(out: BbrResult, memo: Memo, t0: float) -> BbrResult:
    out.memo = len(memo)
    out.time = time.perf_counter() - t0
    return out
