"""The objectives by name, resolved per problem.

A `jaxplace.registry.Registry`: entries are "module:attribute" strings loaded on first
use, so that `Problem` can resolve its objective without importing JAX or HiGHS. Order
matters: the first entry whose objective `matches` a problem serves it (unequal devices
before the identical accelerators of plain throughput). A new objective is one module
with an `Objective` and one `register` call (or one entry below).
"""

from __future__ import annotations

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective
from jaxplace.registry import Registry

#: name -> "module:attribute" (an Objective once loaded or registered at run time)
_REGISTRY = Registry("objective", (
    ("throughput-unequal", "jaxplace.objectives.throughput_unequal.objective:UNEQUAL_DEVICES"),
    ("throughput", "jaxplace.objectives.throughput.objective:THROUGHPUT"),
    ("latency", "jaxplace.objectives.latency.objective:LATENCY"),
    ("training", "jaxplace.objectives.training.objective:TRAINING"),
))

#: every objective by name, in resolution order (read-only: `register` adds one)
OBJECTIVES = _REGISTRY.view()


def objectives() -> dict[str, Objective]:
    """Every registered objective by name, in resolution order."""
    return dict(_REGISTRY.items())


def problem_objectives() -> tuple[str, ...]:
    """The values `Problem.objective` may take."""
    return tuple(dict.fromkeys(o.problem_objective for o in objectives().values()))


def register(objective: Objective, *, first: bool = False,
             replace: bool = False) -> Objective:
    """Add `objective`; `first` puts it before the others in resolution order (an
    objective that specializes an existing one). A second entry under a name is a
    JaxplaceError unless `replace` (then it takes the old one's place)."""
    if not isinstance(objective, Objective):
        raise JaxplaceError(f"expected an Objective, got {type(objective).__name__}",
                            field="objective")
    return _REGISTRY.register(objective.name, objective, first=first, replace=replace)


def unregister(name: str) -> None:
    """Remove an objective (tests that register toys clean up with this)."""
    _REGISTRY.unregister(name)


def objective_of(problem) -> Objective:
    """The objective serving `problem` (JaxplaceError naming the choices if none)."""
    for obj in _REGISTRY.values():
        if obj.matches(problem):
            return obj
    raise JaxplaceError(f"must be one of {', '.join(problem_objectives())}, got "
                        f"{problem.objective!r}", field="objective")


__all__ = ["OBJECTIVES", "objective_of", "objectives", "problem_objectives", "register",
           "unregister"]
