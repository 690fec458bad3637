"""The local executor of `search_many`: buckets on a pool of host threads.

A bucket's problems are cut into runs of `settings.group` (`default_group`: one
problem per run on CPUs, the whole bucket on accelerators); the runs of a bucket
share its compiled program. XLA's CPU runtime runs a program on the thread that
calls it, so one run keeps one core busy; with `workers` threads (default: one per
core) that many runs go at once (all on JAX's default device: the CPU runtime runs
programs of one device from several threads at once).

First every bucket's program is compiled, on the same threads (so no program is
compiled twice by two runs racing, and, with a time limit, compiles, which cannot
be interrupted, are not counted against the first runs' shares, which would starve
the last ones). Then runs are handed out largest padded work first (the
longest-processing-time rule), each to the next free worker; with a time limit a
run gets the time left times its share of the work still waiting (at most all).

Results stream out through a queue as each problem finishes. Ctrl-C (in the
consuming thread) sets `cancel`: every running bucket stops after its chunk in
flight and reports each unfinished problem's best; a second Ctrl-C stops waiting.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator

from jaxplace.search.deadline import late_seconds
from jaxplace.search.many.run import BucketRun, bucket_groups


def local_buckets(prepared, buckets, settings, cancel: threading.Event, start: float,
                  workers: int) -> Iterator[tuple[int, object]]:
    """Yields (index, Result) of every problem of `buckets` (see the module doc)."""
    runs, works, firsts = [], [], []
    for b in buckets:
        parts = bucket_groups([prepared[i] for i in b.members], settings)
        firsts.append(len(runs))  # the run that compiles the bucket's program
        for part in parts:
            runs.append(BucketRun(part, b, settings, cancel))
            works.append(b.work() * len(part) / len(b.members))
    workers = max(1, min(int(workers), len(runs)))
    todo = sorted(range(len(runs)), key=lambda j: -works[j])
    to_compile = sorted(firsts, key=lambda j: -works[j])
    limit = settings.time_limit
    out: queue.SimpleQueue = queue.SimpleQueue()
    lock = threading.Lock()

    def share(j: int) -> float | None:
        if limit is None:
            return None
        left = limit - (time.perf_counter() - start)
        waiting = works[j] + sum(works[i] for i in todo)
        return left * min(1.0, works[j] * workers / waiting)

    def take(items: list) -> tuple[int | None, float | None]:
        """(next item or None, the time share of a run taken from `todo`)."""
        with lock:
            if cancel.is_set() or not items:
                return None, None
            j = items.pop(0)
            return j, (share(j) if items is todo else None)

    def compile_all() -> None:
        while (j := take(to_compile)[0]) is not None:
            runs[j].compile()

    def search() -> None:
        while True:
            j, t = take(todo)
            if j is None or (t is not None and t <= 0):
                return
            for item in runs[j].results(t):
                out.put(("result", item))

    def worker(w: int) -> None:
        try:
            compile_all()
            barrier.wait()
            search()
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # handed to the consuming thread
            cancel.set()
            barrier.abort()
            out.put(("error", exc))
        finally:
            out.put(("done", w))

    barrier = threading.Barrier(workers)
    # not daemons: one left compiling when the interpreter exits would be killed
    # inside XLA and abort the process (a caller that stopped waiting exits after it)
    threads = [threading.Thread(target=worker, args=(w,), daemon=False,
                                name=f"jaxplace-bucket-{w}") for w in range(workers)]
    for t in threads:
        t.start()
    alive, error, waiting = workers, None, True
    # past the time limit (and a chunk's grace) a program still compiling is not waited
    # for: its problems get their first solutions (`iter_search_many`)
    give_up = None if limit is None else start + limit + late_seconds(limit)
    try:
        while alive and waiting:
            try:
                kind, item = out.get(timeout=0.2)  # a timeout, so Ctrl-C is seen
            except queue.Empty:
                if give_up is not None and time.perf_counter() > give_up:
                    waiting = False
                continue
            except KeyboardInterrupt:
                if cancel.is_set():  # the second Ctrl-C: stop waiting
                    waiting = False
                cancel.set()
                barrier.abort()
                continue
            if kind == "result":
                yield item
            elif kind == "done":
                alive -= 1
            else:
                error = error or item
    finally:
        if alive:  # the consumer stopped early, or a second Ctrl-C
            cancel.set()
            barrier.abort()
    if error is not None:
        raise error


__all__ = ["local_buckets"]
