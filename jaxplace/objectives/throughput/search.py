"""The throughput objective's own search on identical accelerators (what the planner
runs when no exact method fits): BRKGA, then a batched local search on the order.

1. BRKGA (Goncalves and Resende 2011), population 100, a third of the budget (with the
   default budget exactly the paper's brkga-10000, sharing its compiled program),
   stopped early after BRKGA_PATIENCE evaluations without improvement. With k >= 8
   identical accelerators and no CPU blocks its first population and mutants are
   drawn from the shipped policy (REGAL's coupling; with gnn-v2 1.8% and 1.0% lower
   cost at k = 8 and 16 on held-out REGAL-like graphs, 0.4% at k = 4, inside the
   noise; with gnn-v3, the shipped one now, 1.6% and 1.4% on the same graphs, 0.3%
   at k = 4, level with gnn-v2).
2. `ShiftSearch` from the best start among BRKGA's final population and the heuristic
   orders (DFS linearization, ASAP / ALAP layerings over placement units, free units
   placed next to their heaviest tensor partner, user seeds): batches of node shifts
   in the order, re-sliced optimally by the decoder, accepting no-worse moves
   (plateau walks); for k >= FOCUS_MIN_K half the moves start at the incumbent's
   bottleneck block or its neighbours. Stops after PATIENCE evaluations without
   improvement, then restarts (RESTARTS times) from the next best distinct start.
3. MIP polish (`jaxplace.objectives.throughput.polish`): for k <= 4 identical
   accelerators and n <= 400, the exact MIP on HiGHS warm-started from the best partition, for
   `polish_nodes(k)` branch-and-bound nodes (a count: the same answer at any machine
   load; under a time limit also at most 10 s and the time left, and a polish cut
   short by it marks the result `interrupted`, info "stopped": "time limit"); its
   incumbent, when better, becomes the answer. Option `polish` (bool) forces it on
   or off.
4. Budget: `jaxplace.search.default.default_budget` (the objective's: 6,000 evaluations
   up to 200 ops, 30 per op above, at most 30,000; max(3000, 600 n) when smaller; half
   of it where the k <= 4 polish follows, unless `polish` is False); the
   search stops at once when the cost reaches the simple lower bound (proved optimal).

On a CPU the objective (`Throughput.default_search`) runs steps 1 and 2 as
`search_many`'s compiled program for a one-problem bucket
(`jaxplace.objectives.throughput.bucket`: one program per size class, shared with
`search_many`, instead of a BRKGA and a local-search program per class and window)
unless an option, user seeds or another population need the phase programs below
(`bucket.old_path_reason`).

Also here: `balanced_cut`, the first solution of graphs too large for the reference DP.
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.polish import (
    POLISH_MAX_TIME,
    mip_polish,
    partition_priorities,
    polish_applies,
    polish_nodes,
    polish_skipped,
    polish_time,
)
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.partition import Partition
from jaxplace.problem import Problem
from jaxplace.progress import bar
from jaxplace.search.baselines import seed_priorities
from jaxplace.search.local import shift_search
from jaxplace.search.methods import evolve
from jaxplace.search.request import SearchRequest, finish
from jaxplace.search.result import History

#: Share of the budget spent by BRKGA; the rest goes to the local search.
BRKGA_SHARE = 1 / 3
POPULATION = 100
LOCAL_BATCH = 64
#: Share of the local-search candidates whose moved node comes from the bottleneck
#: block or its neighbours, by k: helped at k = 16, hurt at k = 4, 8
#: on REGAL-like graphs, so only for k >= FOCUS_MIN_K.
FOCUS = 0.5
FOCUS_MIN_K = 12
#: Local-search steps per compiled chunk (the bottleneck focus is refreshed between).
LOCAL_CHUNK = 8
#: Stop a local search after this many evaluations without improvement.
PATIENCE = 12_000
#: Stop BRKGA after this many evaluations without improvement.
BRKGA_PATIENCE = 4000
#: Heuristic orders in BRKGA's first population (else only as local-search starts):
#: seeding made BRKGA converge early on REGAL graphs.
SEED_BRKGA = False
#: ... except on graphs of at least this many nodes, where uniform random keys are far
#: from the heuristic orders and the few generations a time limit allows never reach
#: them (n = 2000, 120 s: BRKGA ended above the DFS solution).
SEED_BRKGA_MIN_NODES = 1000
#: Draw BRKGA's first population and mutants from the shipped policy (REGAL's
#: coupling, `jaxplace.search.policy`) in the first phase, on problems with at least
#: POLICY_MIN_K identical accelerators and no CPU blocks (what the policy was trained
#: on); option `use_policy` forces it on or off.
USE_POLICY = True
POLICY_MIN_K = 8
#: Local searches restarted after a stagnation stop, from the next best start (0: a
#: restart never improved on REGAL graphs or bert_l-12 in our runs, and costs time).
RESTARTS = 0


def throughput_search(req: SearchRequest):
    """See the module doc. Options (`req.options`): `brkga_share`, `local_batch`,
    `moves`, `focus`, `patience`, `brkga_patience`, `seed_brkga` (heuristic orders in
    BRKGA's first population, else only local-search starts), `restarts` (local
    searches after a stagnation stop, from the next best distinct start)."""
    problem, opt = req.problem, dict(req.options)
    budget = req.budget
    local_batch = opt.get("local_batch", LOCAL_BATCH)
    focus = opt.get("focus", FOCUS if problem.k >= FOCUS_MIN_K else 0.0)
    P = max(2, min(req.population_size or POPULATION, budget // 3))
    s = seed_priorities(problem.graph)
    if req.seeds is not None:
        s = np.concatenate([np.asarray(req.seeds, np.float32).reshape(-1, problem.n), s])
    # the driver's chunk rule: with the default budget this is brkga-10000's compiled
    # program (population 100, 100 generations in chunks of 20), shared with it
    gens = max(int(budget * opt.get("brkga_share", BRKGA_SHARE)) // P, 1)
    with bar(budget, "default", enabled=req.progress) as pb:
        seed_brkga = SEED_BRKGA or problem.n >= SEED_BRKGA_MIN_NODES
        seeds = s if opt.get("seed_brkga", seed_brkga) else None
        patience = opt.get("brkga_patience", BRKGA_PATIENCE)
        coupled = opt.get("use_policy", policy_helps(problem))
        if coupled:
            from jaxplace.search.policy import policy_evolve

            out1 = policy_evolve(req, budget=gens * P, population=P, seeds=seeds,
                                 path=opt.get("policy"), patience=patience,
                                 phase="policy+brkga", pbar=pb)
        else:
            out1 = evolve(req, "BRKGA", budget=gens * P, population=P, options={},
                          seeds=seeds, patience=patience, phase="brkga", pbar=pb)
        evals, history = out1.evaluations, out1.history
        best_x, best_f = out1.best_x[:problem.n], out1.best_f
        done = out1.interrupted or req.stop.reached(best_f)
        info = {"brkga_best": out1.best_f, "local_best": [], "brkga_evaluations": evals}
        if coupled:
            from jaxplace.search.policy import policy_label

            info["policy"] = policy_label(req, opt.get("policy"))
        interrupted = out1.interrupted
        for i, x0 in enumerate(_starts(problem, out1, s, opt.get("restarts", RESTARTS))):
            steps = (budget - evals) // local_batch
            if done or steps < LOCAL_CHUNK:
                break
            out2 = shift_search(problem, x0, steps=steps, batch=local_batch,
                                moves=opt.get("moves", 3), focus=focus,
                                patience=opt.get("patience", PATIENCE), chunk=LOCAL_CHUNK,
                                seed=req.seed + 1 + i, device=req.device,
                                window=req.window,
                                run=req.run("local", pbar=pb, evaluations0=evals))
            evals += out2.evaluations
            history = history.concat(out2.history)
            info["local_best"].append(out2.best_f)
            if out2.best_f < best_f:
                best_x, best_f = out2.best_x[:problem.n], out2.best_f
            interrupted = out2.interrupted
            done = out2.interrupted or not out2.stale or req.stop.reached(best_f)
        if not (interrupted or req.stop.cancelled() or req.stop.reached(best_f)) and opt.get(
                "polish", polish_applies(problem)):
            x, f = _polish(req, best_x, best_f, info)
            if info.get("polish", {}).get("stopped"):
                interrupted = True  # the user's time limit cut the polish short
                info["stopped"] = "time limit"
            if f < best_f:  # the re-decode of the MIP's incumbent: one evaluation
                evals += 1
                history = history.concat(History(
                    np.array([evals], np.int64),
                    np.array([time.perf_counter() - req.start]), np.array([f])))
                best_x, best_f = x, f
    return finish(req, "default", best_x, evals, history, interrupted, info=info)


def _polish(req: SearchRequest, best_x, best_f: float, info: dict):
    """Step 3 (module doc): the MIP polish; (priorities, cost), improved or not.
    Bounded by a node count; by seconds only under the user's time limit."""
    problem = req.problem
    limit = req.stop.time_limit
    left = None if limit is None else limit - (time.perf_counter() - req.start)
    t = polish_time(left, None if left is None else POLISH_MAX_TIME)
    if polish_skipped(t):
        return best_x, best_f
    part = decode_reference(problem, np.asarray(best_x, np.float32))
    nodes = polish_nodes(problem.k)
    info["polish"] = {"time_limit": t, "max_nodes": nodes}
    out = mip_polish(problem, part.assignment, time_limit=t, max_nodes=nodes,
                     report=info["polish"])
    if out is None:
        return best_x, best_f
    x = partition_priorities(problem, out[0])
    got = decode_reference(problem, x).cost
    info["polish"]["decoded"] = got
    if got < best_f:
        return x, got
    return best_x, best_f


