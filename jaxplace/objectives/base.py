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

import abc
import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError

#: Partitions `Objective.brute_force` enumerates at most.
BRUTE_FORCE_MAX = 20_000

#: Decoder evaluations of an objective's default search that keeps the generic
#: `Objective.default_budget` (about 3x the paper's brkga-10000).
DEFAULT_SEARCH_BUDGET = 30_000


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


#: Problem options and features an objective may model (`Objective.capabilities`).
#: `Objective.validate` refuses a problem that uses one the objective lacks, so an
#: option is honoured or refused, never dropped.
OPTIONS = {
    "cpus": "CPU blocks (cpus > 0)",
    "cpu_only_ops": "ops not supported on an accelerator (supported_on_accel false)",
    "colocation": "colocation classes (color_class: ops that share a device)",
    "backward": "backward ops (is_backward: edges that do not order the stages)",
    "memory": "the overflow budget (memory)",
    "capacity": "a hard per-block capacity (capacity)",
    "bandwidth": "the inter-block bandwidth (bandwidth other than 1)",
}
#: Further capabilities code outside the objective packages asks about.
FEATURES = {
    "identical_devices": "costs are the MTPP model on identical accelerators (the fast "
                         "decoder, the float64 reference, slicing and the DP apply)",
    "noncontiguous": "non-contiguous splits (virtual pieces)",
    "multilevel": "the multilevel search",
    "search_many": "jaxplace.search_many",
    "bound_registry": "a custom certificate bound registry",
    "export_stages": "per-stage ONNX export of its results",
}


