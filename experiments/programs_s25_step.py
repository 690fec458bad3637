"""Session 25 (issue 51, H1): what padding a graph's degree widths (Spec.D event slots,
Spec.S successors) costs the compiled search step, and that it changes nothing.

    nice python experiments/programs_s25_step.py [--graphs 12,6,8,15] [--variants ...]

For each suite graph (regal_set(30, seed=0), k = [4, 8, 16][i % 3]) and each (D, S)
padding, runs jp.search's one-problem bucket program (`many_chunk`) to the end of its
search (no pool refresh, no polish) and reports compile seconds, process CPU seconds
and wall of the steps, and whether the final best cost, evaluations and best
priorities are bit-identical to the graph's own padding.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many.api import ManySettings, prepare
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.many.program import DONE, many_chunk
from jaxplace.search.many.run import BucketRun


def run(prep, bucket, seed=0):
    r = BucketRun([prep], bucket, ManySettings(seed=seed), None)
    t0 = time.perf_counter()
    r.compile()
    t_compile = time.perf_counter() - t0
    data, state = r._ready
    steps = 0
    c0, w0 = time.process_time(), time.perf_counter()
    while int(np.asarray(state.phase)[0]) != DONE:
        state = many_chunk(r.program, data, state, jnp.int32(8))
        steps += 8
    jax.block_until_ready(state)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return t_compile, cpu, wall, steps, state


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="12,6,8,15")
    ap.add_argument("--variants", default="own,8x16,16x16,32x32,64x32",
                    help="comma list of DxS or DxSxK paddings (own: the graph's search_spec), "
                         "or wL / wfull: another static window")
    a = ap.parse_args()
    inst = {i: (g, k) for i, g, k in instances(30, (4, 8, 16), 0)}
    for i in [int(x) for x in a.graphs.split(",")]:
        g, k = inst[i]
        prep = prepare(jp.Problem(g, k), 0)
        base = plan_buckets([prep.cls])[0]
        ref = None
        for v in a.variants.split(","):
            if v == "own":
                b = base
            elif v.startswith("w"):  # another static window (None: the full DP)
                w = None if v == "wfull" else int(v[1:])
                b = dataclasses.replace(base, shared=(w,))
            else:
                D, S, *K = (int(x) for x in v.split("x"))
                K = K[0] if K else base.spec.K
                if D < base.spec.D or S < base.spec.S or K < base.spec.K:
                    continue
                b = dataclasses.replace(base, spec=dataclasses.replace(base.spec, D=D, S=S,
                                                                       K=K))
            tc, cpu, wall, steps, st = run(prep, b)
            out = (float(np.asarray(st.best_f)[0]), int(np.asarray(st.evals)[0]),
                   np.asarray(st.best_x)[0, :g.num_nodes].tobytes())
            ref = ref or out
            if out[0] != ref[0]:  # the float64 reference cost of the best order
                ref_cost = jp.reference.decode_reference(
                    jp.Problem(g, k), np.asarray(st.best_x)[0, :g.num_nodes]).cost
                print(f"  reference cost of the best order: {ref_cost:.6g}")
            s = b.spec
            print(f"graph {i:2d} n={g.num_nodes} k={k} N={s.N} K={s.K} window={b.window} "
                  f"D={s.D:2d} S={s.S:2d}: compile {tc:5.2f} s, {steps} steps "
                  f"cpu {cpu:6.2f} s wall {wall:5.2f} s ({1e3 * wall / steps:.2f} ms/step) "
                  f"best {out[0]:.6g} evals {out[1]} identical {out == ref}", flush=True)


if __name__ == "__main__":
    main()
