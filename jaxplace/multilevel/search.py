"""The multilevel search (method "multilevel"): first solution, V-cycles, exact answer.

1. First solution: the DFS order sliced by the exact DP (`slicing`), reported at once;
   then Kahn's order by node index, kept when it slices better.
2. A V-cycle coarsens the graph without splitting the incumbent's blocks (so the
   incumbent survives on every level), optionally searches the coarsest level with a
   flat method of `jaxplace.search` (the first cycle only, seeded with the incumbent,
   COARSE_EVALS evaluations; not on a dense coarsest level, DENSE_COARSE_DEGREE), then refines level by level down to the placement units
   (`refine`, REFINE_EVALS evaluations per cluster of a level), keeping the best
   partition by its exact cost. Later cycles re-slice
   perturbed orders of the coarsest level first (ILS_EVALS re-slicings). Cycles
   repeat with new random tie-breaks until PATIENCE_CYCLES in a row bring nothing
   (at once when the graph has a single level), at most MAX_CYCLES, and while the
   MAX_EVALS evaluations last.
3. The answer is the best order sliced by the DP, so its priorities decode to it.

Every phase stops on counts (evaluations, rounds, cycles), so without a time limit
the same seed gives the same answer at any machine load. A time limit (the user's)
cuts the same schedule short: each phase gets a share of the time, and a result the
clock cut short says so (`interrupted`, `info["stopped"] == "time limit"`).

Every level's partition costs exactly what its projection costs on the original graph
(`coarsen`), so the search never reports a cost it did not evaluate.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np

from jaxplace.multilevel.coarsen import COARSEST_UNITS, Level, coarsen, unit_level
from jaxplace.multilevel.memory import check_memory
from jaxplace.multilevel.project import consistent_order, to_finer, to_nodes
from jaxplace.multilevel.refine import RefineStats, perturb_reslice, refine
from jaxplace.multilevel.slicing import slice_units
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.orders import order_to_priorities
from jaxplace.partition import Partition
from jaxplace.search.result import History, Result
from jaxplace.search.stop import Progress

#: Graphs of at least this many ops go to the multilevel search rather than the flat
#: compiled one: at 2,000 ops (k = 16, 30-60 s on 2 cores) the flat search spends its
#: time compiling and does not leave its first solution, while this one returns at
#: least it within the limit; at 1,000 ops both end at the DFS cost (30 s).
MULTILEVEL_MIN_NODES = 2000
#: Evaluations of the flat search of the coarsest level (first cycle; option
#: coarse_evals).
COARSE_EVALS = 4_000
#: Under a time limit, the share of it the coarse search may use.
COARSE_SHARE = 0.35
#: Flat method for the coarsest level ("none": skip it).
COARSE_METHOD = "brkga"
#: Edges per cluster of the coarsest level above which the flat coarse search is
#: skipped: on dense graphs its programs compile for about its whole share and score
#: few candidates (a 5,000-op stochastic-block graph, 907 clusters with 208,000 edges:
#: 1 evaluation in 22 s), while the boundary moves use that time (8,100 evaluations in
#: the 60 s without it); REGAL-like graphs of 2,000-5,000 ops have 2-3 per cluster.
DENSE_COARSE_DEGREE = 32
#: Re-slicings of perturbed orders on the coarsest level in every V-cycle after the
#: first (option ils_evals); under a time limit at most ILS_SHARE of the time left.
ILS_EVALS = 40
ILS_SHARE = 0.3
#: Evaluations (moves scored, slicings) of one level's refinement per cluster of the
#: level (option refine_evals): 2,000 ops converge at about 25 per cluster.
REFINE_EVALS = 8
#: Evaluations of the whole search at most, the coarse search's apart (option
#: max_evals): later cycles stop once it is spent, so the wall grows with the graph
#: only through the cost of one evaluation.
MAX_EVALS = 600_000
#: V-cycles in a row without improvement after which the search stops early.
PATIENCE_CYCLES = 2
#: V-cycles at most (option max_cycles).
MAX_CYCLES = 6
#: Share of the time limit held back for the final slicing and the answer.
RESERVE_SHARE = 0.04


class _Tracker:
    """Best partition so far, its history and the observer's reports."""

    def __init__(self, req, base: Level):
        self.req, self.base = req, base
        self.best_a = None  # block per level-0 cluster
        self.cost = math.inf
        self.evaluations = 0
        self.rows = []

    def offer(self, a0: np.ndarray, cost: float, phase: str) -> bool:
        if not cost < self.cost:
            return False
        self.best_a, self.cost = np.asarray(a0, np.int64).copy(), float(cost)
        elapsed = time.perf_counter() - self.req.start
        self.rows.append((self.evaluations, elapsed, self.cost))
        if self.req.observer is not None:
            part = self.partition(slice_again=False)
            self.req.observer(Progress(self.evaluations, self.cost,
                                       order_to_priorities(part.order), elapsed, phase,
                                       part))
        return True

    def partition(self, slice_again: bool = True) -> Partition:
        """The incumbent as a node-level `Partition`: its order (blocks contiguous)
        sliced again by the DP when asked (never worse)."""
        p, base = self.req.problem, self.base
        uorder = consistent_order(base.problem, self.best_a, base.order)
        units = p.graph.units
        node_order = uorder if units.trivial else np.concatenate(
            [units.unit_members(u) for u in uorder]).astype(np.int64)
        if slice_again:
            part = slice_units(p, node_order, bound=self.cost)
            if part.cost <= self.cost:
                return part
        a = to_nodes(base, self.best_a)
        seq = a[node_order]
        cuts = tuple(int(i) for i in np.flatnonzero(seq[1:] != seq[:-1]) + 1)
        blocks = np.cumsum(np.r_[0, (seq[1:] != seq[:-1]).astype(np.int64)])
        assignment = np.empty(p.n, np.int64)
        assignment[node_order] = blocks
        return Partition(node_order, cuts, assignment, self.cost)


