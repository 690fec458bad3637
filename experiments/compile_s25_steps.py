"""Steady step CPU time of a search_many bucket program, HEAD (session 24) step against
this session's, both compiled once, timed alternately (min of --reps x 40 steps each):

    JAXPLACE_CACHE_DIR= nice python experiments/compile_s25_steps.py --buckets 0,5 --reps 10
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_s25 import setup, stub  # noqa: E402

from jaxplace.search.many import program as prog  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--buckets", default="0,5")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--steps", type=int, default=40)
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    print("| bucket | old step CPU ms (min) | new step CPU ms (min) | new / old |")
    print("|---|---|---|---|")
    for j in [int(x) for x in a.buckets.split(",")]:
        b, run, data, state = setup(j)
        comp = {}
        for name in ("old", "none"):
            undo = stub(name)
            try:
                jax.clear_caches()
                fn = jax.jit(prog._many_chunk, static_argnums=(0,))
                comp[name] = fn.lower(run.program, data, state, jnp.int32(1)).compile()
            finally:
                undo()
        s = comp["old"](data, state, jnp.int32(1))
        jax.block_until_ready(s)
        best = {"old": float("inf"), "none": float("inf")}
        for _ in range(a.reps):
            for name in ("old", "none"):
                c = time.process_time()
                jax.block_until_ready(comp[name](data, s, jnp.int32(a.steps)))
                best[name] = min(best[name], (time.process_time() - c) / a.steps)
        print(f"| {j}: N={b.spec.N} K={b.spec.K} window={b.window} | {1e3 * best['old']:.2f} | "
              f"{1e3 * best['none']:.2f} | {best['none'] / best['old']:.3f} |", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
