"""Throughput on a cluster as an `Objective`: pipeline stages on distinct devices whose
order is searched with the node order (search rows carry d device keys after the n
priorities). Every cluster, uniform or not: the identical-device model serves
throughput problems without one."""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective, as_partition
from jaxplace.objectives.ladder import ClosedFormCertify
from jaxplace.objectives.throughput_unequal.model import check_problem
from jaxplace.objectives.throughput_unequal.reference import decode, evaluate_stages

_SEARCH = ("default", "random", "brkga", "dfs")


class UnequalDevices(ClosedFormCertify, Objective):
    name = "throughput-unequal"
    problem_objective = "throughput"
    label = "throughput on a cluster"
    cost_name = "bottleneck"
    result_format = "jaxplace-hetero-result/1"  # hetero.report.FORMAT
    bound_methods = ("simple",)
    default_bounds = ("simple",)
    #: costs come from the cluster: no CPU blocks, colocation, overflow budget,
    #: capacity or bandwidth of the identical-device model (refused by `validate`)
    capabilities = frozenset()

    def matches(self, problem) -> bool:
        """Throughput with any cluster, a uniform one included: its costs come from
        the cluster (per-device op times, per-link bandwidth and latency, device
        memory), which the identical-device model cannot express (it charges graph
        work and one bandwidth, and sends skipping tensors directly), so a uniform
        cluster costs what a cluster a hair away from uniform costs."""
        return problem.objective == "throughput" and problem.cluster is not None

    @property
    def search_methods(self) -> frozenset[str]:  # type: ignore[override]
        from jaxplace.search.programs import algorithms

        return frozenset(_SEARCH) | {a for a in algorithms() if a != "BRKGA"}

    def validate(self, problem) -> None:
        check_problem(problem)
        super().validate(problem)

    def instance(self, problem):
        from jaxplace.cluster.times import instance_from

        return instance_from(problem.graph, problem.cluster)

    # -- costs ---------------------------------------------------------------------
    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None):
        if not contiguous:
            raise JaxplaceError(f"non-contiguous splits are not available for "
                                f"{self.label}", field="contiguous")
        if devices is None:
            devices = getattr(assignment, "devices", None)
        if devices is None:
            devices = np.arange(problem.cluster.num_devices)
        costs = evaluate_stages(problem.pipeline_instance, assignment, devices)
        if costs.num_stages > problem.k:
            raise JaxplaceError(f"has {costs.num_stages} non-empty stages, more than "
                                f"k={problem.k}", field="assignment")
        return costs

    def evaluate(self, problem, X, *, precision: str = "float32", **settings):
        import jax.numpy as jnp

        from jaxplace.objectives.throughput_unequal.decoder import evaluate

        return evaluate(problem.pipeline_instance, problem.k, X,
                        dtype=jnp.float64 if precision == "float64" else jnp.float32)

    def decode(self, problem, x, **settings):
        """The float64 reference decode of rows of any search width (`search_row`)."""
        from jaxplace.objectives.throughput_unequal.search import search_row

        X = np.asarray(x)
        parts = [decode(problem.pipeline_instance, search_row(problem, r), problem.k)
                 for r in np.atleast_2d(X)]
        return parts[0] if X.ndim == 1 else parts

    def brute_force(self, problem) -> float:
        from jaxplace.objectives.throughput_unequal.brute import optimum

        return float(optimum(problem.pipeline_instance, problem.k))

    def lower_bound(self, problem) -> float:
        from jaxplace.objectives.throughput_unequal.bound import lower_bound

        return float(lower_bound(problem.pipeline_instance, problem.k))

    def result_dict(self, problem, partition, *, method=None, seed=None,
                    lower_bound=None, source=None, timings=None, extra=None,
                    certificate=None, **_ignored) -> dict:
        from jaxplace.objectives.throughput_unequal._report import result_dict

        part = as_partition(partition)
        sc = self.evaluate_partition(problem, part)
        lb = self.lower_bound(problem) if lower_bound is None else float(lower_bound)
        more = {"seed": seed, "timings": timings or {}, **(extra or {})}
        if certificate is not None:
            more["certificate"] = (certificate.to_dict() if hasattr(certificate, "to_dict")
                                   else certificate)
        return result_dict(problem, part, sc, method=method, lower_bound=lb,
                           source=source, extra=more)

    # -- proofs --------------------------------------------------------------------
    def start_partition(self, problem):
        from jaxplace.objectives.throughput_unequal.search import polish, search_row
        from jaxplace.search.baselines import dfs_order, order_to_priorities

        x = search_row(problem, order_to_priorities(dfs_order(problem.graph)))
        x, _ = polish(problem.pipeline_instance, problem.k, x)  # the devices that fit
        return decode(problem.pipeline_instance, x, problem.k)

    def format_cost(self, value: float) -> str:
        return f"{value * 1e3:.6g} ms"

    def report(self, problem, result, certificate=None) -> list[str]:
        from jaxplace.objectives.throughput_unequal._report import report_lines

        part = as_partition(result)
        return report_lines(problem, part, self.evaluate_partition(problem, part))

    # -- search --------------------------------------------------------------------
    def row_width(self, problem):
        return None  # device keys come along with the node priorities

    def device(self, req):
        from jaxplace.objectives.throughput_unequal.decoder import hetero_graph

        return hetero_graph(req.problem.pipeline_instance, req.problem.k)

    def fitness(self, req):
        from jaxplace.objectives.throughput_unequal.decoder import HeteroFitness

        return HeteroFitness(req.spec)

    def first_solution(self, req):
        from jaxplace.objectives.throughput_unequal.search import hetero_first

        return hetero_first(req)

    def finish(self, req, method, x, evaluations, history, interrupted, info=None):
        from jaxplace.objectives.throughput_unequal.search import hetero_result

        return hetero_result(req, method, x, evaluations, history, interrupted, info)

    def default_search(self, req):
        from jaxplace.objectives.throughput_unequal.search import hetero_default

        return hetero_default(req)


UNEQUAL_DEVICES = UnequalDevices()

__all__ = ["UNEQUAL_DEVICES", "UnequalDevices"]
