"""The objectives by name, resolved per problem.

A `jaxplace.registry.Registry`: entries are "module:attribute" paths (`LazyObjective`,
which also declares the problem objective served) loaded on first use, so that
`Problem` can check and resolve its objective without importing JAX or HiGHS. Order
matters: the first entry whose objective `matches` a problem serves it (unequal devices
before the identical accelerators of plain throughput). A new objective is one module
with an `Objective` and one `register` call (or one entry below).
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective
from jaxplace.registry import Lazy, Registry, load_path


@dataclass(frozen=True)
class LazyObjective(Lazy):
    """An objective at `path` ("module:attribute"), loaded on first use. Its
    `problem_objective` is declared here so that listing the values `Problem.objective`
    may take (every `Problem` checks its own, the CLI lists them) loads no objective;
    the loaded objective must agree."""

    problem_objective: str

    def load(self) -> Objective:
        obj = load_path(self.path)
        if obj.problem_objective != self.problem_objective:
            raise TypeError(f"{self.path} serves problem objective "
                            f"{obj.problem_objective!r}, registered as "
                            f"{self.problem_objective!r}")
        return obj


#: name -> a LazyObjective (an Objective once loaded or registered at run time)
_REGISTRY = Registry("objective", (
    ("throughput-unequal", LazyObjective(
        "jaxplace.objectives.throughput_unequal.objective:UNEQUAL_DEVICES", "throughput")),
    ("throughput", LazyObjective("jaxplace.objectives.throughput.objective:THROUGHPUT",
                                 "throughput")),
    ("latency", LazyObjective("jaxplace.objectives.latency.objective:LATENCY", "latency")),
    ("training", LazyObjective("jaxplace.objectives.training.objective:TRAINING",
                               "training")),
))

#: every objective by name, in resolution order (read-only: `register` adds one)
OBJECTIVES = _REGISTRY.view()


def objectives() -> dict[str, Objective]:
    """Every registered objective by name, in resolution order."""
    return dict(_REGISTRY.items())


def problem_objectives() -> tuple[str, ...]:
    """The values `Problem.objective` may take (loads no objective)."""
    return tuple(dict.fromkeys(_REGISTRY.entry(name).problem_objective
                               for name in _REGISTRY))


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


__all__ = ["OBJECTIVES", "LazyObjective", "objective_of", "objectives", "problem_objectives",
           "register", "unregister"]
