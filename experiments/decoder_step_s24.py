"""Per-evaluation cost of the lanes decoder at search_many's shapes (issue 51, H1 s24).

For the regal-time suite's buckets (`bucket_summary` of the 30 graphs, k = 4 / 8 / 16),
pads the bucket's first member to the bucket's Spec and times, with P = 100 candidates
as search_many scores them (vmapped over a group of one problem):

    score   the whole decoder (`scoring.score`, the bucket's window), vmapped, G = 1
    plain   the same without the vmap
    kahn    `lanes.kahn_lanes` alone (on `sortable` priorities)
    events  `lanes.events_lanes` alone (on Kahn's orders)
    slice   `lanes.slice_lanes` (events + the DP) on Kahn's orders

Each timing is the best of `--reps` calls (microseconds per candidate). With
`--old PATH`, the same functions from another checkout's jaxplace (e.g. a git worktree
of the commit before) are timed alternately in the same process and their costs
compared to the bit.

    nice python experiments/decoder_step_s24.py [--buckets 0,1] [--reps 20] [--old /tmp/h1_before]
    nice python experiments/decoder_step_s24.py --hlo 0   # fusion count of the score
    nice python experiments/decoder_step_s24.py --pad-d 0:0:16,8 --pad-d 2:3:64,40

`--pad-d BUCKET:PROBLEM:D1,D2,...` times the score of one problem (suite index) padded
to its bucket's Spec with other event-slot widths D (layout.search_spec pads D to
max(pow2(D), 16)); the costs must not change (padded slots add exact zeros).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.decoder import lanes, scoring
from jaxplace.decoder.layout import stack_graphs
from jaxplace.search.many import bucket_summary

P = 100


def load_old(path: str):
    """(lanes, scoring) modules of another checkout, loaded under other names."""
    mods = {}
    for name in ("lanes", "scoring"):
        spec = importlib.util.spec_from_file_location(
            f"old_{name}", f"{path}/jaxplace/decoder/{name}.py")
        m = importlib.util.module_from_spec(spec)
        sys.modules[f"old_{name}"] = m
        spec.loader.exec_module(m)
        mods[name] = m
    mods["scoring"].lanes = mods["lanes"]  # its `from jaxplace.decoder import lanes`
    return mods["lanes"], mods["scoring"]


def fns(L, S, spec, window):
    """Jitted parts of one decoder module pair (L: lanes, S: scoring)."""
    def score(g, X):
        return jax.vmap(lambda gg, xx: S.score(spec, gg, xx, window=window))(g, X)

    def plain(g, X):
        g0 = jax.tree.map(lambda a: a[0], g)
        return S.score(spec, g0, X[0], window=window)

    def kahn(g, X):
        g0 = jax.tree.map(lambda a: a[0], g)
        return L.kahn_lanes(spec, g0, L.sortable(X[0].T, g0.n))

    def events(g, order):
        g0 = jax.tree.map(lambda a: a[0], g)
        return L.events_lanes(spec, g0, order)

    def slice_(g, order):
        g0 = jax.tree.map(lambda a: a[0], g)
        return L.slice_lanes(spec, g0, order, window)

    return {"score": jax.jit(score), "plain": jax.jit(plain), "kahn": jax.jit(kahn),
            "events": jax.jit(events), "slice": jax.jit(slice_)}


def best_time(f, args, reps):
    """(best wall, best process CPU) seconds of `reps` calls."""
    jax.block_until_ready(f(*args))
    ts, cs = [], []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        jax.block_until_ready(f(*args))
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return min(ts), min(cs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--buckets", default=None, help="bucket indices (default all)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--parts", default="score,plain,kahn,events,slice")
    ap.add_argument("--old", default=None, help="checkout whose decoder to compare")
    ap.add_argument("--hlo", type=int, default=None, help="print HLO stats of bucket i")
    ap.add_argument("--pad-d", action="append", default=[],
                    help="BUCKET:PROBLEM:D1,D2 (see the module doc)")
    a = ap.parse_args()
    probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
    buckets = bucket_summary(probs)
    if a.pad_d:
        return pad_d(a, probs, buckets)
    pick = range(len(buckets)) if a.buckets is None else [int(b) for b in a.buckets.split(",")]
    parts = a.parts.split(",")
    impls = [("new", lanes, scoring)]
    if a.old:
        impls.insert(0, ("old", *load_old(a.old)))
    rng = np.random.default_rng(0)
    print(f"load {open('/proc/loadavg').read().split()[0]}")
    print("| bucket | N | K | D | S | window | n | impl | " + " | ".join(
        f"{p} us/cand (wall / CPU)" for p in parts) + " |")
    print("|" + "---|" * (8 + len(parts)))
    for bi in pick:
        b = buckets[bi]
        prob = probs[b.members[0]]
        spec, g = stack_graphs([prob], spec=b.spec)
        X = jnp.asarray(rng.random((1, P, spec.width)), jnp.float32)
        per = {}
        for name, L, S in impls:
            f = fns(L, S, spec, b.window)
            if a.hlo is not None and name == "new" and bi == a.hlo:
                txt = f["score"].lower(g, X).compile().as_text()
                print(f"fusions {txt.count('calls=%fused')} whiles {txt.count(' while(')} "
                      f"scatters {txt.count(' scatter(')} gathers {txt.count(' gather(')}")
            order = f["kahn"](g, X)
            per[name] = (f, order)
        outs = {name: (np.asarray(f["score"](g, X)), np.asarray(order))
                for name, (f, order) in per.items()}
        if "old" in outs:
            same = all(np.array_equal(outs["old"][i], outs["new"][i]) for i in range(2))
        times = {name: {p: [] for p in parts} for name in per}
        for _ in range(2):  # alternate old/new twice: load drifts
            for name, (f, order) in per.items():
                for p in parts:
                    arg = X if p in ("score", "plain", "kahn") else order
                    times[name][p].append(best_time(f[p], (g, arg), a.reps // 2 or 1))
        for name in per:
            cells = " | ".join(
                f"{min(w for w, _ in times[name][p]) * 1e6 / P:.1f} / "
                f"{min(c for _, c in times[name][p]) * 1e6 / P:.1f}" for p in parts)
            print(f"| {bi} | {spec.N} | {spec.K} | {spec.D} | {spec.S} | {b.window} | "
                  f"{prob.n} | {name} | {cells} |", flush=True)
        if "old" in outs:
            print(f"|  bit-identical costs and orders (old vs new): {same} |")


def pad_d(a, probs, buckets):
    """Score CPU time of one problem at several slot widths D (same costs)."""
    rng = np.random.default_rng(0)
    print(f"load {open('/proc/loadavg').read().split()[0]}")
    for arg in a.pad_d:
        bi, m, ds = arg.split(":")
        b, prob = buckets[int(bi)], probs[int(m)]
        X, cells, outs = None, [], []
        for D in [int(x) for x in ds.split(",")]:
            spec, g = stack_graphs([prob], spec=dataclasses.replace(b.spec, D=D))
            if X is None:
                X = jnp.asarray(rng.random((1, P, spec.width)), jnp.float32)
            f = fns(lanes, scoring, spec, b.window)["score"]
            outs.append(np.asarray(f(g, X)))
            cpu = min(best_time(f, (g, X), a.reps // 2 or 1)[1] for _ in range(2))
            cells.append(f"D={D}: {cpu * 1e6 / P:.1f}")
        same = all(np.array_equal(o, outs[0]) for o in outs)
        print(f"bucket {bi} (N={b.spec.N} K={b.spec.K} window={b.window}) problem {m} "
              f"n={prob.n}: CPU us/cand {', '.join(cells)}; same costs: {same}", flush=True)


if __name__ == "__main__":
    main()
