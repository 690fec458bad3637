"""The objective contract: everything the rest of jaxplace asks about a problem.

A `Problem` names its objective ("throughput", "latency", or one registered later);
`jaxplace.objectives.objective_of(problem)` resolves it to one `Objective` object,
which answers validation, the float64 reference cost of a partition, the batched cost
of priority rows, decoding, the objective's own valid lower bound, certificates, the
exact method when one fits, the pieces a compiled search needs, and which search
methods and bounds apply. Code outside an objective's package asks the object instead
of branching on the objective's name, so a combination the objective does not support
is a `JaxplaceError` naming both, never a number computed under another objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError


@dataclass(frozen=True)
class ExactAnswer:
    """What an objective's exact method returns to the planner.

    Attributes:
        method: the exact method's name (e.g. "ideals").
        cost: the optimum (inf: no feasible partition).
        assignment: (n,) int64 an optimal partition, or None.
        lower_bound: a proven lower bound (equals `cost` when `proven`).
        proven: the method finished and `cost` is the optimum.
        time: seconds spent.
        detail: a short line for reports ("164 ideals").
    """

    method: str
    cost: float
    assignment: np.ndarray | None
    lower_bound: float
    proven: bool
    time: float
    detail: str = ""


class Objective:
    """The base of every objective; subclasses override what they support.

    Attributes:
        name: the registry key (e.g. "throughput-unequal").
        problem_objective: the `Problem.objective` value it serves.
        label: a phrase for messages ("throughput on unequal devices").
        search_methods: names of the search methods that apply (None: all).
        bound_methods: names of the certificate bounds that apply, in ladder order.
        default_bounds: the bounds `certify` runs when none are named.
    """

    name: str = "objective"
    problem_objective: str = "objective"
    label: str = "objective"
    search_methods: frozenset[str] | None = None
    bound_methods: tuple[str, ...] = ()
    default_bounds: tuple[str, ...] = ()

    # -- which problems ------------------------------------------------------------
    def matches(self, problem) -> bool:
        """This objective serves `problem` (its objective name, and its cluster)."""
        return problem.objective == self.problem_objective

    def validate(self, problem) -> None:
        """Raise JaxplaceError when `problem`'s fields do not fit this objective."""

    # -- costs ---------------------------------------------------------------------
    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None):
        """Reference (float64) costs of a partition; the result has `.cost`."""
        raise self.unsupported("evaluate_partition")

    def evaluate(self, problem, X, **settings) -> np.ndarray:
        """(P,) float64 costs of the priority rows X (the compiled decoder)."""
        raise self.unsupported("evaluate")

    def decode(self, problem, x, **settings):
        """The partition (or a list for (P, n)) that priorities x decode to."""
        raise self.unsupported("decode")

    def lower_bound(self, problem) -> float:
        """A valid lower bound on the optimum, in closed form (cheap)."""
        raise self.unsupported("lower_bound")

    def result_dict(self, problem, partition, **fields) -> dict:
        """The JSON-ready result of a partition (what `jaxplace.save_result` writes);
        `fields`: method, seed, lower_bound, source, timings, extra, certificate."""
        raise self.unsupported("result_dict")

    # -- proofs --------------------------------------------------------------------
    def certify(self, problem, partition=None, methods=None, **settings):
        """A `jaxplace.bounds.Certificate` for `partition` (see `bounds.certify`)."""
        raise self.unsupported("certify")

    def exact_fits(self, problem) -> str | None:
        """A one-line reason when an exact method is expected to finish quickly on
        `problem` (the planner then runs `exact` first), else None."""
        return None

    def exact(self, problem, *, time_limit: float, upper_bound: float | None = None,
              partition=None) -> ExactAnswer | None:
        """The exact method's answer, or None when the objective has none."""
        return None

    # -- search --------------------------------------------------------------------
    def check_search_method(self, method: str) -> None:
        """Raise JaxplaceError unless search `method` applies to this objective."""
        allowed = self.search_methods
        if allowed is not None and method not in allowed:
            own = sorted(m for m in allowed if m == m.lower())  # evosax names are not
            more = len(allowed) - len(own)
            raise JaxplaceError(
                f"method {method!r} does not apply to {self.label} (objective "
                f"{self.name!r}); choose one of {', '.join(own)}"
                + (f" or one of the {more} evosax algorithms" if more else ""),
                field="method")

    def check_bound_methods(self, methods) -> tuple[str, ...]:
        """The bound names, checked against `bound_methods`, in ladder order."""
        names = [m.strip() for m in (methods.split(",") if isinstance(methods, str)
                                     else methods) if m.strip()]
        bad = [m for m in names if m not in self.bound_methods]
        if bad:
            raise JaxplaceError(
                f"bound {bad[0]!r} does not apply to {self.label} (objective "
                f"{self.name!r}); choose from {', '.join(self.bound_methods)}",
                field="methods")
        return tuple(m for m in self.bound_methods if m in names)

    def check_resources(self, problem) -> None:
        """Raise JaxplaceError (one line, before any work) when the machine cannot
        hold a search of `problem`."""

    def row_width(self, problem) -> int | None:
        """Columns of a search row the driver keeps (None: all, e.g. device keys)."""
        return problem.n

    def device(self, req) -> tuple[Any, Any]:
        """(spec, device graph) of the compiled fitness."""
        raise self.unsupported("compiled search")

    def fitness(self, req):
        """The hashable `fitness(data, X)` of compiled programs."""
        raise self.unsupported("compiled search")

    def window(self, req) -> int | None:
        """A static block window of the fitness (None: none)."""
        return None

    def first_solution(self, req):
        """A `Result` found before anything compiles, or None."""
        return None

    def finish(self, req, method: str, x, evaluations: int, history, interrupted: bool,
               info: dict | None = None):
        """The `Result` of search row x, decoded by the float64 reference."""
        raise self.unsupported("search")

    def default_search(self, req):
        """The strongest search of this objective (the planner's search phase)."""
        raise self.unsupported("search")

    # -- errors --------------------------------------------------------------------
    def unsupported(self, what: str) -> JaxplaceError:
        return JaxplaceError(f"{what} is not available for {self.label} (objective "
                             f"{self.name!r})", field="objective")


__all__ = ["ExactAnswer", "Objective"]
