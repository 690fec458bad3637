"""The training objective: the simulated step time of a pipeline-parallel training
step of a contiguous split of the op order, under a schedule (GPipe, 1F1B, interleaved
1F1B, zero bubble; `model` says what a graph gives), with the per-rank memory under
the schedule as a hard limit (the problem's `capacity`, bytes).

    g = CompGraph(fwd_seconds, edges, param_bytes, tensor_seconds,
                  node_attrs={"bwd_work": ..., "act_bytes": ...},
                  meta={"training": {"schedule": "1f1b", "n_microbatches": 8}})
    r = jp.search(jp.Problem(g, 4, objective="training", capacity=80e9))

Lower bound (closed form, every runnable stage count p <= k, the least over them):
a rank runs m (fwd + bwd) of each of its stages one after another, so the step takes
at least m x the total over the ranks, and m x the heaviest op; microbatch 0 passes
every forward and then every backward (its input-gradient part under zero bubble) in
sequence. The search (`search.search_splits`) is exact over contiguous splits when it
finishes.
"""

from __future__ import annotations

import math
import time

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import Objective, as_partition
from jaxplace.objectives.ladder import ClosedFormCertify
from jaxplace.objectives.training.model import (
    SplitCost,
    runnable,
    settings_of,
    split_cost,
    training_ops,
)
from jaxplace.objectives.training._search import balanced_split, search_splits, valid_cuts
from jaxplace.partition import Partition
from jaxplace.pipeline.schedule_orders import SPLIT_BACKWARD


class Training(ClosedFormCertify, Objective):
    name = problem_objective = "training"
    label = "training step time of a pipeline schedule"
    cost_name = "step time"
    capabilities = frozenset({"capacity", "bandwidth"})
    search_methods = frozenset({"default"})

    def validate(self, problem) -> None:
        if problem.cluster is not None:
            raise JaxplaceError("the training objective runs on identical ranks; give k, "
                                "not a cluster", field="cluster")
        super().validate(problem)
        training_ops(problem.graph)  # the node attributes and settings, checked now

    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None) -> SplitCost:
        from jaxplace.objectives.throughput.cost import check_assignment

        if not contiguous:
            raise JaxplaceError("a training pipeline's stages are contiguous",
                                field="contiguous")
        if devices is not None:
            raise JaxplaceError("the training objective has no device order",
                                field="devices")
        a = check_assignment(problem, as_partition(assignment))
        return split_cost(problem.graph, training_ops(problem.graph), a, problem.k,
                          bandwidth=problem.bandwidth, capacity=problem.capacity_limit)

    def lower_bound(self, problem) -> float:
        ops = training_ops(problem.graph)
        st = ops.settings
        total = float((ops.fwd + ops.bwd).sum())
        heaviest = float((ops.fwd + ops.bwd).max(initial=0.0))
        chain = float(ops.fwd.sum() + (ops.bwd - (ops.weight if st.schedule in SPLIT_BACKWARD
                                                  else 0.0)).sum())
        best = math.inf
        m = st.microbatches(problem.k)
        for p in range(1, min(problem.k, problem.n) + 1):
            if runnable(st, p, problem.k):
                continue
            ranks = p // st.n_virtual
            best = min(best, max(m * total / ranks, m * heaviest, chain))
        return best

    def start_partition(self, problem):
        ops = training_ops(problem.graph)
        cuts = valid_cuts(problem.graph)
        for p in range(min(problem.k, problem.n), 0, -1):
            if runnable(ops.settings, p, problem.k):
                continue
            a = balanced_split(problem.graph, ops, p, cuts)
            if a is not None:
                return a
        return np.zeros(problem.n, np.int64)

    def default_search(self, req):
        from jaxplace.search.result import History, Result

        p = req.problem
        t0 = time.perf_counter()
        limit = req.stop.time_limit
        deadline = math.inf if limit is None else req.start + limit
        out = search_splits(p.graph, training_ops(p.graph), p.k, bandwidth=p.bandwidth,
                            capacity=p.capacity_limit, deadline=deadline)
        best = out.best
        a = best.assignment if best is not None else self.start_partition(p)
        cost = float(best.cost) if best is not None else math.inf
        info = {"found_by": "splits", "splits_simulated": out.simulated}
        if out.complete:
            info |= {"proved_by": "enumeration of contiguous splits",
                     "proof_lower_bound": cost}
        part = Partition(np.arange(p.n), (), a, cost)
        return Result(cost, part, np.zeros(p.n, np.float32), out.simulated,
                      time.perf_counter() - t0, History.empty(), "default",
                      req.lower_bound, info=info)

    def result_dict(self, problem, partition, **kw) -> dict:
        out = super().result_dict(problem, partition, **kw)
        c = self.evaluate_partition(problem, as_partition(partition))
        st = settings_of(problem.graph)
        out["training"] = {"schedule": st.schedule,
                           "n_microbatches": st.microbatches(problem.k),
                           "n_virtual": st.n_virtual, "stage_starts": list(c.starts),
                           "stage_memory": [float(x) for x in c.memory]}
        return out

    def report(self, problem, result, certificate=None) -> list[str]:
        c = self.evaluate_partition(problem, as_partition(result))
        st = settings_of(problem.graph)
        lines = [f"{len(c.starts)} stages, {st.schedule}, "
                 f"{st.microbatches(problem.k)} microbatches"]
        for s, start in enumerate(c.starts):
            lines.append(f"  stage {s}: from op {start}, fwd {c.fwd[s]:.6g}, bwd "
                         f"{c.bwd[s]:.6g}, memory {c.memory[s]:.6g} B, "
                         f"{int(c.in_flight[s])} in flight")
        if c.why:
            lines.append(f"  infeasible: {c.why}")
        return lines


TRAINING = Training()
