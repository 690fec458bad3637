"""The exact search over contiguous splits of the op order for the training objective.

For every runnable stage count p <= k it enumerates the stage starts depth first and
simulates each complete split (`model.split_cost`); a partial split is dropped when it
cannot beat the best simulated step (a stage's m (fwd + bwd) is a lower bound on the
step: its rank runs those actions one after another; the remaining ops spread over the
remaining stages give another), or when a stage alone exceeds the memory limit under
the schedule. Finished, the best split is optimal over all contiguous splits; stopped
by its budget or the time limit, it is the best found.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.training.model import (
    SplitCost,
    TrainingOps,
    runnable,
    split_cost,
    stage_in_flight,
)

#: complete splits simulated at most by one search
MAX_SPLITS = 50_000


@dataclass
class ChainSearch:
    """The state of one search: the best split so far and what was spent."""

    best: SplitCost | None = None
    simulated: int = 0
    complete: bool = True


def valid_cuts(graph) -> np.ndarray:
    """(n + 1,) bool: a stage may start at position c (no tensor made at or after c is
    read before c). Position 0 and n are always valid."""
    n = graph.num_nodes
    ok = np.ones(n + 1, bool)
    prod = graph.tensor_producer
    for t in range(graph.num_tensors):
        cons = graph.consumers(t)
        if len(cons) and min(cons) < prod[t]:
            ok[int(min(cons)) + 1: int(prod[t]) + 1] = False
    ok[0] = ok[n] = True
    return ok


def balanced_split(graph, ops: TrainingOps, p: int, cuts: np.ndarray) -> np.ndarray | None:
    """(n,) the split into p stages at valid cuts minimising the largest stage's
    fwd + bwd (a DP over positions); None when no such split exists."""
    n = graph.num_nodes
    if p > n:
        return None
    pre = np.concatenate([[0.0], np.cumsum(ops.fwd + ops.bwd)])
    best = np.full((p + 1, n + 1), math.inf)
    arg = np.zeros((p + 1, n + 1), np.int64)
    best[0, 0] = 0.0
    for s in range(1, p + 1):
        for j in range(s, n + 1):
            if not cuts[j]:
                continue
            cand = [(max(best[s - 1, i], pre[j] - pre[i]), i) for i in range(s - 1, j)
                    if cuts[i] and best[s - 1, i] < math.inf]
            if cand:
                best[s, j], arg[s, j] = min(cand)
    if not math.isfinite(best[p, n]):
        return None
    starts, j = [], n
    for s in range(p, 0, -1):
        j = int(arg[s, j])
        starts.append(j)
    return np.searchsorted(np.asarray(starts[::-1]), np.arange(n), side="right") - 1


def search_splits(graph, ops: TrainingOps, k: int, *, bandwidth: float = 1.0,
                  capacity: float = math.inf, deadline: float = math.inf,
                  max_splits: int = MAX_SPLITS) -> ChainSearch:
    """The best contiguous split into at most k stages (module doc)."""
    n = graph.num_nodes
    cuts = valid_cuts(graph)
    pre = np.concatenate([[0.0], np.cumsum(ops.fwd + ops.bwd)])
    pre_state = np.concatenate([[0.0], np.cumsum(ops.state)])
    pre_act = np.concatenate([[0.0], np.cumsum(ops.act)])
    st = ops.settings
    out = ChainSearch()
    counts = [p for p in range(1, min(k, n) + 1) if not runnable(st, p, k)]
    m = st.microbatches(k)

    def consider(a: np.ndarray) -> None:
        out.simulated += 1
        c = split_cost(graph, ops, a, k, bandwidth=bandwidth, capacity=capacity)
        if out.best is None or c.cost < out.best.cost:
            out.best = c

    for p in sorted(counts, reverse=True):  # seed the bound with balanced splits
        a = balanced_split(graph, ops, p, cuts)
        if a is not None:
            consider(a)
    for p in counts:
        held = stage_in_flight(st.schedule, p, m, st.n_virtual)
        starts = [0]

        def dfs(s: int, i: int, top: float) -> bool:
            """Stage s starts at i; False when the search must stop."""
            bound = out.best.cost if out.best is not None else math.inf
            if s == p - 1:
                load = pre[n] - pre[i]
                mem = pre_state[n] - pre_state[i] + held[s] * (pre_act[n] - pre_act[i])
                if m * max(top, load) >= bound or mem > capacity:
                    return True
                if out.simulated >= max_splits or time.perf_counter() > deadline:
                    out.complete = False
                    return False
                a = np.searchsorted(np.asarray(starts), np.arange(n), side="right") - 1
                consider(a)
                return True
            left = p - s  # stages from s on, each at least one op
            for j in range(i + 1, n - left + 2):
                if not cuts[j]:
                    continue
                load = pre[j] - pre[i]
                if m * max(top, load) >= bound:
                    break  # longer stages only weigh more
                mem = pre_state[j] - pre_state[i] + held[s] * (pre_act[j] - pre_act[i])
                if mem > capacity:
                    break  # memory only grows with the stage
                rest = (pre[n] - pre[j]) / (left - 1)
                if m * rest >= bound:
                    continue  # the rest, spread evenly, is still too heavy
                starts.append(j)
                go = dfs(s + 1, j, max(top, load))
                starts.pop()
                if not go:
                    return False
                bound = out.best.cost if out.best is not None else math.inf
            return True

        if not dfs(0, 0, 0.0):
            break
    return out
