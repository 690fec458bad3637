"""The Ray executor of `search_many`: one Ray task per bucket.

Each task runs `run_bucket` in a Ray worker process (which imports JAX and compiles
the bucket's program there; with the persistent compilation cache on a shared
disk, workers of one machine share compiles) and returns the bucket's results;
they stream back bucket by bucket. Ray is an optional dependency (`pip install
jaxplace[ray]`).

Ctrl-C or `cancel` cancels the tasks still running; their problems then report the
best heuristic order (`interrupted`), as their bests stay in the workers.
"""

from __future__ import annotations

import time

from jaxplace.errors import JaxplaceError


def _bucket_task(members, bucket, settings):
    """A Ray task's body: [(index, Result)] of one bucket."""
    from jaxplace.search.many_run import run_bucket

    t0 = time.perf_counter()
    out = list(run_bucket(members, bucket, settings))
    return out, time.perf_counter() - t0


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise JaxplaceError("executor 'ray' needs Ray: pip install 'jaxplace[ray]'",
                            field="executor") from exc
    return ray


def ray_buckets(prepared, buckets, settings, cancel, address: str | None,
                num_cpus: int, stats: dict | None = None):
    """Yields (index, Result) as each bucket's task returns (see the module doc).
    `stats` (optional) receives per-task (driver wall, worker wall) seconds."""
    ray = import_ray()
    if num_cpus < 1:
        raise JaxplaceError("must be at least 1", field="num_cpus")
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    task = ray.remote(num_cpus=num_cpus)(_bucket_task)
    t0 = time.perf_counter()
    refs = [task.remote([prepared[i] for i in b.members], b, settings) for b in buckets]
    left = list(refs)
    try:
        while left:
            ready, left = ray.wait(left, num_returns=1, timeout=0.5)
            if cancel.is_set():
                break
            for r in ready:
                out, worker_s = ray.get(r)
                if stats is not None:
                    stats.setdefault("tasks", []).append(
                        (time.perf_counter() - t0, worker_s))
                yield from out
    finally:
        for r in left:
            ray.cancel(r, force=True)


__all__ = ["import_ray", "ray_buckets"]
