"""Plans restricted to cut positions in program order (a chain of segments).

A framework can only cut a program at certain places: torch.distributed.pipelining
before a module's forward (`SplitPoint.BEGINNING`), a staged jaxpr between equations.
Given the op graph (nodes in program order) and the allowed cut positions, the ops
between consecutive positions become one coarse node (a segment); zero-size chain
tensors from each segment to the next make the segments' ideals exactly the prefixes,
so every partition of the coarse graph is a run of segments per stage, in order. The
coarse graph keeps the op graph's tensors (a tensor crossing a cut costs its link time
once per receiving stage, as in the op graph) and parameters, so a stage's MTPP cost on
the coarse graph is its cost on the op graph. The jaxplace planner (`jaxplace.search`:
the exact DP over ideals where it fits) solves it, `jaxplace.certify` bounds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.bounds import certify
from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.problem import Problem
from jaxplace.search import search


@dataclass(frozen=True)
class ChainSplit:
    """A split of the op graph into stages at allowed cut positions.

    Attributes:
        starts: (k,) op position where each stage begins (starts[0] == 0), ascending.
        assignment: (n,) stage of every op of the op graph.
        stage_times: (k,) MTPP stage cost (receive + compute + send), graph time unit.
        compute: (k,) summed op work per stage.
        io_in, io_out: (k,) link time of the tensors each stage receives / sends.
        param_bytes: (k,) parameter bytes per stage (`size_param`).
        lower_bound: the certificate's lower bound on the best split at these cuts
            (None when not certified).
        proved_optimal: the certificate closes the gap (bound == bottleneck).
        method: how the split was found ("planner: <found_by>", "even layers", ...).
    """

    starts: tuple[int, ...]
    assignment: np.ndarray
    stage_times: np.ndarray
    compute: np.ndarray
    io_in: np.ndarray
    io_out: np.ndarray
    param_bytes: np.ndarray
    lower_bound: float | None = None
    proved_optimal: bool = False
    method: str = ""

    @property
    def bottleneck(self) -> float:
        return float(self.stage_times.max())

    @property
    def balance(self) -> float:
        """max / mean of the stage times (1.0: perfectly balanced)."""
        return float(self.stage_times.max() / self.stage_times.mean())


def segments_graph(graph: CompGraph, cuts: Sequence[int]) -> CompGraph:
    """The coarse chain graph: segment i holds ops cuts[i] .. cuts[i+1]-1 (cuts[0] == 0
    is added when missing); tensors inside a segment vanish, the others keep their size
    and go to the consuming segments; chain tensors of size 0 link segment i to i + 1."""
    starts = _starts(cuts, graph.num_nodes)
    seg = np.searchsorted(np.asarray(starts), np.arange(graph.num_nodes), side="right") - 1
    m = len(starts)
    work = np.bincount(seg, weights=graph.work, minlength=m)
    param = np.bincount(seg, weights=graph.size_param, minlength=m)
    tensors = []
    prod = graph.tensor_producer
    for t in range(graph.num_tensors):
        p = int(seg[prod[t]])
        cons = sorted({int(seg[c]) for c in graph.consumers(t)} - {p})
        if cons:
            tensors.append((p, float(graph.tensor_size[t]), cons))
    tensors += [(i, 0.0, [i + 1]) for i in range(m - 1)]
    names = [graph.names[s] if graph.names else str(s) for s in starts]
    meta = {k: v for k, v in graph.meta.items()
            if k in ("time_unit", "work_unit", "device", "name", "source")}
    return CompGraph(work, (), param, tensors=tensors, names=names, meta=meta)


def _starts(cuts: Sequence[int], n: int) -> list[int]:
    starts = sorted({0, *(int(c) for c in cuts)})
    if starts[-1] >= n or starts[0] < 0:
        raise JaxplaceError(f"cut positions must lie in 0..{n - 1}", field="cuts")
    return starts


def split_from_starts(graph: CompGraph, stage_starts: Sequence[int], *,
                      lower_bound: float | None = None, method: str = "",
                      capacity: float | None = None) -> ChainSplit:
    """The ChainSplit whose stage s begins at op position stage_starts[s]; costs from
    `objectives.throughput.cost.evaluate_partition` (the float64 reference) on the op graph."""
    starts = _starts(stage_starts, graph.num_nodes)
    k = len(starts)
    assignment = np.searchsorted(np.asarray(starts), np.arange(graph.num_nodes),
                                 side="right") - 1
    cost = evaluate_partition(Problem(graph, k, bandwidth=1.0, capacity=capacity),
                              assignment)
    proved = lower_bound is not None and cost.bottleneck <= lower_bound * (1 + 1e-9)
    return ChainSplit(tuple(starts), assignment, cost.total, cost.work, cost.io_in,
                      cost.io_out, cost.param, lower_bound, proved, method)


def plan_chain(graph: CompGraph, cuts: Sequence[int], k: int, *, seed: int = 0,
               certify_time_limit: float = 10.0, capacity: float | None = None
               ) -> ChainSplit:
    """The best split of `graph` into at most k stages that cuts only at positions
    `cuts` (op indices in program order), by the jaxplace planner on the coarse chain
    (`segments_graph`), certified there (the bound holds for every split at these cuts)."""
    if k < 1:
        raise JaxplaceError("must be at least 1", field="k")
    starts = _starts(cuts, graph.num_nodes)
    coarse = segments_graph(graph, starts)
    kk = min(k, coarse.num_nodes)
    problem = Problem(coarse, kk, bandwidth=1.0, capacity=capacity)
    result = search(problem, seed=seed, progress=False)
    # a chain has m + 1 ideals: the exact DP over them is the bound that closes the gap
    cert = certify(problem, result.partition, methods=("simple", "ideals"),
                   time_limit=certify_time_limit)
    seg_stage = np.asarray(result.partition.assignment)
    # stages numbered in pipeline order: by their first segment (the chain forces runs)
    firsts = sorted({int(seg_stage[i]) for i in range(len(seg_stage))},
                    key=lambda b: int(np.flatnonzero(seg_stage == b)[0]))
    stage_starts = [starts[int(np.flatnonzero(seg_stage == b)[0])] for b in firsts]
    found = result.info.get("found_by", result.method) if result.info else result.method
    return split_from_starts(graph, stage_starts, lower_bound=float(cert.lower_bound),
                             method=f"planner ({found})", capacity=capacity)
