"""The Ray executor of `search_many`: one Ray task per bucket, streaming per problem.

Each task is a Ray generator task: it runs `run_bucket` in a Ray worker process
(which imports JAX and compiles the bucket's program there; with the persistent
compilation cache on a shared disk, workers of one machine share compiles) and
yields each problem's result as it finishes, so results reach the caller one
problem at a time from all buckets at once. Ray is an optional dependency (`pip
install jaxplace[ray]`).

Ctrl-C or `cancel` cancels the tasks still running; their unfinished problems then
report the best heuristic order (`interrupted`), as their bests stay in the workers.
"""

from __future__ import annotations

import time

from jaxplace.errors import JaxplaceError

#: The first element of a task's last item: (DONE, the worker's seconds).
DONE = "done"


def _bucket_task(members, bucket, settings):
    """A Ray generator task's body: (index, Result) per problem, then (DONE, s)."""
    from jaxplace.search.many.run import run_bucket

    t0 = time.perf_counter()
    yield from run_bucket(members, bucket, settings)
    yield DONE, time.perf_counter() - t0


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise JaxplaceError("executor 'ray' needs Ray: pip install 'jaxplace[ray]'",
                            field="executor") from exc
    return ray


def ray_buckets(prepared, buckets, settings, cancel, address: str | None,
                num_cpus: int, stats: dict | None = None):
    """Yields (index, Result) as each problem's result arrives (see the module doc).
    `stats` (optional) receives per-task (driver wall, worker wall) seconds."""
    ray = import_ray()
    if num_cpus < 1:
        raise JaxplaceError("must be at least 1", field="num_cpus")
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    task = ray.remote(num_cpus=num_cpus, num_returns="streaming")(_bucket_task)
    t0 = time.perf_counter()
    left = [task.remote([prepared[i] for i in b.members], b, settings) for b in buckets]
    try:
        while left:
            ready, _ = ray.wait(left, num_returns=1, timeout=0.5)
            if cancel.is_set():
                break
            for gen in ready:
                try:
                    item = ray.get(next(gen))
                except StopIteration:
                    left.remove(gen)
                    continue
                if item[0] == DONE:
                    if stats is not None:
                        stats.setdefault("tasks", []).append(
                            (time.perf_counter() - t0, item[1]))
                    continue
                yield item
    finally:
        for gen in left:
            ray.cancel(gen, force=True)


__all__ = ["import_ray", "ray_buckets"]