def multilevel_search(req) -> Result:
    """Run the multilevel search for a `SearchRequest` (see the module doc).

    Options (`req.options`): coarsest (clusters, default COARSEST_UNITS),
    coarse_method (default COARSE_METHOD), coarse_evals (COARSE_EVALS), coarse_share
    (COARSE_SHARE), ils_evals (ILS_EVALS), refine_evals (REFINE_EVALS), max_evals
    (MAX_EVALS), max_cycles (MAX_CYCLES), slack (relative cost slack of the
    transfer-reducing moves, default 0.05).
    """
    p = req.problem
    check_memory(p)
    opts = dict(req.options)
    coarsest = int(opts.pop("coarsest", COARSEST_UNITS))
    coarse_method = str(opts.pop("coarse_method", COARSE_METHOD))
    coarse_evals = int(opts.pop("coarse_evals", COARSE_EVALS))
    coarse_share = float(opts.pop("coarse_share", COARSE_SHARE))
    ils_evals = int(opts.pop("ils_evals", ILS_EVALS))
    max_cycles = int(opts.pop("max_cycles", MAX_CYCLES))
    refine_evals = float(opts.pop("refine_evals", REFINE_EVALS))
    max_evals = int(opts.pop("max_evals", MAX_EVALS))
    slack = float(opts.pop("slack", 0.05))
    limit = req.stop.time_limit
    # no time limit: no deadline anywhere, every phase ends on its counts
    end = math.inf if limit is None else req.start + limit * (1 - RESERVE_SHARE)
    rng = np.random.default_rng(req.seed)
    info = {"levels": [], "cycles": 0, "per_level": []}
    cut: set[str] = set()  # why phases were cut short ("time limit", "cancelled")

    base = unit_level(p)
    track = _Tracker(req, base)
    first = slice_units(base.problem, base.order)
    track.evaluations += 1
    track.offer(first.assignment, evaluate_partition(base.problem, first.assignment)
                .bottleneck, "dfs")
    info["first_cost"] = track.cost
    info["start"] = "dfs"
    # a second zero-shot order: Kahn's, smallest index first (graphs whose node numbering
    # follows their locality, e.g. a ring, cut better along it than along the DFS)
    part = slice_units(base.problem, base.problem.graph.topo_order, bound=track.cost)
    track.evaluations += 1
    if part.cost < track.cost and track.offer(
            part.assignment,
            evaluate_partition(base.problem, part.assignment).bottleneck, "index"):
        info["start"] = "index"
    if track.best_a is None:  # neither order slices within the capacity: the first
        # partition (cost inf, every block checked) is the answer; refining needs a
        # finite cost to improve on
        cost = float(evaluate_partition(p, first.assignment).bottleneck)
        return Result(cost=cost, partition=Partition(first.order, first.cuts,
                                                     first.assignment, cost),
                      priorities=order_to_priorities(first.order),
                      evaluations=track.evaluations,
                      wall_time=time.perf_counter() - req.start, history=History.empty(),
                      method="multilevel", lower_bound=req.lower_bound,
                      info={**info, "cycles": 0})

    def stopped() -> bool:  # (a phase cut short, e.g. an abandoned coarse search,
        # marks the result but does not stop the next phases)
        if req.stop.cancelled():
            cut.add("cancelled")
            return True
        if time.perf_counter() >= end:
            cut.add("time limit")
            return True
        return req.stop.reached(track.cost)

    cycle, idle, coarse_evals_spent = 0, 0, 0

    def left() -> int:  # evaluations left of max_evals (the coarse search's apart)
        return max_evals - (track.evaluations - coarse_evals_spent)

    while cycle < max_cycles and idle < PATIENCE_CYCLES and left() > 0 and not stopped():
        before = track.cost
        levels = coarsen(p, coarsest=coarsest, block=to_nodes(base, track.best_a),
                         base=base, rng=rng if cycle else None, should_stop=stopped)
        if cycle == 0:
            info["levels"] = [lv.size for lv in levels]
        top = levels[-1]
        a = np.empty(top.size, np.int64)
        a[top.node_cluster] = to_nodes(base, track.best_a)
        dense = top.problem.graph.num_edges > DENSE_COARSE_DEGREE * top.size
        if cycle == 0 and coarse_method != "none" and len(levels) > 1 and dense:
            info["coarse"] = {"method": coarse_method, "size": top.size,
                              "evaluations": 0, "skipped": "dense coarsest level"}
        elif cycle == 0 and coarse_method != "none" and len(levels) > 1:
            seconds = None if limit is None else min(
                coarse_share * limit, 0.9 * limit - (time.perf_counter() - req.start))
            before_coarse = track.evaluations
            a = _coarse_search(req, top, a, coarse_method, coarse_evals, seconds, track,
                               info, cut)
            coarse_evals_spent = track.evaluations - before_coarse
        elif cycle > 0 and len(levels) > 1:  # reorder inside blocks on the coarsest level
            stats = RefineStats()
            span = ILS_SHARE * (end - time.perf_counter())
            a, cost = perturb_reslice(top, a, time.perf_counter() + span, rng, stats,
                                      cancel=req.stop.cancel,
                                      max_evals=max(0, min(ils_evals, left())))
            _note_cut(cut, stats)
            track.evaluations += stats.evaluations
            info["per_level"].append({"cycle": cycle, "level": len(levels) - 1,
                                      "size": top.size, "evaluations": stats.evaluations,
                                      "seconds": stats.seconds, "moves": stats.moves,
                                      "cost": cost, "phase": "reslice"})
        for i in range(len(levels) - 1, -1, -1):
            if stopped() or left() <= 0:
                break
            lv = levels[i]
            if i < len(levels) - 1:
                a = to_finer(lv, a)
            # under a time limit, finer levels (slower to refine) get time in
            # proportion to their size
            share = lv.size / sum(levels[j].size for j in range(i + 1))
            deadline = time.perf_counter() + (end - time.perf_counter()) * share
            stats = RefineStats()
            a, cost = refine(lv, a, deadline, stats, slack=slack, cancel=req.stop.cancel,
                             max_evals=min(refine_evals * lv.size, left()))
            _note_cut(cut, stats)
            track.evaluations += stats.evaluations
            info["per_level"].append({"cycle": cycle, "level": i, "size": lv.size,
                                      "evaluations": stats.evaluations,
                                      "seconds": stats.seconds, "moves": stats.moves,
                                      "cost": cost})
            a0 = a
            for j in range(i - 1, -1, -1):
                a0 = to_finer(levels[j], a0)
            track.offer(a0, cost, f"refine-{i}")
        cycle += 1
        # one level only: every later cycle would repeat this one
        idle = PATIENCE_CYCLES if len(levels) == 1 else (
            0 if track.cost < before else idle + 1)
    info["cycles"] = cycle
    part = track.partition()
    cost = float(evaluate_partition(p, part.assignment).bottleneck)
    part = Partition(part.order, part.cuts, part.assignment, cost)
    history = History(*(np.asarray(c) for c in zip(*track.rows, strict=True))) \
        if track.rows else History.empty()
    if cut:
        info["stopped"] = "cancelled" if "cancelled" in cut else "time limit"
    return Result(cost=cost, partition=part, priorities=order_to_priorities(part.order),
                  evaluations=track.evaluations,
                  wall_time=time.perf_counter() - req.start, history=history,
                  method="multilevel", lower_bound=req.lower_bound,
                  interrupted=bool(cut), info=info)


