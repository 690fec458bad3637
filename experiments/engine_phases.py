"""search_many's cold path, phase by phase, per bucket program of the regal-time suite
(issue 51 item 1), and the XLA CPU option candidates (item 2), one process, no
persistent cache:

    JAXPLACE_CACHE_DIR= nice python experiments/engine_phases.py [BUCKETS] [OPTIONS]

BUCKETS: how many of the suite's buckets (default all 8). OPTIONS: "default" and/or
"O0" (xla_backend_optimization_level=0), "cheap" (xla_llvm_disable_expensive_passes),
comma-separated. Phases: Python tracing (jit.trace), lowering to StableHLO, XLA
compile, the first run of one chunk (8 steps), steady state (the same chunk again,
best of 3), all for a one-problem run (group 1, the CPU default).
"""
import sys
import time

t0 = time.perf_counter()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.bench.search_time import instances  # noqa: E402
from jaxplace.search.many import ManySettings, prepare  # noqa: E402
from jaxplace.search.many.buckets import plan_buckets  # noqa: E402
from jaxplace.search.many.program import many_chunk  # noqa: E402
from jaxplace.search.many.run import BucketRun  # noqa: E402

OPTIONS = {"default": {}, "O0": {"xla_backend_optimization_level": 0},
           "cheap": {"xla_llvm_disable_expensive_passes": True}}
count = int(sys.argv[1]) if len(sys.argv) > 1 else 8
which = (sys.argv[2] if len(sys.argv) > 2 else "default").split(",")
probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
print(f"imports + graphs: {time.perf_counter() - t0:.1f} s")
t1 = time.perf_counter()
prepared = [prepare(p, i) for i, p in enumerate(probs)]
print(f"prepare (heuristic orders, classes, policy): {time.perf_counter() - t1:.1f} s")
buckets = plan_buckets([p.cls for p in prepared], 8)[:count]
print("| bucket | options | trace s | lower s | XLA compile s | first chunk s | steady chunk s |")
print("|---|---|---|---|---|---|---|")
tot = {o: [0.0] * 5 for o in which}
for b in buckets:
    run = BucketRun([prepared[b.members[0]]], b, ManySettings(), None)
    data = run._data()
    state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
    steps = jnp.int32(8)
    for o in which:
        jax.clear_caches()
        ta = time.perf_counter()
        traced = many_chunk.trace(run.program, data, state, steps)
        tb = time.perf_counter()
        lowered = traced.lower()
        tc = time.perf_counter()
        compiled = lowered.compile(compiler_options=OPTIONS[o] or None)
        td = time.perf_counter()
        jax.block_until_ready(compiled(data, state, steps))
        te = time.perf_counter()
        steady = []
        for _ in range(3):
            t = time.perf_counter()
            jax.block_until_ready(compiled(data, state, steps))
            steady.append(time.perf_counter() - t)
        row = [tb - ta, tc - tb, td - tc, te - td, min(steady)]
        tot[o] = [x + y for x, y in zip(tot[o], row, strict=True)]
        print(f"| N={b.spec.N} K={b.spec.K} window={b.window} | {o} | "
              + " | ".join(f"{x:.3f}" for x in row) + " |", flush=True)
for o in which:
    print(f"| total ({len(buckets)} programs) | {o} | "
          + " | ".join(f"{x:.3f}" for x in tot[o]) + " |")
print(f"devices {jax.devices()}")
