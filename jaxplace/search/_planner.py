"""The default method: one portfolio under one time limit, per problem.

1. Cheap facts first: the objective's own lower bound (the search's target) and
   whether an exact method is expected to finish (`Objective.exact_fits`: for
   throughput on identical accelerators, the DP over ideals when the graph has at most
   `EXACT_MAX_IDEALS` ideals), bounded by counts, and under a time limit also by
   FACTS_SHARE of it.
2. When it fits, the exact method runs first, pruned by the first solution's cost,
   with at most `EXACT_SHARE` of the time limit (where none fits, the option
   `exact="bbr"` runs BB&R over ideals there, `EXACT_METHODS`). A finished run is
   the answer and its proof: the search is skipped.
3. Otherwise the objective's default search (throughput: BRKGA, local search and MIP
   polish; it stops at the lower bound or on stagnation) with the time left.

`Result.info` says truthfully which part found the answer (`found_by`) and, when one
did, which proved it optimal (`proved_by`, with `proof_lower_bound`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.partition import Partition
from jaxplace.registry import Registry, load_path
from jaxplace.search.request import SearchRequest
from jaxplace.search.result import History, Result

#: Share of the time limit the exact method may use before the search takes over.
EXACT_SHARE = 0.5
#: Share of the user's time limit the cheap facts (the exact check) may use; without
#: a time limit they are bounded by counts only (about 0.4 s at 20,000 ops), so that
#: the planner's choice does not depend on the machine's load.
FACTS_SHARE = 0.02


def plan(req: SearchRequest) -> Result:
    """The default method (module doc)."""
    obj, problem = req.objective, req.problem
    facts: dict = {}
    if not req.options.get("search_only", False):
        t0 = time.perf_counter()
        limit = req.stop.time_limit
        reason = obj.exact_fits(problem) if limit is None else \
            obj.exact_fits(problem, deadline=t0 + FACTS_SHARE * limit)
        facts["exact_check_s"] = time.perf_counter() - t0
        if reason is not None:
            facts["exact"] = reason
            res = _exact_first(req, facts)
            if res is not None:
                return res
        elif (named := req.options.get("exact")) is not None:
            facts["exact"] = f"option exact={named!r}"
            res = _exact_first(req, facts, _named_exact(obj, named))
            if res is not None:
                return res
    res = obj.default_search(req)
    info = {**res.info, **facts}
    info.setdefault("found_by", _found_by(res))
    if res.cost <= req.lower_bound * (1 + 1e-9):
        info.setdefault("proved_by", "simple")
        info.setdefault("proof_lower_bound", float(req.lower_bound))
    return _with_info(res, info)


def exact_answer(problem, *, seed: int = 0, time_limit: float | None = None
                 ) -> Result | None:
    """The planner's exact phase alone (for batched runs): the proven optimum as a
    `Result` (info `found_by`, `proved_by`), or None when no exact method fits the
    problem or it did not finish within `time_limit` seconds."""
    from jaxplace.search.stop import StopRule

    req = SearchRequest(problem, int(seed), 1, StopRule(
        time_limit=None if time_limit is None else time_limit / EXACT_SHARE))
    facts: dict = {}
    reason = req.objective.exact_fits(problem)
    if reason is None:
        return None
    facts["exact"] = reason
    res = _exact_first(req, facts)
    return res if res is not None and "proved_by" in res.info else None


@dataclass(frozen=True)
class ExactMethod:
    """An exact method the planner runs by name: its function as "module:function"
    (loaded when asked for; the exact layer sits above the search) and the capability
    of the objectives it models."""

    path: str
    capability: str


#: Exact methods the planner runs by name (option `exact=`) where the objective's own
#: does not fit: BB&R over ideals for throughput on identical accelerators.
EXACT_METHODS = Registry("exact method", {
    "bbr": ExactMethod("jaxplace.exact.bbr:bbr_exact", "identical_devices"),
}, field="exact")


def _named_exact(obj, name):
    """The exact method named by the `exact` option (JaxplaceError when unknown or when
    the objective lacks the capability it models)."""
    method = EXACT_METHODS.get(name)
    obj.require(method.capability, field="exact")
    return load_path(method.path)


def _exact_first(req: SearchRequest, facts: dict, exact=None) -> Result | None:
    """Step 2 (module doc): the exact method's Result, or None to go on searching.
    `exact`: the method to run (default: the objective's own `exact`)."""
    obj, problem = req.objective, req.problem
    first = req.first_solution
    limit = req.stop.time_limit
    elapsed = time.perf_counter() - req.start
    budget = math.inf if limit is None else max(0.0, EXACT_SHARE * limit - elapsed)
    if budget <= 0.0 or req.stop.cancelled():
        return None
    ub = first.cost if first is not None and math.isfinite(first.cost) else None
    ans = (obj.exact if exact is None else exact)(
        problem, time_limit=budget, upper_bound=ub,
        partition=None if ub is None else first.partition.assignment)
    if ans is None:
        return None
    facts["exact_s"] = ans.time
    facts["exact_detail"] = ans.detail
    if not ans.proven:
        facts["exact_status"] = "unfinished"
        return None
    info = {**facts, "proved_by": ans.method, "proof_lower_bound": float(ans.lower_bound)}
    if ans.assignment is not None:
        part = _partition_of(problem, ans.assignment, ans.cost)
        res = _result(req, part, info | {"found_by": ans.method})
    elif first is not None and math.isfinite(ans.lower_bound) and \
            first.cost <= ans.lower_bound * (1 + 1e-9):
        res = _with_info(first, info | {"found_by": "dfs"})  # the first one is optimal
    else:  # proven infeasible: report the first solution as it is
        return None if first is None else _with_info(first, info | {"found_by": "dfs"})
    if req.observer is not None:
        from jaxplace.search.stop import Progress

        req.observer(Progress(res.evaluations, res.cost, res.priorities,
                              time.perf_counter() - req.start, ans.method, res.partition))
    return res


def _partition_of(problem, assignment, cost: float) -> Partition:
    """The `Partition` of a contiguous assignment: its blocks in pipeline order, each
    in the graph's topological order (the slicing of that order into those blocks)."""
    pc = evaluate_partition(problem, assignment)
    rank = np.empty(len(pc.total), np.int64)
    rank[pc.block_order] = np.arange(len(pc.total))
    pos = np.empty(problem.n, np.int64)
    pos[problem.graph.topo_order] = np.arange(problem.n)
    r = rank[pc.assignment]
    order = np.lexsort((pos, r)).astype(np.int64)
    cuts = tuple(int(i) for i in np.flatnonzero(np.diff(r[order])) + 1)
    return Partition(order, cuts, np.asarray(pc.assignment, np.int64), float(pc.bottleneck))


def _result(req: SearchRequest, part: Partition, info: dict) -> Result:
    from jaxplace.search.baselines import order_to_priorities

    x = order_to_priorities(part.order, req.problem.n)
    return Result(cost=float(part.cost), partition=part, priorities=x, evaluations=1,
                  wall_time=time.perf_counter() - req.start,
                  history=History(np.array([1], np.int64),
                                  np.array([time.perf_counter() - req.start]),
                                  np.array([float(part.cost)])),
                  method="default", lower_bound=req.lower_bound, info=info)


def _with_info(res: Result, info: dict) -> Result:
    import dataclasses

    return dataclasses.replace(res, info=info)


def _found_by(res: Result) -> str:
    """The phase whose partition is the answer (from the default search's info)."""
    info = res.info
    if info.get("first_solution"):
        return info["first_solution"]
    if "polish" in info and info["polish"].get("decoded") is not None and \
            info["polish"]["decoded"] <= res.cost:
        return "mip-polish"
    local = info.get("local_best") or []
    brkga = info.get("brkga_best")
    if local and (brkga is None or min(local) < brkga):
        return "local-search"
    if brkga is not None:
        return "policy+brkga" if info.get("policy") else "brkga"
    return res.method


__all__ = ["EXACT_SHARE", "FACTS_SHARE", "exact_answer", "plan"]
