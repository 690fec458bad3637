"""Throughput on identical accelerators: the pipeline bottleneck of Archer et al. and
Tarnawski et al. (CPU blocks, memory overflow, hard capacity and colocation included).

The fast special case of jaxplace: the batched Kahn + SliceGraph decoder scores
candidates, the float64 reference (`objectives.throughput.reference`) decodes results, the DP over
ideals is the exact method on graphs with few ideals, and the whole certificate ladder
(`jaxplace.bounds.registry.BOUNDS`) applies.
"""

from __future__ import annotations

import math
import time

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.base import FEATURES, OPTIONS, ExactAnswer, Objective, as_partition
from jaxplace.objectives.throughput.reference import decode_reference, kahn

#: Graphs with at most this many ideals get the DP over ideals first (it proves the
#: optimum in well under a second at a few thousand ideals, seconds at tens of
#: thousands); the same limit picks the DP as the certificate (`choose_methods`).
EXACT_MAX_IDEALS = 60_000


#: Default search budget on graphs up to SEARCH_BUDGET / BUDGET_PER_NODE ops, then
#: BUDGET_PER_NODE per op up to the generic 30,000. Measured on the 30-graph
#: regal-time suite (50-200 ops, k = 4/8/16): 6,000 evaluations with the k <= 4 MIP
#: polish cost 0.9635x the C++ brkga-10000 (30,000: 0.9572x) in about a quarter of the
#: search's wall; without the polish 0.9782x.
SEARCH_BUDGET = 6_000
BUDGET_PER_NODE = 30
#: Where the default MIP polish applies (`polish.polish_applies`: k <= 4), this share
#: of the budget. Why: there the polish's MIP replaces most of the search's partition
#: (it moved 40-70% of the nodes on the regal-time suite), so what a longer search
#: adds is mostly lost: on that suite 3,000 evaluations then the polish cost what
#: 6,000 did (0.9642x against 0.9650x C++ brkga-10000) for 15% less CPU time in
#: search_many's warm pass; 2,000 lost 0.2%.
POLISHED_BUDGET_SHARE = 0.5
#: Above this many stages, MANY_STAGES_FACTOR x the budget (still at most the generic
#: 30,000). Why: measured per k on graphs apart from the 30-graph suite (regal_set seeds
#: 100-102 and barabasi_albert graphs of 150-400 ops), doubling the budget bought 0.8% /
#: 0.25% of cost at k = 16, but 0.06% / 0.45% at k = 8 and nothing at k <= 4 (the
#: polish's MIP decides there).
MANY_STAGES_K = 8
MANY_STAGES_FACTOR = 2


