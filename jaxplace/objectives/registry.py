"""The objectives by name, resolved per problem.

Entries are "module:attribute" strings loaded on first use, so that `Problem` can
resolve its objective without importing JAX or HiGHS. Order matters: the first entry
whose objective `matches` a problem serves it (unequal devices before the identical
accelerators of plain throughput). A new objective is one module with an `Objective`
and one `register` call (or one entry below).
"""

from __future__ import annotations

import importlib

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective

#: name -> "module:attribute" (or an Objective once registered at run time)
_ENTRIES: dict[str, str | Objective] = {
    "throughput-unequal": "jaxplace.objectives.throughput_unequal.objective:UNEQUAL_DEVICES",
    "throughput": "jaxplace.objectives.throughput.objective:THROUGHPUT",
    "latency": "jaxplace.objectives.latency.objective:LATENCY",
    "training": "jaxplace.objectives.training.objective:TRAINING",
}


def _load(name: str) -> Objective:
    entry = _ENTRIES[name]
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = getattr(importlib.import_module(module), attr)
        _ENTRIES[name] = entry
    return entry


def objectives() -> dict[str, Objective]:
    """Every registered objective by name, in resolution order."""
    return {name: _load(name) for name in list(_ENTRIES)}


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
    if objective.name in _ENTRIES and not replace:
        raise JaxplaceError(f"an objective named {objective.name!r} is registered "
                            "already; pass replace=True to replace it", field="name")
    if first:
        items = [(k, v) for k, v in _ENTRIES.items() if k != objective.name]
        _ENTRIES.clear()
        _ENTRIES[objective.name] = objective
        _ENTRIES.update(items)
    else:
        _ENTRIES[objective.name] = objective
    return objective


def unregister(name: str) -> None:
    """Remove an objective (tests that register toys clean up with this)."""
    _ENTRIES.pop(name, None)


def objective_of(problem) -> Objective:
    """The objective serving `problem` (JaxplaceError naming the choices if none)."""
    for name in list(_ENTRIES):
        obj = _load(name)
        if obj.matches(problem):
            return obj
    raise JaxplaceError(f"must be one of {', '.join(problem_objectives())}, got "
                        f"{problem.objective!r}", field="objective")


__all__ = ["objective_of", "objectives", "problem_objectives", "register", "unregister"]
