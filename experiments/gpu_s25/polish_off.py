import time, json
import numpy as np
from jaxplace.bench.search_time import instances
from jaxplace.problem import Problem
from jaxplace.search.many import search_many
probs = [Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
cpp = json.load(open(".gpu/cpp.json"))
def gm(c): return float(np.exp(np.mean(np.log(np.array(c) / np.array(cpp)))))
for I, P, G in [(4, 1024, 20), (4, 256, 20)]:
    kw = dict(mode="islands", budget=I * P * (G + 1), seed=0, islands=I, population=P, migrate_every=10, impl="fused")
    for pol in (False, False, True):
        t0 = time.perf_counter(); rs = search_many(probs, polish=pol, **kw); w = time.perf_counter() - t0
        c = [r.cost for r in rs]
        k4 = [r.cost for r, p in zip(rs, probs) if p.k == 4]
        print(f"{I}x{P}x{G} polish={pol} wall {w:.1f} s cost/C++ {gm(c):.4f}", flush=True)
