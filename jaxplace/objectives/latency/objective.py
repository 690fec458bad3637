"""The latency objective as an `Objective`: the makespan of one inference on a
cluster (MOIRAI's model, `jaxplace.objectives.latency.instance`).

A partition is the device of every op; its cost is the makespan of the earliest-start
schedule of the ops in a topological order (the partition's own order when it is a
`Partition`, else the graph's) on those devices, or, for a partition that carries its
schedule (a search result's, a reloaded result's), that schedule's event order
replayed. Bounds: the closed-form bound
(critical path, load), MOIRAI's LP relaxation and its MILP (HiGHS).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective, as_partition
from jaxplace.objectives.ladder import certify_with
from jaxplace.objectives.latency.instance import Schedule

_SEARCH = ("default", "random", "brkga", "dfs")


@dataclass(frozen=True)
class ScheduleCost:
    """The reference cost of a device assignment: its schedule and makespan."""

    assignment: np.ndarray  # (n,) int64 device of every op
    schedule: object  # jaxplace.objectives.latency.instance.Schedule

    @property
    def makespan(self) -> float:
        return float(self.schedule.makespan)

    @property
    def cost(self) -> float:
        return self.makespan

    @property
    def bottleneck(self) -> float:  # the one number every objective reports
        return self.makespan

    @property
    def feasible(self) -> bool:
        return bool(np.isfinite(self.makespan))


class Latency(Objective):
    name = "latency"
    problem_objective = "latency"
    label = "latency (makespan of one inference)"
    cost_name = "makespan"
    result_format = "jaxplace-latency-result/1"  # latency.result.FORMAT
    bound_methods = ("simple", "milp-lp", "milp")
    default_bounds = ("simple", "milp")
    #: the cluster gives every cost; a training graph's ops are scheduled as a DAG.
    #: Colocation classes, CPU blocks, CPU-only ops and the identical-device options
    #: (memory, capacity, bandwidth) are not modelled and `validate` refuses them.
    capabilities = frozenset({"backward"})

    @property
    def search_methods(self) -> frozenset[str]:  # type: ignore[override]
        from jaxplace.search.programs import algorithms

        return frozenset(_SEARCH) | {a for a in algorithms() if a != "BRKGA"}

    def validate(self, problem) -> None:
        c = problem.cluster
        if c is None:
            raise JaxplaceError("the latency objective needs a cluster", field="cluster")
        if problem.k != c.num_devices:
            raise JaxplaceError(f"must equal the cluster's {c.num_devices} devices for the "
                                f"latency objective, got {problem.k}", field="k")
        if problem.cpus:
            raise JaxplaceError("CPU blocks do not apply to the latency objective",
                                field="cpus")
        super().validate(problem)
        problem.instance  # noqa: B018 (builds the instance now: a graph too big fails here)

    def instance(self, problem):
        from jaxplace.cluster.times import instance_from

        return instance_from(problem.graph, problem.cluster)

    # -- costs ---------------------------------------------------------------------
    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None):
        from jaxplace.objectives.latency.reference import replay_schedule, schedule_order

        inst = problem.latency
        order = getattr(assignment, "order", None)
        a = np.asarray(getattr(assignment, "assignment", assignment))
        if a.shape != (problem.n,) or a.dtype.kind not in "iu":
            raise JaxplaceError(f"must be ({problem.n},) integer device indices",
                                field="assignment")
        if problem.n and (a.min() < 0 or a.max() >= inst.num_devices):
            raise JaxplaceError(f"device indices must be in 0..{inst.num_devices - 1}",
                                field="assignment")
        a = a.astype(np.int64)
        sched = getattr(assignment, "schedule", None)
        if isinstance(sched, Schedule) and np.array_equal(sched.device, a):
            replayed = replay_schedule(inst, a, sched)  # a search's or a saved schedule
            if replayed is not None:
                return ScheduleCost(a, replayed)
        if order is None or len(order) != problem.n:
            order = problem.graph.topo_order
        return ScheduleCost(a, schedule_order(inst, order, device=a))

    def loaded_partition(self, problem, data: dict, assignment, source: str):
        """The partition a saved result stands for: its assignment with the saved
        schedule's event order (`latency.result.saved_partition`), so that it reloads
        at the saved makespan."""
        from jaxplace.objectives.latency._result import saved_partition

        return saved_partition(problem, data, assignment, source)

    def evaluate(self, problem, X, *, precision: str = "float32", **settings) -> np.ndarray:
        """(P,) makespans of the list schedules of the rows (the batched JAX list
        scheduler; `precision="reference"`: the float64 NumPy oracle)."""
        X = priority_rows(problem, X)
        if not len(X):
            return np.zeros(0)
        if precision == "reference":
            from jaxplace.objectives.latency.reference import makespans

            return makespans(problem.latency, X)
        import jax.numpy as jnp

        from jaxplace.objectives.latency.decoder import evaluate

        return np.asarray(evaluate(problem.latency, X, dtype=jnp.float64
                                   if precision == "float64" else jnp.float32), np.float64)

    def decode(self, problem, x, **settings):
        from jaxplace.objectives.latency.reference import list_schedule
        from jaxplace.objectives.latency.search import schedule_partition

        X = np.asarray(x)
        parts = [schedule_partition(problem.graph, r, list_schedule(problem.latency, r))
                 for r in priority_rows(problem, X)]
        return parts[0] if X.ndim == 1 else parts

    def brute_force(self, problem) -> float:
        from jaxplace.objectives.latency.brute import brute_force

        return float(brute_force(problem.latency)[0])

    def lower_bound(self, problem) -> float:
        from jaxplace.objectives.latency.reference import lower_bound

        return float(lower_bound(problem.latency))

    def result_dict(self, problem, partition, **fields) -> dict:
        """`latency_result_dict`; a schedule that fits no device's memory (ops left
        unplaced) is refused rather than written with device -1."""
        from jaxplace.objectives.latency._result import latency_result_dict, schedule_of

        schedule = schedule_of(problem, partition)
        if not np.isfinite(schedule.makespan) or np.any(np.asarray(schedule.device) < 0):
            raise JaxplaceError("no schedule of this partition fits the devices' memory: "
                                "nothing to save", field="partition")
        return latency_result_dict(problem, schedule, **fields)

    def format_cost(self, value: float) -> str:
        return f"{value * 1e3:.6g} ms"

    def report(self, problem, result, certificate=None) -> list[str]:
        from jaxplace.objectives.latency._result import report_lines

        return report_lines(problem, result, certificate)

    # -- proofs --------------------------------------------------------------------
    def start_partition(self, problem):
        from jaxplace.objectives.latency.search import latency_seeds

        return self.decode(problem, latency_seeds(problem)[0])

    def certify(self, problem, partition=None, methods=None, **settings):
        return certify_with(self, problem, partition, methods,
                            {"simple": self._simple, "milp-lp": self._milp_lp,
                             "milp": self._milp}, **settings)

    def _simple(self, problem, ctx, partition):
        from jaxplace.bounds.base import MethodResult
        from jaxplace.objectives.latency.milp import latency_lower_bound

        b = max(self.lower_bound(problem), latency_lower_bound(problem.latency))
        return MethodResult("simple", b, "closed form", 0.0, kind="closed-form")

    def _milp_lp(self, problem, ctx, partition):
        from jaxplace.bounds.base import MethodResult
        from jaxplace.objectives.latency.milp import moirai_lp_bound

        b = moirai_lp_bound(problem.latency, ctx.time_limit, ctx.threads)
        return MethodResult("milp-lp", b, "Optimal", 0.0, kind="lp")

    def _milp(self, problem, ctx, partition):
        from jaxplace.bounds.base import MethodResult
        from jaxplace.objectives.latency.milp import solve_moirai

        warm = self.evaluate_partition(problem, partition).schedule
        if not np.isfinite(warm.makespan):
            warm = None
        res = solve_moirai(problem.latency, ctx.time_limit, warm, ctx.threads,
                           mip_rel_gap=ctx.mip_rel_gap)
        return MethodResult("milp", res.bound, res.status, res.time, gap=res.gap,
                            kind="mip")

    # -- search --------------------------------------------------------------------
    def device(self, req):
        from jaxplace.objectives.latency.decoder import latency_graph

        return latency_graph(req.problem.latency)

    def fitness(self, req):
        from jaxplace.objectives.latency.decoder import LatencyFitness

        return LatencyFitness(req.spec)

    def first_solution(self, req):
        from jaxplace.objectives.latency.search import latency_seeds
        from jaxplace.search.result import History

        return self.finish(req, "eft", latency_seeds(req.problem)[0], 1, History.empty(),
                           False)

    def finish(self, req, method, x, evaluations, history, interrupted, info=None):
        from jaxplace.objectives.latency.search import latency_result

        return latency_result(req, method, x, evaluations, history, interrupted, info)

    def default_search(self, req):
        from jaxplace.objectives.latency.search import latency_default

        return latency_default(req)


def priority_rows(problem, X) -> np.ndarray:
    """X as (P, n) float rows: one (n,) row or P of them, else a JaxplaceError."""
    X = np.asarray(X)
    if X.ndim not in (1, 2) or X.shape[-1] != problem.n or X.dtype.kind not in "biuf":
        raise JaxplaceError(f"must be ({problem.n},) or (P, {problem.n}) priorities, got "
                            f"shape {X.shape}", field="X")
    return np.atleast_2d(X).astype(np.float64)


LATENCY = Latency()

__all__ = ["LATENCY", "Latency", "ScheduleCost"]
