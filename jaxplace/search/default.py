"""The default method and the default budget of every method.

`default_search` is the planner (`jaxplace.search._planner.plan`): an exact method first
where one fits, else the objective's own default search (for throughput on identical
accelerators `jaxplace.objectives.throughput.search`: BRKGA, a local search on the
order, a MIP polish).
"""

from __future__ import annotations

from jaxplace.search.request import SearchRequest


def default_budget(problem, time_limit: float | None = None,
                   polish: bool | None = None) -> int:
    """The default search's budget for `problem`: its objective's
    `default_budget` (generic: 30,000, or max(3000, 600 n) when smaller; throughput
    on identical accelerators without a time limit: 6,000 up to 200 ops, 30 per op
    above, twice that at k > 8, half of it where the k <= 4 MIP polish follows).
    `time_limit`: the user's
    seconds, if any; `polish`: the caller's polish option (None: the default rule)."""
    return int(problem.objective_impl.default_budget(problem, time_limit, polish=polish))


def default_search(req: SearchRequest):
    """The default method: the planner (`jaxplace.search._planner.plan`), which runs
    an exact method first where one fits, else the objective's own default search."""
    from jaxplace.search._planner import plan

    return plan(req)


__all__ = ["default_budget", "default_search"]
