"""MIP polish: the exact MIP (HiGHS), warm-started from the search's best partition,
under a deterministic limit; its incumbent replaces the search's when better.

Why: on REGAL-like graphs at k <= 4 the order-based searches stall at partitions
whose cuts carry large tensors, while HiGHS's root node (cuts and primal heuristics
started from the same partition) finds lower-communication splits (12 held-out
graphs, 10 s: geometric mean 0.969x the default search's cost, up to 0.897x; at
k = 8 only 0.9986x, so the default polishes at k <= POLISH_MAX_K). The incumbent goes
back to the search as priorities whose Kahn order lists its blocks one after another,
so the slicing DP on that order costs at most the incumbent.

Cost (measured on the regal-time suite): the root node's time is mostly RENS's and RINS's
sub-MIPs, and RENS finds the improvements; POLISH_HIGHS_OPTIONS switches off the rest.
Smaller MIPs did not pay: on the search's partitions most nodes touch a cut, so the
"band" MIPs (only nodes near the cuts free) were barely smaller and needed rounds, and
limiting how far a node moves (`reach`) lost most of the gain; both stay as options.

Determinism: the polish is bounded by a node count (`polish_nodes(k)`: POLISH_MIP_NODES,
more at k = 2; HiGHS option `mip_max_nodes`) on one HiGHS thread with a fixed random
seed, so the same partition gives the same answer at any machine load. A wall-clock limit applies only when the
caller has one (the user's `time_limit`); a polish it cut short says so
(`info["stopped"] == "time limit"`).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from jaxplace.objectives.throughput.cost import evaluate_partition, throughput_lower_bound
from jaxplace.problem import Problem
from jaxplace.search.programs import order_priorities

#: The default search polishes problems with at most this many accelerators ...
POLISH_MAX_K = 4
#: ... and at most this many nodes (the model has n (k - 1) binaries plus tensors).
POLISH_MAX_NODES = 400
#: Branch-and-bound nodes of a polish: the root node (where HiGHS's cuts and primal
#: heuristics run from the warm start) and one branch. A count, not seconds, so that
#: the answer does not depend on the machine's load.
POLISH_MIP_NODES = 1
#: ... except at these k. At k = 2 the MIP has one binary per op and its branch and
#: bound is cheap: on 15 REGAL-like graphs (seeds 100-102, n 60-198) the default's
#: k = 2 answers were 1.9% above the certified lower bound (13 optimal, proved by
#: HiGHS in 2-23 s); 100 / 300 / 1,000 nodes from the default's partition took 0.73% /
#: 1.10% / 1.18% off in 1.2 / 1.7 / 1.9 s a graph (0.65 s at 1 node). At k = 3, 100
#: nodes took 0.63% off in 5.3 s a graph: not taken.
POLISH_MIP_NODES_AT_K = {2: 300}
#: The polish's MIP: "full" (every node free) or "band" (rounds over the nodes near
#: the cuts; see `band_nodes`).
POLISH_METHOD = "full"
#: "band": nodes within this many edges of a cut edge are free ...
POLISH_BAND_HOPS = 2
#: ... in at most this many MIPs (each from the last one's incumbent; the rounds stop
#: at the first that does not improve).
POLISH_BAND_ROUNDS = 3
#: HiGHS options of the polish's MIPs (over HiGHS's defaults). Why: at the root, with
#: the search's partition as MIP start, the better incumbents come from RENS's
#: sub-MIPs; RINS, the restart after the root's fixings and the symmetry detection took
#: about half of the CPU time on the regal-time suite's k = 4 problems and bought
#: 0.5% of its 2.9%. Presolve off (the top level only: HiGHS presolves every sub-MIP
#: anyway) and no cut separation below a sub-MIP's root took another 17% of the CPU
#: time on 40 k = 4 starts (four sets of ten), for the same cost within 0.2% (the
#: incumbents differ problem by problem: another path through the same heuristics).
#: Switches, not seconds: the answer stays independent of the load.
POLISH_HIGHS_OPTIONS = {"mip_heuristic_run_rins": False, "mip_allow_restart": False,
                        "mip_detect_symmetry": False, "presolve": "off",
                        "mip_allow_cut_separation_at_nodes": False}
#: Under a user's time limit, HiGHS seconds of a polish at most (and the time left).
POLISH_MAX_TIME = 10.0
#: Under a user's time limit, no polish with less than this many seconds left.
POLISH_MIN_TIME = 0.5
#: HiGHS status of a solve stopped by its time limit.
TIME_LIMIT_STATUS = "Time limit reached"


def polish_applies(problem: Problem) -> bool:
    """The default's rule: throughput on identical accelerators (CPU blocks allowed:
    the MIP models them), 2 <= k <= POLISH_MAX_K, n <= POLISH_MAX_NODES. Only called
    by `throughput_search`, whose objective that is."""
    return (2 <= problem.k <= POLISH_MAX_K and problem.n <= POLISH_MAX_NODES)


def polish_nodes(k: int) -> int:
    """Branch-and-bound nodes of the default's polish at `k` accelerators."""
    return POLISH_MIP_NODES_AT_K.get(int(k), POLISH_MIP_NODES)


