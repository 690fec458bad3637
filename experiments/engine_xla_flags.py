"""XLA CPU compiler options against compile time and step time (issue 51 item 2).

    JAXPLACE_CACHE_DIR= nice python experiments/engine_xla_flags.py [GRAPH] [WHAT] [ROUNDS]

WHAT: "score" (the decoder alone, P = 100, full DP) or "search" (jp.search's first
chunk program of the graph). Each option set is compiled fresh (in-memory caches
cleared) through `Lowered.compile(compiler_options=...)`; the table gives wall and
CPU seconds of the compile (CPU seconds: robust to the load of a shared machine;
XLA compiles on one thread) and the best-of-9 steady call in wall and CPU seconds,
and whether the outputs equal the default's to the bit. Rounds interleave the option
sets so load drift hits all of them.
"""
from __future__ import annotations

import os
import sys
import time

import jax
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances

OPTIONS = {
    "default": {},
    "fast-compile": {"xla_cpu_opt_preset": "CPU_OPT_PRESET_FAST_COMPILE"},
    "O1": {"xla_backend_optimization_level": 1},
    "split1": {"xla_cpu_parallel_codegen_split_count": 1},
    "no-emitters": {"xla_cpu_use_fusion_emitters": False},
    "cheap": {"xla_llvm_disable_expensive_passes": True},
    "concurrency": {"xla_cpu_enable_concurrency_optimized_scheduler": True},
}


def program(which, p, seed):
    if which == "score":
        from jaxplace.decoder.layout import device_graph, search_spec
        from jaxplace.decoder.scoring import score

        spec, g = device_graph(p, search_spec(p))
        X = jax.random.uniform(jax.random.key(0), (100, spec.width))
        return jax.jit(lambda g, X: score(spec, g, X)), (g, X), ()
    from engine_hlo import first_chunks  # experiments/ is this script's folder

    from jaxplace.search import driver

    prog, args = next(iter(first_chunks(p, seed).items()))
    return jax.jit(driver._loop_chunk, static_argnums=(0,)), (prog, *args), (0,)


def main():
    gi = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    which = sys.argv[2] if len(sys.argv) > 2 else "score"
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    names = (sys.argv[4] if len(sys.argv) > 4 else ",".join(OPTIONS)).split(",")
    _, g, k = instances(30, [4, 8, 16], 0)[gi]
    p = jp.Problem(g, k)
    fn, args, static = program(which, p, gi)
    dyn = [a for i, a in enumerate(args) if i not in static]
    print(f"graph {gi} n={p.n} k={k} {which}; load {os.getloadavg()[0]:.1f}")
    print("| options | compile s | compile CPU s | steady s | steady CPU s | same bits |")
    print("|---|---|---|---|---|---|")
    ref = None
    for _ in range(rounds):
        for name in names:
            jax.clear_caches()
            lo = fn.trace(*args).lower()
            t, c = time.perf_counter(), time.process_time()
            co = lo.compile(compiler_options=OPTIONS[name] or None)
            tc, cc = time.perf_counter() - t, time.process_time() - c
            out = jax.block_until_ready(co(*dyn))
            leaves = [np.asarray(x) for x in jax.tree.leaves(out)
                      if not jax.dtypes.issubdtype(getattr(x, "dtype", np.float32),
                                                   jax.dtypes.prng_key)]
            if ref is None:
                ref = leaves
            same = all(np.array_equal(a, b, equal_nan=True) for a, b in
                       zip(ref, leaves, strict=True))
            ws, cs = [], []
            for _ in range(9):
                t, c = time.perf_counter(), time.process_time()
                jax.block_until_ready(co(*dyn))
                ws.append(time.perf_counter() - t)
                cs.append(time.process_time() - c)
            print(f"| {name} | {tc:.2f} | {cc:.2f} | {min(ws):.4f} | {min(cs):.4f} | {same} |",
                  flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
