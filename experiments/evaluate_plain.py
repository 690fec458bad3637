"""jp.evaluate on a plain Python call (one XLA host device, no CLI flags) against
the C++ yardstick's population, settings side by side and interleaved:

    python ../shared/tools/yardstick.py --n 200 --p 0.03 --k 16 --pop 2000 --seed 1 --out /tmp/ys
    python experiments/evaluate_plain.py /tmp/ys
"""
import json
import subprocess
import sys
import time

import networkx as nx
import numpy as np

import jax
import jaxplace as jp
from jaxplace.graph import CompGraph

out = sys.argv[1]
G = nx.node_link_graph(json.load(open(f"{out}/graph.json")), edges="edges")
problem = jp.Problem(CompGraph.from_networkx(G), 16)
pop = np.load(f"{out}/pop.npy")
ref = np.load(f"{out}/costs.npy")
print("devices", jax.devices())
settings = {"before (full DP, 1 thread)": dict(window=None, threads=1),
            "full DP, threads": dict(window=None),
            "default (sample window, threads)": {}}
best = {k: np.inf for k in settings}
for label, kw in settings.items():  # compile, check
    c = jp.evaluate(problem, pop, **kw)
    fin = np.isfinite(ref)
    rel = np.abs(c[fin] - ref[fin]) / np.abs(ref[fin])
    assert np.array_equal(np.isinf(c), np.isinf(ref)), label
    print(f"{label}: max rel diff {rel.max():.2g}")
ys = []
for _ in range(5):
    for label, kw in settings.items():
        t0 = time.perf_counter()
        jp.evaluate(problem, pop, **kw)
        best[label] = min(best[label], time.perf_counter() - t0)
    r = subprocess.run([f"{out}/refslice", f"{out}/graph.txt", f"{out}/pop.bin", "16"],
                       capture_output=True, text=True)
    ys.append(float(r.stderr.split(" per second")[0].split()[-1]))
y = max(ys)
print(f"yardstick (C++, 1 core): {y:.0f}/s (best of {len(ys)})")
for label, t in best.items():
    print(f"{label}: {len(pop) / t:.0f}/s = {len(pop) / t / y:.2f}x yardstick")
