"""The default method and the default budget of every method.

`default_search` is the planner (`jaxplace.search.planner.plan`): an exact method first
where one fits, else the objective's own default search (for throughput on identical
accelerators `jaxplace.objectives.throughput.search`: BRKGA, a local search on the
order, a MIP polish).
"""

from __future__ import annotations

from jaxplace.search.request import SearchRequest

#: Decoder evaluations of the default search (about 3x the paper's brkga-10000).
DEFAULT_BUDGET = 30_000


def default_budget(problem) -> int:
    """30,000, or max(3000, 600 n) when smaller: tiny graphs need far fewer evaluations
    (the order space is small); otherwise the stagnation stops end easy ones early."""
    return min(DEFAULT_BUDGET, max(3000, 600 * problem.n))


def default_search(req: SearchRequest):
    """The default method: the planner (`jaxplace.search.planner.plan`), which runs
    an exact method first where one fits, else the objective's own default search."""
    from jaxplace.search.planner import plan

    return plan(req)


__all__ = ["DEFAULT_BUDGET", "default_budget", "default_search"]
