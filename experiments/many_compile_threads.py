"""Do search_many's 8 programs compile in parallel on 2 host threads? (empty cache)

    JAXPLACE_CACHE_DIR= python experiments/many_compile_threads.py 1
    JAXPLACE_CACHE_DIR= python experiments/many_compile_threads.py 2
"""
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import ManySettings, prepare
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.many.run import BucketRun

workers = int(sys.argv[1])
probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
pol: dict = {}
prepared = [prepare(p, i, policies=pol) for i, p in enumerate(probs)]
buckets = plan_buckets([p.cls for p in prepared], 8)
runs = [BucketRun([prepared[b.members[0]]], b, ManySettings(), None) for b in buckets]
t0 = time.perf_counter()
with ThreadPoolExecutor(workers) as ex:
    list(ex.map(lambda r: r.compile(), runs))
print(f"{len(runs)} programs compiled on {workers} thread(s): {time.perf_counter() - t0:.1f} s")
