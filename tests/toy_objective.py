"""A toy fourth objective (the busiest block's compute, transfers free): what the
objective contract asks of a new objective, plugged in by the objective and CLI tests."""

from __future__ import annotations

import numpy as np
from strategies import dfs_work_cut, one_partition_result

from jaxplace.objectives import Objective


class ComputeOnly(Objective):
    """A toy objective: the busiest block's compute, transfers free (on identical
    accelerators), searched by cutting the DFS order into k equal-work pieces."""

    name = "toy-compute"
    problem_objective = "toy-compute"
    label = "toy compute-only bottleneck"
    search_methods = frozenset({"default"})
    bound_methods = ("simple",)
    default_bounds = ("simple",)

    def evaluate_partition(self, problem, assignment, *, contiguous=True, devices=None):
        from jaxplace.objectives.throughput.cost import check_assignment, quotient_order

        a = check_assignment(problem, getattr(assignment, "assignment", assignment))
        quotient_order(problem, a)  # contiguous: raises on a cycle

        class Cost:
            cost = float(np.bincount(a, weights=problem.graph.work).max())
        Cost.assignment = a
        return Cost()

    def lower_bound(self, problem):
        w = problem.graph.work
        return float(max(w.max(), w.sum() / problem.k))

    def certify(self, problem, partition=None, methods=None, **settings):
        from jaxplace.bounds.base import MethodResult
        from jaxplace.objectives.ladder import certify_with

        def simple(pr, ctx, part):
            return MethodResult("simple", self.lower_bound(pr), "closed form", 0.0,
                                kind="closed-form")

        return certify_with(self, problem, partition, methods, {"simple": simple},
                            **settings)

    def start_partition(self, problem):
        return dfs_work_cut(problem)

    def default_search(self, req):
        return one_partition_result(self, req, dfs_work_cut(req.problem))
