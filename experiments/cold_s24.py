"""The cold one-time part of search_many / jp.search, phase by phase (issue 51, s24).

    JAXPLACE_CACHE_DIR= nice python experiments/cold_s24.py many [COUNT]
    JAXPLACE_CACHE_DIR= nice python experiments/cold_s24.py search [COUNT]
    JAXPLACE_CACHE_DIR= nice python experiments/cold_s24.py policy [COUNT]

Run in a fresh process with the persistent cache off (JAXPLACE_CACHE_DIR=), so every
program is traced, lowered and compiled here. "many": one `search_many` call over
the regal-time suite's first COUNT graphs (default 30; k = 4, 8, 16), as `bench batch
--methods many` runs it; "search": `jp.search` per graph, as `--methods default`
does; "policy": only the policy part of `prepare` (load, features, forward) per
graph, timed separately (first call at a shape and a second call).

The table splits the process's wall: imports (from the interpreter's start), the
suite, then the call(s) with the time inside `prepare` (heuristic orders and
classes, the policy load, features, forward), inside the buckets' `compile` and
`results`, and JAX's own trace / lower / XLA compile durations per jitted function
(`jax.monitoring`; summed over threads: search_many compiles its buckets on two
threads at once, so these sums can exceed the wall).
"""
from __future__ import annotations

import time

T_START = time.perf_counter()

import collections  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402

import jax  # noqa: E402

T_JAX = time.perf_counter()
import jaxplace as jp  # noqa: E402
import jaxplace.search.many  # noqa: E402, F401  (the search modules' import cost)

T_JP = time.perf_counter()

EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile"}
JAX_TIMES: dict = collections.defaultdict(float)  # (phase, group) -> seconds
JAX_COUNTS: dict = collections.Counter()
SPANS: dict = collections.defaultdict(float)  # our wrapped functions -> seconds
CPU: dict = collections.defaultdict(float)  # the same, CPU seconds of the calling thread
CALLS: dict = collections.Counter()
LOCK = threading.Lock()


def group(fun_name: str) -> str:
    if "many_chunk" in fun_name:
        return "_many_chunk"
    if "_forward" in fun_name:
        return "policy _forward"
    if fun_name.endswith(("_loop_chunk", "score_chunk", "decode_chunk")):
        return "driver chunks"
    return "other (eager ops, small jits)"


def listener(event, duration, **kw):
    phase = EVENTS.get(event)
    if phase is None:
        return
    g = group(str(kw.get("fun_name", "")))
    with LOCK:
        JAX_TIMES[phase, g] += duration
        if phase == "compile":
            JAX_COUNTS[g] += 1


jax.monitoring.register_event_duration_secs_listener(listener)


def timed(owner, name: str, label: str) -> None:
    fn = getattr(owner, name)

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        t, c = time.perf_counter(), time.thread_time()
        try:
            return fn(*a, **kw)
        finally:
            with LOCK:
                SPANS[label] += time.perf_counter() - t
                CPU[label] += time.thread_time() - c
                CALLS[label] += 1

    setattr(owner, name, wrapper)


def instrument() -> None:
    import jaxplace.policy as policy
    from jaxplace.policy import features, inference
    from jaxplace.search.many import api, run

    timed(api, "prepare", "prepare (all)")
    timed(api, "policy_distribution", "prepare: policy (load+features+forward)")
    timed(policy, "load_policy", "policy load")  # callers import it from the package
    timed(features, "featurize", "policy features")
    if hasattr(inference, "_forward"):
        timed(inference, "_forward", "policy forward (flax, jit)")
    if hasattr(inference, "_numpy_forward"):
        timed(inference, "_numpy_forward", "policy forward (NumPy)")
    timed(run.BucketRun, "_data", "bucket _data (host arrays, first population)")
    timed(run.BucketRun, "compile", "bucket compile() (data + zero-step call)")
    timed(run.BucketRun, "_polish", "bucket polish (k <= 4 MIP)")


def suite(count: int):
    from jaxplace.bench.search_time import instances

    return [jp.Problem(g, k) for _, g, k in instances(count, [4, 8, 16], 0)]


def report(title: str, wall: dict) -> None:
    print(f"\n## {title} (load {os.getloadavg()[0]:.1f}, jax {jax.__version__})\n")
    print("| phase | wall s | CPU s (its thread) | calls |\n|---|---|---|---|")
    for k, v in wall.items():
        print(f"| {k} | {v:.2f} | | |")
    for k, v in SPANS.items():
        print(f"| {k} | {v:.2f} | {CPU[k]:.2f} | {CALLS[k]} |")
    for (phase, g), v in sorted(JAX_TIMES.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        n = JAX_COUNTS[g] if phase == "compile" else ""
        print(f"| JAX {phase}: {g} | {v:.2f} | | {n} |")
    print(f"| process CPU (all threads) | | {time.process_time():.2f} | |")


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "many"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    instrument()
    t = time.perf_counter()
    probs = suite(count)
    wall = {"import jax (from process start)": T_JAX - T_START,
            "import jaxplace + search.many": T_JP - T_JAX,
            f"suite ({count} graphs)": time.perf_counter() - t}
    if what == "many":
        t = time.perf_counter()
        rs = jp.search_many(probs, seed=0)
        wall["search_many call"] = time.perf_counter() - t
        print("costs", [r.cost for r in rs])
    elif what == "search":
        t = time.perf_counter()
        rs = [jp.search(p, seed=i) for i, p in enumerate(probs)]
        wall["jp.search per graph"] = time.perf_counter() - t
        print("costs", [r.cost for r in rs])
    elif what == "policy":
        from jaxplace.search.many.api import policy_distribution

        policies: dict = {}
        for i, p in enumerate(probs):
            if p.k < 8:
                continue
            t = time.perf_counter()
            policy_distribution(p, policies)
            t1 = time.perf_counter()
            policy_distribution(p, policies)
            t2 = time.perf_counter()
            print(f"graph {i} n={p.n} k={p.k}: first {t1 - t:.3f} s, again {t2 - t1:.3f} s",
                  flush=True)
    else:
        raise SystemExit(f"unknown {what!r}")
    wall["process total"] = time.perf_counter() - T_START
    report(f"cold_s24 {what} {count}", wall)


if __name__ == "__main__":
    main()
