"""A/B: `jp.search` with the local search's program compiled ahead on a second thread
(`jaxplace.search.local.compile_shift_ahead`, started before the BRKGA phase) against
the plain sequential compiles, cold, in one process (issue 51 item 2).

    JAXPLACE_CACHE_DIR= nice python experiments/engine_ahead.py [GRAPHS] [ROUNDS]

GRAPHS: comma-separated indices of the regal-time suite (graph i: k = [4, 8, 16][i %
3], seed i; default 0,1,2). For each graph, plain then ahead (alternating, the
in-memory caches cleared before each search): wall and CPU seconds of the search, the
first answer's time, and whether cost, evaluations and priorities agree to the bit.
Until the default search calls it itself, "ahead" wraps the throughput objective's
search with the call (what the lead integrates in objectives/throughput/search.py).
"""
from __future__ import annotations

import os
import sys
import time

import jax
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.objectives.throughput import search as ts
from jaxplace.search.local import compile_shift_ahead

ORIGINAL = ts.throughput_search


def with_ahead(req):
    """The default search with the local search's program compiled ahead."""
    opt, problem = req.options, req.problem
    batch = opt.get("local_batch", ts.LOCAL_BATCH)
    focus = opt.get("focus", ts.FOCUS if problem.k >= ts.FOCUS_MIN_K else 0.0)
    P = max(2, min(req.population_size or ts.POPULATION, req.budget // 3))
    brkga = max(int(req.budget * opt.get("brkga_share", ts.BRKGA_SHARE)) // P, 1) * P
    if (req.budget - brkga) // batch >= ts.LOCAL_CHUNK:
        compile_shift_ahead(problem, steps=ts.LOCAL_CHUNK, batch=batch,
                            moves=opt.get("moves", 3), focus=focus, chunk=ts.LOCAL_CHUNK,
                            device=req.device, window=req.window)
    return ORIGINAL(req)


def one(p, seed, ahead: bool):
    ts.throughput_search = with_ahead if ahead else ORIGINAL
    jax.clear_caches()
    seen = []
    t, c = time.perf_counter(), time.process_time()
    r = jp.search(p, seed=seed, progress=False, observer=lambda ev: seen.append(ev.elapsed))
    out = {"wall": time.perf_counter() - t, "cpu": time.process_time() - c,
           "first": seen[0] if seen else float("nan"), "cost": r.cost,
           "evals": r.evaluations, "x": np.asarray(r.priorities).tobytes()}
    ts.throughput_search = ORIGINAL
    return out


def main():
    graphs = [int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "0,1,2").split(",")]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    insts = instances(30, [4, 8, 16], 0)
    print(f"load {os.getloadavg()[0]:.1f}")
    print("| graph | plain wall s | ahead wall s | plain CPU s | ahead CPU s | first answer s "
          "| same result | load |")
    print("|---|---|---|---|---|---|---|---|")
    tot = [0.0, 0.0]
    for _ in range(rounds):
        for i in graphs:
            _, g, k = insts[i]
            p = jp.Problem(g, k)
            a, b = one(p, i, False), one(p, i, True)
            tot[0] += a["wall"]
            tot[1] += b["wall"]
            same = all(a[f] == b[f] for f in ("cost", "evals", "x"))
            print(f"| {i} n={p.n} k={k} | {a['wall']:.1f} | {b['wall']:.1f} | {a['cpu']:.1f} "
                  f"| {b['cpu']:.1f} | {a['first']:.3f} / {b['first']:.3f} | {same} | "
                  f"{os.getloadavg()[0]:.1f} |", flush=True)
    print(f"total wall: plain {tot[0]:.1f} s, ahead {tot[1]:.1f} s")


if __name__ == "__main__":
    main()