def polish_time(remaining: float | None, cap: float | None = None) -> float | None:
    """HiGHS wall-clock seconds of a polish: the smaller of `remaining` (the user's
    time limit left) and `cap` (a user's or the default's cap under a time limit);
    None (only the node count bounds it) when neither is given. Never derived from
    the search's own elapsed time, which depends on the machine's load."""
    given = [float(v) for v in (remaining, cap) if v is not None]
    return min(given) if given else None


def polish_skipped(t: float | None) -> bool:
    """True when a wall-clock limit leaves too little time to polish."""
    return t is not None and t < POLISH_MIN_TIME


def mip_polish(problem: Problem, assignment, *, time_limit: float | None = None,
               max_nodes: int = POLISH_MIP_NODES, threads: int = 1,
               report: dict | None = None, method: str | None = None,
               hops: int | None = POLISH_BAND_HOPS, rounds: int = POLISH_BAND_ROUNDS,
               reach: int | None = None, highs_options: dict | None = None,
               ) -> tuple[np.ndarray, float, dict] | None:
    """(assignment, cost, info) of the exact MIP's incumbent when it beats
    `assignment`, else None.

    `method`: "full" (the whole MIP, every node free) or "band" (`rounds` MIPs, each
    freeing only the nodes within `hops` edges of a cut edge of the current partition,
    every node when `hops` is None, the rest fixed to their blocks; see `band_nodes`),
    a free node moving at most `reach` blocks (None: any); None: POLISH_METHOD.
    `max_nodes`: branch-and-bound nodes of each MIP (deterministic); `time_limit`:
    seconds in all (None: none); `highs_options`: HiGHS options over
    POLISH_HIGHS_OPTIONS (each checked).
    `info`: seconds, HiGHS status, nodes, the MIPs' free nodes and rounds, proven lower
    bound (only a full MIP proves one), and "stopped": "time limit" when the time limit
    cut it short; `report`, when given, receives it whether or not the polish improved.
    """
    from jaxplace.bounds.exact import claims_proof, dag_numbering, exact_model

    method = POLISH_METHOD if method is None else method
    if method not in ("full", "band"):
        raise ValueError(f"unknown polish method {method!r} (full, band)")
    pc = evaluate_partition(problem, assignment)
    if not pc.feasible or (time_limit is not None and time_limit <= 0):
        return None
    t0 = time.perf_counter()
    opts = {"mip_max_nodes": int(max_nodes), **POLISH_HIGHS_OPTIONS, **(highs_options or {})}
    model = exact_model(problem)
    # `reach` counts from the start, over all rounds (a round's window around the last
    # round's partition would let a node drift `reach` blocks per round)
    origin = None if reach is None else dag_numbering(pc.assignment, pc.block_order)
    cur, info = pc, {}
    for r in range(1 if method == "full" else max(1, int(rounds))):
        if method == "full":
            free = None if reach is None else np.ones(problem.n, dtype=bool)
        else:
            free = band_nodes(problem, cur.assignment, hops)
        if free is not None and free.all() and reach is None:
            free = None  # the whole model
        pos = None if free is None else dag_numbering(cur.assignment, cur.block_order)
        if origin is not None and np.abs(pos - origin).max() > reach:
            # the last round's partition renumbered in DAG order lies outside the
            # windows (another topological order of its blocks): no MIP start, stop
            break
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            info["stopped"] = "time limit"
            break
        res, found = _solve(problem, model, cur, free, pos, reach, origin, left, threads,
                            opts)
        step = polish_info(res, 0.0, pc.bottleneck)
        info = {**step, "rounds": r + 1,
                "nodes": info.get("nodes", 0) + step["nodes"],
                "free": info.get("free", []) + [problem.n if free is None
                                                 else int(free.sum())]}
        if free is not None or claims_proof(res, cur.bottleneck, 1e-6):
            # a restricted MIP bounds only its neighbourhood; a claim that the start is
            # optimal is left unconfirmed here (`exact_bound`'s `confirm`, skipped:
            # the polish wants partitions), so neither is reported as a bound
            info["lower_bound"] = float(throughput_lower_bound(problem))
        new = None if found is None else evaluate_partition(problem, found)
        if new is None or not new.bottleneck < cur.bottleneck * (1 - 1e-9):
            break
        cur = new
        if "stopped" in info:
            break
    info["time"] = time.perf_counter() - t0
    info.setdefault("before", pc.bottleneck)
    if report is not None:
        report.update(info)
    if cur is pc:
        return None
    info["after"] = cur.bottleneck
    return cur.assignment, cur.bottleneck, info