def policy_helps(problem: Problem) -> bool:
    """The rule for coupling BRKGA with the shipped policy (module doc); `search_many`
    follows it too."""
    return (USE_POLICY and problem.k >= POLICY_MIN_K and problem.cpus == 0
            and bool(problem.supported.all()))


def _starts(problem: Problem, out1, seeds: np.ndarray, restarts: int) -> list:
    """Local-search starts, best first: BRKGA's final population and the heuristic
    seeds (float64 reference costs), distinct orders only, at most 1 + restarts."""
    cands = [(out1.best_f, out1.best_x[:problem.n])]
    if out1.carry is not None:
        state = out1.carry[0]
        pop = np.asarray(state.population)[:, :problem.n]
        fit = np.asarray(state.fitness, np.float64)
        cands += [(float(f), x) for f, x in zip(fit, pop, strict=True) if np.isfinite(f)]
    cands += [(decode_reference(problem, x).cost, np.asarray(x, np.float32)) for x in seeds]
    cands.sort(key=lambda c: c[0])
    out, seen = [], set()
    for _, x in cands:
        key = tuple(np.argsort(-np.asarray(x, np.float64), kind="stable")[:64].tolist())
        if key in seen:
            continue
        seen.add(key)
        out.append(x)
        if len(out) > restarts:
            break
    return out