class Throughput(Objective):
    name = "throughput"
    problem_objective = "throughput"
    label = "throughput on identical accelerators"
    cost_name = "bottleneck"
    capabilities = frozenset(OPTIONS) | frozenset(FEATURES)
    search_methods = None

    def matches(self, problem) -> bool:
        # a cluster, uniform or not, goes to the unequal-devices model (throughput_unequal/)
        return problem.objective == "throughput" and problem.cluster is None

    @property
    def bound_methods(self) -> tuple[str, ...]:  # type: ignore[override]
        from jaxplace.bounds.registry import METHODS

        return tuple(METHODS)

    @property
    def default_bounds(self) -> tuple[str, ...]:  # type: ignore[override]
        from jaxplace.bounds.registry import DEFAULT_METHODS

        return tuple(DEFAULT_METHODS)

    # -- costs ---------------------------------------------------------------------
    def evaluate_partition(self, problem, assignment, *, contiguous: bool = True,
                           devices=None):
        from jaxplace.objectives.throughput.cost import partition_costs

        return partition_costs(problem, assignment, contiguous=contiguous)

    def evaluate(self, problem, X, **settings) -> np.ndarray:
        from jaxplace.decoder.api import evaluate

        return evaluate(problem, X, **settings)

    def decode(self, problem, x, *, precision: str = "float32", **settings):
        if precision == "reference":  # the float64 NumPy decoder: nothing compiles
            X = np.asarray(x, np.float32)
            parts = [decode_reference(problem, r[:problem.n]) for r in np.atleast_2d(X)]
            return parts[0] if X.ndim == 1 else parts
        from jaxplace.decoder.api import decode

        return decode(problem, x, precision=precision, **settings)

    def lower_bound(self, problem) -> float:
        from jaxplace.objectives.throughput.cost import throughput_lower_bound

        return throughput_lower_bound(problem)

    def result_dict(self, problem, partition, **fields) -> dict:
        from jaxplace.formats.results import result_dict

        # a Result of the "noncontiguous" method carries its virtual pieces
        fields["schedule"] = fields.get("schedule") or getattr(partition, "schedule", None)
        return result_dict(problem, as_partition(partition), **fields)

    def report(self, problem, result, certificate=None) -> list[str]:
        """The stage table; a Result of the "noncontiguous" method carries its
        virtual pieces: the table then shows them and the pipeline they run in."""
        from jaxplace.exact.pieces import pipeline_cost
        from jaxplace.objectives.throughput.report import throughput_report

        part = as_partition(result)
        a, pieces = getattr(part, "assignment", part), getattr(result, "schedule", None)
        cost = (self.evaluate_partition(problem, a) if pieces is None
                else pipeline_cost(problem, a, pieces))
        return throughput_report(problem, cost, pieces)

    # -- proofs --------------------------------------------------------------------
    def start_partition(self, problem):
        from jaxplace.search.baselines import dfs_order, order_to_priorities

        return decode_reference(problem, order_to_priorities(dfs_order(problem.graph)))

    def certify(self, problem, partition=None, methods=None, **settings):
        from jaxplace.bounds.certificate import certify_ladder

        # the default ladder stops at a proof; methods the caller named all run
        settings.setdefault("every_rung", methods is not None)
        methods = self.default_bounds if methods is None else methods
        return certify_ladder(problem, partition, methods, **settings)

    def exact_fits(self, problem, deadline: float | None = None) -> str | None:
        from jaxplace.exact.dp import count_problem_ideals

        count = count_problem_ideals(problem, EXACT_MAX_IDEALS, deadline=deadline)
        return None if count is None else f"{count:,} ideals: the DP over ideals"

    def exact(self, problem, *, time_limit: float, upper_bound: float | None = None,
              partition=None) -> ExactAnswer | None:
        from jaxplace.exact.dp import solve_ideals

        t0 = time.perf_counter()
        try:
            res = solve_ideals(problem, upper_bound, partition=partition, search=False,
                               max_ideals=EXACT_MAX_IDEALS, time_limit=time_limit)
        except JaxplaceError as exc:
            if exc.field != "max_ideals":
                raise
            return None
        detail = f"{res.num_ideals:,} ideals"
        dt = time.perf_counter() - t0
        if res.status == "optimal":
            return ExactAnswer("ideals", res.cost, res.assignment, res.cost, True, dt,
                               detail)
        if res.status == "infeasible":
            return ExactAnswer("ideals", math.inf, None, math.inf, True, dt, detail)
        if res.status == "above upper bound":  # the known partition is optimal
            return ExactAnswer("ideals", math.inf, None, res.upper_bound, True, dt, detail)
        lb = res.lower_bound if res.status == "gap" else 0.0
        return ExactAnswer("ideals", res.cost, res.assignment, lb, False, dt, detail)

    # -- search --------------------------------------------------------------------
    def check_resources(self, problem) -> None:
        if problem.n >= FAST_SLICING_MIN_NODES:
            from jaxplace.multilevel import check_memory

            check_memory(problem)

    def device(self, req):
        from jaxplace.decoder.layout import device_graph, graph_structure, search_spec
        from jaxplace.search.request import SPEC_STEPS

        st = graph_structure(req.problem.graph)
        spec = search_spec(req.problem, st, SPEC_STEPS) if SPEC_STEPS else None
        return device_graph(req.problem, spec, structure=st)

    def fitness(self, req):
        from jaxplace.search.programs import DecodeFitness

        return DecodeFitness(req.spec, req.window)

    def window(self, req) -> int | None:
        # Blocks of more units than any block of a partition costing at most 1.05x the
        # first solution can hold are never scored exactly: candidates needing them
        # are worse than the first solution and get an achievable over-estimate. The
        # window is the padded class's own, so graphs of one class share programs.
        first = req.first_solution
        if not req.windowed or first is None or not np.isfinite(first.cost):
            return None
        from jaxplace.decoder.window import block_bounds, search_window

        return search_window(block_bounds(req.problem), req.spec, first.cost)

    def first_solution(self, req):
        from jaxplace.objectives.throughput.search import (
            FIRST_SOLUTION_MAX_NODES,
            balanced_cut,
        )
        from jaxplace.search.baselines import dfs_order, order_to_priorities
        from jaxplace.search.result import History, Result

        order = dfs_order(req.problem.graph)
        x = order_to_priorities(order)
        if req.problem.n <= FIRST_SOLUTION_MAX_NODES or _fast_slicing(req.problem):
            return self.finish(req, "dfs", x, 1, History.empty(), False)
        part = balanced_cut(req.problem, order)
        if part is None:
            return None
        return Result(cost=float(part.cost), partition=part, priorities=x, evaluations=1,
                      wall_time=time.perf_counter() - req.start, history=History.empty(),
                      method="dfs-balanced", lower_bound=req.lower_bound)

    def finish(self, req, method: str, x, evaluations: int, history, interrupted: bool,
               info: dict | None = None):
        from jaxplace.search.result import Result

        x = np.asarray(x, np.float32)[:req.problem.n]
        if _fast_slicing(req.problem):  # the pruned slicing DP: same optimum, O(n) memory
            from jaxplace.multilevel import slice_units

            part = slice_units(req.problem, kahn(req.problem.graph, x))
        else:
            part = decode_reference(req.problem, x)
        return Result(cost=float(part.cost), partition=part, priorities=x,
                      evaluations=int(evaluations),
                      wall_time=time.perf_counter() - req.start, history=history,
                      method=method, lower_bound=req.lower_bound,
                      interrupted=interrupted, info=info or {})

    def default_budget(self, problem, time_limit: float | None = None,
                       polish: bool | None = None) -> int:
        """SEARCH_BUDGET evaluations on graphs of up to 200 ops, BUDGET_PER_NODE per op
        above, MANY_STAGES_FACTOR times that at k > MANY_STAGES_K, never more than the
        generic rule (30,000; max(3000, 600 n) on tiny graphs: big graphs keep the
        generic budget); the POLISHED_BUDGET_SHARE of that where the default MIP
        polish follows (k <= 4, `polish` not False; a polish forced on elsewhere keeps
        the budget). Under a user's time limit the generic budget: the user gave the
        seconds, the search spends them (it still stops earlier on stagnation)."""
        from jaxplace.objectives.throughput.polish import polish_applies

        n = problem.n
        if time_limit is not None:
            return super().default_budget(problem, time_limit)
        budget = max(SEARCH_BUDGET, BUDGET_PER_NODE * n)
        if problem.k > MANY_STAGES_K:
            budget *= MANY_STAGES_FACTOR
        budget = min(super().default_budget(problem), budget)
        if polish is not False and polish_applies(problem):
            return int(budget * POLISHED_BUDGET_SHARE)
        return budget

    def default_search(self, req):
        """Graphs of at least `MULTILEVEL_MIN_NODES` ops without CPU blocks go to the
        multilevel search (coarsen, search the coarsest level, refine), the others to
        the flat search: on a CPU as `search_many`'s program for a one-problem bucket
        (`bucket.bucket_search`), else (or where `bucket.old_path_reason` says so)
        `throughput_search`'s phase programs."""
        import dataclasses

        from jaxplace.multilevel import MULTILEVEL_MIN_NODES, applies, multilevel_search
        from jaxplace.objectives.throughput import bucket
        from jaxplace.objectives.throughput.search import throughput_search

        p = req.problem
        if p.n >= MULTILEVEL_MIN_NODES and applies(p):
            res = multilevel_search(req)
            return dataclasses.replace(res, method="default",
                                       info={**res.info, "found_by": "multilevel"})
        if bucket.old_path_reason(req) is None:  # on a CPU: search_many's program
            return bucket.bucket_search(req)
        return throughput_search(req)


#: From this many ops on (without CPU blocks) results are decoded by the pruned
#: slicing DP of `jaxplace.multilevel.slicing` (the reference's optimum, found in
#: 0.05 s at 2,000 ops and 0.5 s at 20,000, where the O(n^2 k) reference takes seconds
#: to minutes), and the memory a search needs is checked before any work.
FAST_SLICING_MIN_NODES = 2000


def _fast_slicing(problem) -> bool:
    return problem.n >= FAST_SLICING_MIN_NODES and problem.cpus == 0


THROUGHPUT = Throughput()

__all__ = ["EXACT_MAX_IDEALS", "THROUGHPUT", "Throughput"]
