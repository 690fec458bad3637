"""Objectives as objects: the contract (`Objective`), the registry and the lookup.

    from jaxplace.objectives import objective_of
    obj = objective_of(problem)        # throughput, throughput-unequal or latency
    obj.evaluate_partition(problem, assignment).cost
    obj.lower_bound(problem)

See `base.Objective` for the contract and `registry` for adding one.
"""

from jaxplace.objectives.base import ExactAnswer, Objective
from jaxplace.objectives.registry import (
    objective_of,
    objectives,
    problem_objectives,
    register,
    unregister,
)

__all__ = ["ExactAnswer", "Objective", "objective_of", "objectives",
           "problem_objectives", "register", "unregister"]
