"""The default search: seeded BRKGA, then a batched local search on the order.

1. BRKGA (Goncalves and Resende 2011) whose first population holds heuristic orders
   (DFS linearization, ASAP and ALAP layerings, user seeds) next to random keys.
2. `ShiftSearch` from the best BRKGA candidate: batches of node shifts in the order,
   re-sliced optimally by the decoder, accepting no-worse moves (plateau walks).
"""

from __future__ import annotations

import time

import numpy as np

from jaxplace.progress import bar
from jaxplace.problem import Problem
from jaxplace.search.baselines import seed_priorities

#: Decoder evaluations of the default search (about 3x the paper's brkga-10000).
DEFAULT_BUDGET = 30_000
#: Share of the budget spent by BRKGA; the rest goes to the local search.
BRKGA_SHARE = 1 / 3
POPULATION = 100
LOCAL_BATCH = 64


def default_search(problem: Problem, *, budget: int | None = None, seed: int = 0,
                   time_limit=None, target=None, progress=None, lb=None, seeds=None,
                   population_size: int | None = None, brkga_share: float = BRKGA_SHARE,
                   local_batch: int = LOCAL_BATCH, moves: int = 3):
    from jaxplace.search import _finish, run_evosax, shift_search

    start = time.perf_counter()
    # tiny graphs need far fewer evaluations (the order space is small)
    budget = budget or min(DEFAULT_BUDGET, max(3000, 50 * problem.n * problem.k))
    P = max(2, min(population_size or POPULATION, budget // 3))
    s = seed_priorities(problem.graph)
    if seeds is not None:
        s = np.concatenate([np.asarray(seeds, np.float32).reshape(-1, problem.n), s])
    b1 = max(int(budget * brkga_share), P)
    with bar(budget, "default", enabled=progress) as pb:
        out1 = run_evosax(problem, "BRKGA", budget=b1, population_size=P, seed=seed,
                          time_limit=time_limit, target=target, progress=False, lb=lb,
                          seeds=s, raw=True, start=start)
        pb.update(out1.evaluations)
        steps = max((budget - out1.evaluations) // local_batch, 0)
        if out1.interrupted or (target is not None and out1.best_f <= target):
            steps = 0
        out2 = shift_search(problem, out1.best_x[:problem.n], steps=steps,
                            batch=local_batch, moves=moves, seed=seed + 1,
                            time_limit=time_limit, target=target, lb=lb, start=start,
                            pbar=pb, evaluations0=out1.evaluations)
    best_x = out2.best_x if out2.best_f <= out1.best_f else out1.best_x
    history = out1.history.concat(out2.history)
    return _finish(problem, "default", best_x, out1.evaluations + out2.evaluations, start,
                   history, out1.interrupted or out2.interrupted,
                   info={"brkga_best": out1.best_f, "local_best": out2.best_f})
