"""Windowed vs full-DP search fitness: cost and warm wall time, same seeds."""
import time

import numpy as np

import jaxplace as jp
from jaxplace.generators import regal_set

graphs = list(regal_set(6, seed=123))
for method, budget in (("brkga", 10000), ("default", None)):
    for windowed in (False, True):
        ratios, times = [], []
        for i, g in enumerate(graphs):
            for k in (4, 16):
                p = jp.Problem(g, k)
                jp.search(p, method, budget=budget, seed=i, progress=False, windowed=windowed)  # warm
                t = time.perf_counter()
                r = jp.search(p, method, budget=budget, seed=i, progress=False, windowed=windowed)
                times.append(time.perf_counter() - t)
                ratios.append(r.cost / r.lower_bound)
        print(f"{method:8s} windowed={windowed!s:5s} geomean ratio {np.exp(np.mean(np.log(ratios))):.4f}"
              f" warm time total {sum(times):.1f}s", flush=True)