class Objective(abc.ABC):
    """The base of every objective: the abstract methods are the contract's core, the
    others have defaults built on them (or refuse with `unsupported`).

    A new objective implements `evaluate_partition`, `lower_bound`, `start_partition`
    and `default_search`; it writes results and reports through the defaults, mixes in
    `objectives.ladder.ClosedFormCertify` to certify with its closed-form bound, and
    `jaxplace.testing.check_objective` checks it against brute force.

    Attributes:
        name: the registry key (e.g. "throughput-unequal").
        problem_objective: the `Problem.objective` value it serves.
        label: a phrase for messages ("throughput on unequal devices").
        capabilities: the `OPTIONS` and `FEATURES` it models (`supports`).
        search_methods: names of the search methods that apply (None: all).
        bound_methods: names of the certificate bounds that apply, in ladder order.
        default_bounds: the bounds `certify` runs when none are named.
        cost_name: what the cost is called in reports ("bottleneck", "makespan").
        result_format: the `format` of the result JSON its `result_dict` writes.
    """

    name: str = "objective"
    problem_objective: str = "objective"
    label: str = "objective"
    capabilities: frozenset[str] = frozenset()
    search_methods: frozenset[str] | None = frozenset({"default"})
    bound_methods: tuple[str, ...] = ("simple",)
    default_bounds: tuple[str, ...] = ("simple",)
    cost_name: str = "cost"
    result_format: str = "jaxplace-result/1"

    # -- which problems ------------------------------------------------------------
    def matches(self, problem) -> bool:
        """This objective serves `problem` (its objective name, and its cluster)."""
        return problem.objective == self.problem_objective

    def supports(self, capability: str) -> bool:
        """Whether this objective models `capability` (a key of `OPTIONS` or
        `FEATURES`); ask the resolved objective, never compare names."""
        if capability not in OPTIONS and capability not in FEATURES:
            raise ValueError(f"unknown capability {capability!r}")
        return capability in self.capabilities

    def require(self, capability: str, field: str = "objective") -> None:
        """Raise JaxplaceError naming this objective unless it `supports` capability."""
        if not self.supports(capability):
            what = OPTIONS.get(capability) or FEATURES[capability]
            raise JaxplaceError(f"{what} does not apply to {self.label} (objective "
                                f"{self.name!r})", field=field)

    def validate(self, problem) -> None:
        """Raise JaxplaceError when `problem`'s fields do not fit this objective: by
        default, any problem option (`OPTIONS`) it uses that the objective lacks."""
        for option, field in problem_options(problem):
            self.require(option, field)

    def instance(self, problem):
        """The objective's precomputed model of `problem` (`Problem.instance` caches
        it; None: none)."""
        return None

    # -- costs ---------------------------------------------------------------------
    @abc.abstractmethod
    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None):
        """Reference (float64) costs of a partition; the result has `.cost` (inf:
        infeasible) and `.assignment`. A malformed partition is a JaxplaceError."""

    def evaluate(self, problem, X, **settings) -> np.ndarray:
        """(P,) float64 costs of the priority rows X (the compiled decoder)."""
        raise self.unsupported("evaluate")

    def decode(self, problem, x, **settings):
        """The partition (or a list for (P, n)) that priorities x decode to."""
        raise self.unsupported("decode")

    def default_budget(self, problem, time_limit: float | None = None,
                       polish: bool | None = None) -> int:
        """Decoder evaluations of this objective's default search when the caller
        gives none: 30,000 (about 3x the paper's brkga-10000), or max(3000, 600 n)
        when smaller (the order space of a tiny graph is small). `time_limit`: the
        user's seconds, if any (an objective may spend more evaluations then);
        `polish`: the caller's polish option (None: the objective's own rule;
        objectives without a polish ignore it)."""
        return min(DEFAULT_SEARCH_BUDGET, max(3000, 600 * problem.n))

    @abc.abstractmethod
    def lower_bound(self, problem) -> float:
        """A valid lower bound on the optimum, in closed form (cheap)."""

    def brute_force(self, problem) -> float:
        """The optimum by enumeration on a tiny problem (the oracle of
        `jaxplace.testing.check_objective`; inf: nothing feasible). The default tries
        every block per op through `evaluate_partition`: override it where a cost
        depends on more than the assignment (an op order, stage devices)."""
        B = problem.num_blocks
        if B ** problem.n > BRUTE_FORCE_MAX:
            raise JaxplaceError(f"brute force tries at most {BRUTE_FORCE_MAX:,} "
                                f"partitions, this problem has {B}^{problem.n}",
                                field="graph")
        best = math.inf
        for a in itertools.product(range(B), repeat=problem.n):
            try:
                c = float(self.evaluate_partition(problem, np.array(a, np.int64)).cost)
            except JaxplaceError:
                continue  # not a partition of this objective (a cycle, a split class)
            best = min(best, c)
        return best

    # -- results -------------------------------------------------------------------
    def result_dict(self, problem, partition, *, method=None, seed=None,
                    lower_bound=None, source=None, timings=None, extra=None,
                    certificate=None, **_ignored) -> dict:
        """The JSON-ready result of `partition` (a search `Result`, a `Partition` or
        a block per node): what `jaxplace.save_result` writes. The default: the
        assignment, its confirmed cost and the bound."""
        part = as_partition(partition)
        costs = self.evaluate_partition(problem, part)
        a = np.asarray(getattr(costs, "assignment", getattr(part, "assignment", part)))
        lb = self.lower_bound(problem) if lower_bound is None else float(lower_bound)
        out = {"format": "jaxplace-result/1", "objective": self.name, "source": source,
               "num_nodes": problem.n, "k": problem.k, "method": method, "seed": seed,
               "bottleneck": float(costs.cost), "lower_bound": lb,
               "assignment": [int(b) for b in a],
               "node_ids": list(problem.graph.node_ids), "timings": timings or {}}
        if certificate is not None:
            out["certificate"] = (certificate.to_dict() if hasattr(certificate, "to_dict")
                                  else certificate)
        out.update(extra or {})
        return out

    def format_cost(self, value: float) -> str:
        """A cost or bound as reports print it, in the objective's unit."""
        return f"{value:.6g}"

    def report(self, problem, result, certificate=None) -> list[str]:
        """Text lines the CLI prints for a found partition (a `Result`, `Partition`
        or assignment) above its cost / bound line: by default the ops per block."""
        part = as_partition(result)
        a = np.asarray(getattr(self.evaluate_partition(problem, part), "assignment",
                               getattr(part, "assignment", part)))
        blocks, counts = np.unique(a, return_counts=True)
        return [f"{len(blocks)} blocks: " + ", ".join(
            f"{int(b)}: {int(c)} ops" for b, c in zip(blocks, counts, strict=True))]

    # -- proofs --------------------------------------------------------------------
    @abc.abstractmethod
    def start_partition(self, problem):
        """A first partition without any search (what `certify` bounds when it is
        given none); feasible when one is easy to find."""

    def certify(self, problem, partition=None, methods=None, **settings):
        """A `jaxplace.bounds.Certificate` for `partition` (None: `start_partition`)
        under `methods` (None: `default_bounds`). Mix in
        `jaxplace.objectives.ladder.ClosedFormCertify` to certify with `lower_bound`."""
        raise self.unsupported("certify")

    def exact_fits(self, problem, deadline: float | None = None) -> str | None:
        """A one-line reason when an exact method is expected to finish quickly on
        `problem` (the planner then runs `exact` first), else None. `deadline` (a
        perf_counter time, given only under a user's time limit): answer None rather
        than spend past it deciding."""
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
        """The bound names, checked against `bound_methods`, in ladder order (none
        named is a JaxplaceError: a certificate of no bound proves nothing)."""
        if not isinstance(methods, str | list | tuple | frozenset | set):
            raise JaxplaceError(f"expected bound names, got {type(methods).__name__}",
                                field="methods")
        names = [m.strip() for m in (methods.split(",") if isinstance(methods, str)
                                     else methods) if isinstance(m, str) and m.strip()]
        if not names:
            raise JaxplaceError(f"no bound named; choose from "
                                f"{', '.join(self.bound_methods)}", field="methods")
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
        return None  # an objective without a memory model has nothing to check

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

    @abc.abstractmethod
    def default_search(self, req):
        """The strongest search of this objective (the planner's search phase): a
        `jaxplace.search.Result` whose cost `evaluate_partition` confirms."""

    # -- errors --------------------------------------------------------------------
    def unsupported(self, what: str) -> JaxplaceError:
        return JaxplaceError(f"{what} is not available for {self.label} (objective "
                             f"{self.name!r})", field="objective")


def as_partition(partition):
    """The partition of a search `Result`, else `partition` itself (an ndarray's
    `partition` attribute is numpy's sort method, not a split)."""
    if isinstance(partition, np.ndarray):
        return partition
    inner = getattr(partition, "partition", None)
    return partition if inner is None or callable(inner) else inner


def problem_options(problem) -> list[tuple[str, str]]:
    """(option, field) for every `OPTIONS` entry `problem` uses."""
    out = []
    if problem.cpus:
        out.append(("cpus", "cpus"))
    if not bool(problem.supported.all()):
        out.append(("cpu_only_ops", "supported_on_accel"))
    units = problem.graph.units
    if units.num_units < problem.n:
        out.append(("colocation", "color_class"))
    elif not units.trivial:
        out.append(("backward", "is_backward"))
    if problem.memory is not None:
        out.append(("memory", "memory"))
    if problem.capacity is not None:
        out.append(("capacity", "capacity"))
    if problem.bandwidth != 1.0:
        out.append(("bandwidth", "bandwidth"))
    return out


__all__ = ["FEATURES", "OPTIONS", "ExactAnswer", "Objective", "as_partition",
           "problem_options"]
