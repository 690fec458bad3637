"""Zero-shot orders and slow oracles: DFS linearization, level orders, random reference.

- `dfs_order`, `level_orders`, `order_to_priorities`, `seed_priorities`: the zero-shot
  orders of `jaxplace.orders`, re-exported here.
- `random_reference`: best of T uniform vectors through the NumPy float64 reference
  (slow; the oracle the compiled random search is tested against).

MLA and MLA-weighted (BRKGA over the linear-arrangement cost) run through the
compiled driver; see `jaxplace.search.search(method="mla")`.
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.orders import (
    dfs_order,
    level_orders,
    order_to_priorities,
    place_free_units,
    seed_priorities,
    tensor_partners,
)
from jaxplace.problem import Problem
from jaxplace.progress import bar


def random_reference(problem: Problem, budget: int, seed: int, time_limit: float | None,
                     progress: bool | None = None):
    """Best of `budget` uniform priority vectors through the NumPy reference decoder.

    Returns (best Partition, evaluations, best priorities). Ctrl-C stops early and
    keeps the best partition found so far.
    """
    rng = np.random.default_rng(seed)
    best, best_x, start, done = None, None, time.perf_counter(), 0
    with bar(budget, "random-reference", enabled=progress) as pb:
        try:
            for _ in range(budget):
                x = rng.random(problem.n)
                part = decode_reference(problem, x)
                done += 1
                if best is None or part.cost < best.cost:
                    best, best_x = part, x
                    pb.set_postfix(best=f"{best.cost:.6g}")
                pb.update(1)
                if time_limit is not None and time.perf_counter() - start > time_limit:
                    break
        except KeyboardInterrupt:
            if best is None:
                raise
    return best, done, best_x


__all__ = ["dfs_order", "level_orders", "order_to_priorities", "place_free_units",
           "random_reference", "seed_priorities", "tensor_partners"]
