"""Compile time of one search_many program (a bucket of the regal-time suite, one
problem per call) and its step time; run with different XLA_FLAGS to compare:

    JAXPLACE_CACHE_DIR= python experiments/many_compile.py [bucket index]
    JAXPLACE_CACHE_DIR= XLA_FLAGS=--xla_backend_optimization_level=1 python experiments/many_compile.py
"""
import sys
import time

import jax
import jax.numpy as jnp

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import ManySettings, prepare
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.many.program import _many_chunk
from jaxplace.search.many.run import BucketRun

probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
prepared = [prepare(p, i) for i, p in enumerate(probs)]
buckets = plan_buckets([p.cls for p in prepared], 8)
j = int(sys.argv[1]) if len(sys.argv) > 1 else 0
b = buckets[j]
run = BucketRun([prepared[b.members[0]]], b, ManySettings(), None)
data = run._data()
state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
fn = jax.jit(_many_chunk, static_argnums=(0,))
t0 = time.perf_counter()
lowered = fn.lower(run.program, data, state, jnp.int32(1))
t1 = time.perf_counter()
compiled = lowered.compile()
t2 = time.perf_counter()
hlo = lowered.as_text()
print(f"bucket N={b.spec.N} K={b.spec.K} window={b.window}: trace+lower {t1 - t0:.2f} s, "
      f"XLA compile {t2 - t1:.2f} s, StableHLO {len(hlo) / 1e3:.0f} kB")
s = compiled(data, state, jnp.int32(1))
jax.block_until_ready(s)
t0 = time.perf_counter()
s = compiled(data, s, jnp.int32(40))
jax.block_until_ready(s)
print(f"step time {1e3 * (time.perf_counter() - t0) / 40:.2f} ms (100 candidates)")

# the decoder alone on the same 100 candidates, and its share of the step
from jaxplace.decoder.scoring import score  # noqa: E402

g = jax.tree.map(lambda a: a[0], data.g)
X = run.X0[0]
for P in (100, 400):
    XP = jnp.tile(X, (P // 100, 1))
    sc = jax.jit(lambda g, X: score(b.spec, g, X, window=b.window))
    jax.block_until_ready(sc(g, XP))
    t0 = time.perf_counter()
    for _ in range(20):
        jax.block_until_ready(sc(g, XP))
    print(f"score alone, {P} candidates: {1e3 * (time.perf_counter() - t0) / 20:.2f} ms")
