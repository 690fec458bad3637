import cProfile, pstats, sys, time, io
import numpy as np
from jaxplace.bench.search_time import instances
from jaxplace.problem import Problem
from jaxplace.search.many import search_many
probs = [Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
kw = dict(mode="islands", budget=4 * 256 * 6, seed=0, islands=4, population=256, migrate_every=10)
t0 = time.perf_counter(); rs = search_many(probs, **kw); print("cold", time.perf_counter() - t0, flush=True)
pr = cProfile.Profile(); t0 = time.perf_counter(); pr.enable(); rs2 = search_many(probs, **kw); pr.disable()
print("warm(profiled)", time.perf_counter() - t0, flush=True)
print("same", [a.cost for a in rs] == [b.cost for b in rs2])
print("info keys", sorted(rs[0].info)[:40])
for key in ("cumulative", "tottime"):
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats(key).print_stats(45); print(s.getvalue()[-9000:])
