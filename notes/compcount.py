"""Programs compiled and wall time for the default search over fresh REGAL graphs."""
import sys, time, logging, re
from collections import Counter
import numpy as np, jax
sys.path.insert(0, "/work/main/tests")
from compiles import count_compiles
import jaxplace as jp
from jaxplace.generators import regal_set
count = int(sys.argv[1]); method = sys.argv[2] if len(sys.argv) > 2 else "default"
budget = None if method == "default" else 10000
graphs = list(regal_set(count, seed=77, n_range=(50, 200)))
ks = (4, 8, 16)
t0 = time.perf_counter()
ratios = []
with count_compiles() as counts:
    for i, g in enumerate(graphs):
        p = jp.Problem(g, ks[i % 3])
        r = jp.search(p, method, budget=budget, seed=i, progress=False)
        ratios.append(r.cost / r.lower_bound)
big = {k: v for k, v in counts.items() if k in ("_loop_chunk", "score_chunk", "decode_chunk")}
print(f"{method}: {count} graphs, wall {time.perf_counter()-t0:.1f}s, programs {big}, "
      f"geomean ratio {np.exp(np.mean(np.log(ratios))):.4f}")
