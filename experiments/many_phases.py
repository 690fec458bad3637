"""Cold search_many on the regal-time suite, phase by phase (empty compile cache):

    JAXPLACE_CACHE_DIR= python experiments/many_phases.py
"""
import time

t0 = time.perf_counter()
import jax  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.bench.search_time import instances  # noqa: E402
from jaxplace.search.many import ManySettings, prepare  # noqa: E402
from jaxplace.search.many.buckets import plan_buckets  # noqa: E402
from jaxplace.search.many.run import BucketRun  # noqa: E402
from jaxplace.search.planner import exact_answer  # noqa: E402

probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
t1 = time.perf_counter()
print(f"imports + graphs: {t1 - t0:.1f} s")
prepared = [prepare(p, i) for i, p in enumerate(probs)]
t2 = time.perf_counter()
print(f"prepare (heuristic orders, classes, policy distributions): {t2 - t1:.1f} s")
solved = [exact_answer(p, seed=i) for i, p in enumerate(probs)]
t3 = time.perf_counter()
print(f"exact step: {t3 - t2:.1f} s ({sum(r is not None for r in solved)} solved)")
buckets = plan_buckets([p.cls for p in prepared], 8)
for b in buckets:
    t = time.perf_counter()
    BucketRun([prepared[b.members[0]]], b, ManySettings(), None).compile()
    print(f"  compile N={b.spec.N} K={b.spec.K} window={b.window}: "
          f"{time.perf_counter() - t:.1f} s")
t4 = time.perf_counter()
print(f"compile 8 programs (one thread): {t4 - t3:.1f} s")
print(f"devices {jax.devices()}")