def _solve(problem: Problem, model, pc, free, position, reach, origin, time_limit,
           threads, opts):
    """One HiGHS solve of `model` from `pc` (its blocks in DAG order: `position`),
    the nodes outside `free` (None: all free) fixed to their blocks, every node within
    `reach` blocks of its block in `origin` (None: anywhere): (SolveResult,
    assignment or None)."""
    from jaxplace.bounds.exact import exact_bound

    if free is not None:
        model = fix_nodes(model, position, free, reach, origin)
    res, found, _ = exact_bound(
        problem, pc.assignment, threads=threads, model=model,
        time_limit=math.inf if time_limit is None else time_limit, highs_options=opts,
        confirm=False)
    return res, found


def band_nodes(problem: Problem, assignment, hops: int) -> np.ndarray:
    """(n,) bool: the nodes within `hops` edges (either direction) of an edge whose
    ends lie in different blocks. Why: the search's partitions are good away from
    their cuts; what the MIP improves is where the cuts run, so only the nodes near
    them need to move, and a MIP over them is much smaller than the whole one.
    `hops` None: every node."""
    if hops is None:
        return np.ones(problem.n, dtype=bool)
    a = np.asarray(assignment, np.int64)
    e = problem.graph.edges
    free = np.zeros(problem.n, dtype=bool)
    if not len(e):
        return free
    u, v = e[:, 0], e[:, 1]
    cut = a[u] != a[v]
    free[u[cut]] = True
    free[v[cut]] = True
    for _ in range(max(0, int(hops))):
        grow = free.copy()
        grow[v[free[u]]] = True
        grow[u[free[v]]] = True
        free = grow
    return free


def fix_nodes(model, position: np.ndarray, free: np.ndarray, reach: int | None = None,
              origin: np.ndarray | None = None):
    """A copy of the exact MIP `model` with every node outside `free` fixed to its
    block `position` (blocks in DAG order), y[v, b] = (position[v] <= b), and every
    node kept within `reach` blocks of its block in `origin` (default `position`;
    None `reach`: anywhere): y[v, b] = 0 for b < origin[v] - reach, 1 for
    b >= origin[v] + reach. Raises ValueError when a node's `position` lies outside
    its window (the start would not be a solution of the model)."""
    nb = model.nb
    lo, hi = model.col_lo.copy(), model.col_hi.copy()
    if nb > 1:
        pos = np.asarray(position, np.int64)
        free = np.asarray(free, bool)
        first = np.where(free, 0, pos)  # the blocks a node may take: first..last
        last = np.where(free, nb - 1, pos)
        if reach is not None:
            at = pos if origin is None else np.asarray(origin, np.int64)
            first = np.maximum(first, at - max(0, int(reach)))
            last = np.minimum(last, at + max(0, int(reach)))
            if (pos < first).any() or (pos > last).any():
                raise ValueError(f"a node lies more than {reach} blocks from its origin")
        b = np.arange(nb - 1)[None, :]
        zero, one = b < first[:, None], b >= last[:, None]
        ylo = lo[model.y0:model.y0 + model.n * (nb - 1)].reshape(model.n, nb - 1)
        yhi = hi[model.y0:model.y0 + model.n * (nb - 1)].reshape(model.n, nb - 1)
        yhi[zero] = 0.0
        ylo[one] = 1.0
    return replace(model, col_lo=lo, col_hi=hi)


def polish_info(res, seconds: float, before: float) -> dict:
    """What a polish reports of its HiGHS solve (`res`: a `SolveResult`)."""
    info = {"time": seconds, "status": res.status, "nodes": int(res.nodes),
            "lower_bound": float(res.bound), "before": before}
    if res.status == TIME_LIMIT_STATUS:
        info["stopped"] = "time limit"
    return info


def partition_priorities(problem: Problem, assignment) -> np.ndarray:
    """(n,) float32 priorities whose Kahn order lists the blocks one after another
    (pipeline order, each block in the graph's topological order), so the slicing DP
    on that order costs at most the partition's bottleneck."""
    pc = evaluate_partition(problem, assignment)
    rank = np.empty(problem.num_blocks, np.int64)
    rank[pc.block_order] = np.arange(problem.num_blocks)
    a = rank[pc.assignment]
    pos = np.empty(problem.n, np.int64)
    pos[problem.graph.topo_order] = np.arange(problem.n)
    return np.asarray(order_priorities(np.lexsort((pos, a)), problem.n))


__all__ = ["POLISH_HIGHS_OPTIONS", "POLISH_MAX_K", "POLISH_MAX_NODES", "POLISH_MAX_TIME",
           "POLISH_METHOD", "POLISH_MIP_NODES", "POLISH_MIP_NODES_AT_K", "band_nodes",
           "fix_nodes", "mip_polish", "partition_priorities", "polish_applies",
           "polish_nodes", "polish_skipped", "polish_time"]
