"""Ray's per-task overhead for search_many's executor (experiments/batch.md).

    python experiments/ray_overhead.py [--count 6] [--budget 600]

Prints: ray.init of a local 2-CPU cluster; a no-op task's round trip (first call:
a worker process starts; then warm); and for search_many over `count` small
REGAL-like graphs in single-problem buckets, per task the driver-side wall against
the worker-side run_bucket time (the difference is Ray's overhead: scheduling,
shipping the problems and results, and a fresh worker's imports), and whether the
results equal the local executor's.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--budget", type=int, default=600)
    a = ap.parse_args()

    import ray

    import jaxplace as jp
    from jaxplace.generators import regal_set
    from jaxplace.search.many import prepare, search_many
    from jaxplace.search.many.buckets import plan_buckets
    from jaxplace.search.many.ray_tasks import ray_buckets

    probs = [jp.Problem(g, 4) for g in regal_set(a.count, seed=7, n_range=(50, 60))]
    kw = dict(budget=a.budget, polish=False, max_programs=1)
    t = time.perf_counter()
    local = search_many(probs, **kw)
    print(f"local executor: {time.perf_counter() - t:.2f} s (compile included)")

    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    print(f"ray.init (local, 2 CPUs): {time.perf_counter() - t:.2f} s")

    @ray.remote(num_cpus=1)
    def noop(x):
        return x

    for label in ("first (worker start)", "warm", "warm"):
        t = time.perf_counter()
        ray.get(noop.remote(1))
        print(f"no-op task round trip, {label}: {1000 * (time.perf_counter() - t):.1f} ms")
    t = time.perf_counter()
    ray.get([noop.remote(i) for i in range(100)])
    print(f"100 no-op tasks: {1000 * (time.perf_counter() - t) / 100:.2f} ms each")

    import threading

    from jaxplace.search.many import ManySettings

    prepared = [prepare(p, i) for i, p in enumerate(probs)]
    settings = ManySettings(budget=a.budget, polish=False)
    for rnd in ("first (worker imports, compiles)", "second (same workers)"):
        buckets = plan_buckets([p.cls for p in prepared], 1)
        stats: dict = {}
        t = time.perf_counter()
        out = dict(ray_buckets(prepared, buckets, settings, threading.Event(), None, 1,
                               stats))
        wall = time.perf_counter() - t
        (driver_s, worker_s), = stats["tasks"]
        same = all(np.array_equal(out[i].priorities, local[i].priorities)
                   for i in range(len(probs)))
        print(f"one bucket task, {rnd}: driver {driver_s:.2f} s, worker run_bucket "
              f"{worker_s:.2f} s, overhead {driver_s - worker_s:.2f} s; total {wall:.2f} s;"
              f" identical to local: {same}")
    ray.shutdown()


if __name__ == "__main__":
    main()
