"""A/B of decoder layouts on whole searches (issue 51 item 2): compile seconds, steady
seconds per chunk, and the results to the bit, in one process.

    JAXPLACE_CACHE_DIR= nice python experiments/engine_ab.py --graphs 0,1,2 \
        --variants base,one [--many] [--json /tmp/ab.json]

For each graph of the regal-time suite (graph i: k = [4, 8, 16][i % 3], seed i) and
each variant in turn (alternating, so load drift hits both), with the in-memory
caches cleared: `jp.search(problem, seed=i)` through `jaxplace.bench.phases.ChunkTimer`
(every chunk program compiled fresh and timed), and with --many `jp.search_many([p],
seed=i)`. Prints compile / steady figures per variant and whether costs, evaluations
and priorities agree to the bit across variants.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

import jax
import numpy as np

import jaxplace as jp
from jaxplace.bench.phases import ChunkTimer
from jaxplace.bench.search_time import instances

VARIANTS = {
    "base": {"WINDOW_BLOCKS": 4, "DP_SCANS": 0},
    "one": {"DP_SCANS": 1},
    "two": {"DP_SCANS": 2},
    "three": {"DP_SCANS": 3},
}


def set_variant(name):
    from jaxplace.decoder import lanes

    for k, v in VARIANTS[name].items():
        setattr(lanes, k, v)


def digest(x) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(x, np.float32)).tobytes()).hexdigest()[:12]


def one_search(p, seed):
    jax.clear_caches()
    with ChunkTimer() as t:
        t0 = time.perf_counter()
        r = jp.search(p, seed=seed, progress=False)
        wall = time.perf_counter() - t0
    new, used = t.take()
    progs = [{"label": pt.label, "trace": pt.trace, "lower": pt.lower,
              "compile": pt.compile, "first": pt.first(), "steady": pt.steady(),
              "steps": pt.calls[0][2] if pt.calls else 0} for pt in used]
    return {"cost": r.cost, "evaluations": r.evaluations, "x": digest(r.priorities),
            "wall": wall, "programs": progs}


def one_many(p, seed):
    jax.clear_caches()
    t0 = time.perf_counter()
    r = jp.search_many([p], seed=seed, workers=1)[0]
    return {"cost": r.cost, "evaluations": r.evaluations, "x": digest(r.priorities),
            "wall": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="0,1,2")
    ap.add_argument("--variants", default="base,one")
    ap.add_argument("--many", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    names = a.variants.split(",")
    insts = instances(30, [4, 8, 16], 0)
    out = {v: {} for v in names}
    print(f"start load {os.getloadavg()[0]:.1f}", flush=True)
    for i in [int(x) for x in a.graphs.split(",")]:
        _, g, k = insts[i]
        p = jp.Problem(g, k)
        for v in names:
            set_variant(v)
            rec = {"search": one_search(p, i), "load": os.getloadavg()[0]}
            if a.many:
                rec["many"] = one_many(p, i)
            out[v][i] = rec
            s = rec["search"]
            progs = "; ".join(f"{q['label']}: compile {q['compile']:.1f} s trace "
                              f"{q['trace']:.1f} lower {q['lower']:.1f} steady "
                              f"{q['steady']:.3f} s/{q['steps']} steps"
                              for q in s["programs"])
            print(f"graph {i} n={p.n} k={k} {v}: cost {s['cost']:.6g} evals "
                  f"{s['evaluations']} x {s['x']} wall {s['wall']:.1f} s | {progs}"
                  + (f" | many cost {rec['many']['cost']:.6g} evals "
                     f"{rec['many']['evaluations']} wall {rec['many']['wall']:.1f} s"
                     if a.many else "") + f" | load {rec['load']:.1f}", flush=True)
    base = names[0]
    for v in names[1:]:
        same = all(out[v][i][w][f] == out[base][i][w][f] for i in out[base]
                   for w in out[base][i] if w != "load"
                   for f in ("cost", "evaluations", "x"))
        tot = lambda name, key: sum(q[key] for i in out[name]  # noqa: E731
                                    for q in out[name][i]["search"]["programs"])
        print(f"{v} vs {base}: results bit-identical: {same}; compile {tot(v, 'compile'):.1f}"
              f" vs {tot(base, 'compile'):.1f} s; steady chunk sum {tot(v, 'steady'):.3f} vs "
              f"{tot(base, 'steady'):.3f} s")
    print(f"end load {os.getloadavg()[0]:.1f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