def _note_cut(cut: set, stats: RefineStats) -> None:
    if stats.stopped is not None:
        cut.add(stats.stopped)


def _coarse_search(req, top: Level, a: np.ndarray, method: str, evals: int,
                   seconds: float | None, track: _Tracker, info: dict, cut: set
                   ) -> np.ndarray:
    """The coarsest level searched by a flat method seeded with the incumbent, for
    `evals` evaluations (and at most `seconds` under a time limit); returns the better
    of its answer and `a` (a block per coarsest cluster)."""
    from jaxplace.search.api import search
    from jaxplace.search.stop import StopRule

    if seconds is not None and seconds <= 1:
        cut.add("time limit")
        return a
    qp = top.problem
    seed_x = order_to_priorities(consistent_order(qp, a, top.order))
    t0 = time.perf_counter()
    cancel, box = threading.Event(), {}

    def work():
        try:
            box["res"] = search(qp, method, seed=req.seed, budget=evals,
                                stop=StopRule(seconds, None, None, cancel),
                                seeds=seed_x[None], progress=False)
        except Exception as e:  # noqa: BLE001 (the cycle goes on without it)
            box["error"] = f"{type(e).__name__}: {e}"

    # compiling the coarse programs cannot be interrupted: under a time limit, past
    # its share the search is abandoned (cancelled, it stops after its chunk in
    # flight) and the cycle goes on; without one it runs to its evaluations. Not a
    # daemon: a daemon thread still compiling when the interpreter exits is killed
    # inside XLA's C++ and aborts the process ("FATAL: exception not rethrown"), so a
    # library caller's exit waits for it; the CLI, once it has written its result,
    # leaves without waiting (os._exit) for threads named "jaxplace-..."
    # (`cli.runner.worker_alive`)
    thread = threading.Thread(target=work, name="jaxplace-coarse-search", daemon=False)
    thread.start()
    give_up = math.inf if seconds is None else t0 + seconds * 1.1 + 1.0
    while thread.is_alive() and time.perf_counter() < give_up:
        thread.join(timeout=0.2)
        if req.stop.cancelled():
            cancel.set()
            cut.add("cancelled")
            break
    if "res" not in box:
        cancel.set()
        if "error" not in box and "cancelled" not in cut:
            cut.add("time limit")
        info["coarse"] = {"method": method, "size": qp.n, "evaluations": 0,
                          "seconds": time.perf_counter() - t0,
                          "abandoned": "error" not in box, "error": box.get("error")}
        return a
    res = box["res"]
    if res.interrupted:
        cut.add("cancelled" if cancel.is_set() else "time limit")
    track.evaluations += res.evaluations
    info["coarse"] = {"method": method, "size": qp.n, "evaluations": res.evaluations,
                      "seconds": time.perf_counter() - t0, "cost": res.cost}
    start_cost = evaluate_partition(qp, a).bottleneck
    if res.cost < start_cost:
        a = np.asarray(res.partition.assignment, np.int64)
        a0 = a[top.node_cluster]
        track.offer(_to_base(track.base, a0), res.cost, "coarse")
    return a


def _to_base(base: Level, node_blocks: np.ndarray) -> np.ndarray:
    out = np.empty(base.size, np.int64)
    out[base.node_cluster] = node_blocks
    return out


__all__ = ["MULTILEVEL_MIN_NODES", "multilevel_search"]
