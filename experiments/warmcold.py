import sys
import time

import jaxplace as jp
from jaxplace.generators import regal_set
from jaxplace.search import request

request.SPEC_STEPS = int(sys.argv[1])
graphs = list(regal_set(12, seed=77, n_range=(50, 200)))
warm = 0.0; cold = 0.0
for i, g in enumerate(graphs):
    p = jp.Problem(g, (4, 8, 16)[i % 3])
    t = time.perf_counter(); jp.search(p, "brkga", budget=10000, seed=i, progress=False); cold += time.perf_counter() - t
    t = time.perf_counter(); jp.search(p, "brkga", budget=10000, seed=i, progress=False); warm += time.perf_counter() - t
print(f"SPEC_STEPS={sys.argv[1]}: cold total {cold:.1f}s, warm total {warm:.1f}s")