#: Largest graph whose DFS first solution is decoded before the search starts (the
#: NumPy reference DP is O(n^2 k): about 0.2 s at n = 2000, 1.5 s at 5000); larger
#: ones start from `balanced_cut`.
FIRST_SOLUTION_MAX_NODES = 8000


def balanced_cut(problem: Problem, order: np.ndarray) -> Partition | None:
    """`order` cut into min(k, n) contiguous pieces of about equal work (O(n + tensors);
    a first solution for graphs too large for the reference DP). None when the problem
    has placement units, CPU blocks or CPU-only ops, or the cut is infeasible."""
    g = problem.graph
    if problem.cpus or not g.units.trivial or not bool(problem.supported.all()):
        return None
    k = min(problem.k, g.num_nodes)
    csum = np.cumsum(g.work[order])
    targets = csum[-1] * np.arange(1, k) / k
    cuts = np.unique(np.clip(np.searchsorted(csum, targets, side="right"), 1,
                             g.num_nodes - 1))
    assignment = np.empty(g.num_nodes, np.int64)
    for b, piece in enumerate(np.split(order, cuts)):
        assignment[piece] = b
    cost = evaluate_partition(problem, assignment).bottleneck
    if not np.isfinite(cost):
        return None
    return Partition(np.asarray(order, np.int64), tuple(int(c) for c in cuts), assignment,
                     float(cost))


__all__ = ["FIRST_SOLUTION_MAX_NODES", "balanced_cut", "policy_helps", "throughput_search"]
