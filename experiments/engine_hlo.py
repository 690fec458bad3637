"""Why does a search program take 10-30 s of XLA compile? (issue 51 item 2)

For graphs of the regal-time suite, builds the compiled programs of `jp.search`
(BRKGA or policy+BRKGA chunk, ShiftSearch chunk) and of `search_many` (the bucket's
`_many_chunk`), and the decoder's parts on their own (Kahn, the transfer events, the
slicing DP, the whole `score`), and prints for each: StableHLO ops and while loops
(lowered, before XLA), optimized-HLO instructions and fusions (after XLA's passes),
trace / lower / XLA compile seconds and the steady seconds per call (best of 3).

    JAXPLACE_CACHE_DIR= nice python experiments/engine_hlo.py [--graphs 0,1,2]
        [--what parts,search,many] [--variants base,one,...]

One process, in-memory caches cleared before each program, no persistent cache.
"""
from __future__ import annotations

import argparse
import os
import re
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances

#: Decoder restructurings to compare (jaxplace.decoder.lanes constants).
VARIANTS = {
    "base": {"WINDOW_BLOCKS": 4, "DP_SCANS": 0},
    "one": {"DP_SCANS": 1},
    "two": {"DP_SCANS": 2},
    "three": {"DP_SCANS": 3},
}


def set_variant(name: str) -> None:
    from jaxplace.decoder import lanes

    for k, v in VARIANTS[name].items():
        setattr(lanes, k, v)


def hlo_stats(lowered, compiled) -> dict:
    text = lowered.as_text()
    ops = len(re.findall(r"= (?:stablehlo|chlo|mhlo)\.|\"stablehlo\.|stablehlo\.\w+ ", text))
    whiles = text.count("stablehlo.while")
    opt = compiled.as_text() or ""
    instr = sum(1 for line in opt.splitlines() if " = " in line and not line.startswith(
        ("HloModule", "ENTRY")))
    fusions = len(re.findall(r"\bfusion\(", opt)) + len(re.findall(r"kind=k", opt)) // 2
    return {"shlo_chars": len(text), "shlo_ops": ops, "whiles": whiles,
            "hlo_instr": instr, "fusions": opt.count("calls=%fused"),
            "hlo_whiles": len(re.findall(r" while\(", opt)), "_f": fusions}


def measure(name, fn, args, static=(), steady=False, reps=3):
    jax.clear_caches()
    jf = jax.jit(fn, static_argnums=static)
    t0 = time.perf_counter()
    tr = jf.trace(*args)
    t1 = time.perf_counter()
    lo = tr.lower()
    t2 = time.perf_counter()
    c2 = time.process_time()
    co = lo.compile()
    t3 = time.perf_counter()
    cpu_compile = time.process_time() - c2
    st = hlo_stats(lo, co)
    dyn = [a for i, a in enumerate(args) if i not in static]
    row = {"name": name, "trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2, **st}
    if steady:
        jax.block_until_ready(co(*dyn))
        ts, cs = [], []
        for _ in range(reps):
            a, c = time.perf_counter(), time.process_time()
            jax.block_until_ready(co(*dyn))
            ts.append(time.perf_counter() - a)
            cs.append(time.process_time() - c)
        row["steady"] = min(ts)
        row["steady_cpu"] = min(cs)
    print(f"| {name} | {row['trace']:.2f} | {row['lower']:.2f} | {row['compile']:.2f} | "
          f"{st['shlo_ops']} | {st['whiles']} | {st['hlo_instr']} | {st['fusions']} | "
          f"{row.get('steady', float('nan')):.4f} | {cpu_compile:.2f} | "
          f"{row.get('steady_cpu', float('nan')):.4f} |", flush=True)
    return row


#: --pieces: also Kahn, the events and the DP alone; --reps: steady calls (best of).
PIECES = False
REPS = 3


def parts(problem, P=100):
    """The decoder's parts for the search class of `problem`, full DP and window."""
    from jaxplace.decoder import lanes
    from jaxplace.decoder.layout import device_graph, search_spec
    from jaxplace.decoder.scoring import score
    from jaxplace.decoder.window import class_window

    spec = search_spec(problem)
    spec, g = device_graph(problem, spec)
    X = jax.random.uniform(jax.random.key(0), (P, spec.width))
    W = class_window(spec)
    tag = f"N={spec.N} K={spec.K}"
    prio = lanes.sortable(X.T, g.n)
    order = jax.jit(lambda g, p: lanes.kahn_lanes(spec, g, p))(g, prio)
    rows = []
    if PIECES:
        rows += [
            measure(f"{tag} kahn_lanes", lambda g, p: lanes.kahn_lanes(spec, g, p),
                    (g, prio)),
            measure(f"{tag} events_lanes", lambda g, o: lanes.events_lanes(spec, g, o),
                    (g, order)),
            measure(f"{tag} slice_lanes full", lambda g, o: lanes.slice_lanes(spec, g, o),
                    (g, order), steady=True)]
    rows.append(measure(f"{tag} score full", lambda g, X: score(spec, g, X), (g, X),
                        steady=True, reps=REPS))
    if W is not None:
        rows.append(measure(f"{tag} score window={W}",
                            lambda g, X: score(spec, g, X, window=W), (g, X),
                            steady=True, reps=REPS))
    return rows


def first_chunks(problem, seed) -> dict:
    """{program: its first chunk's arguments} of the programs `jp.search`'s default
    builds for `problem`, without running any of them."""
    from jaxplace.search import driver

    seen = {}
    real = driver.chunk_program

    def spy(program, data, carry, best_x, best_f, keys, count):
        # record the first call of each program, then answer "no improvement" so the
        # search moves on to its next phase without running anything
        seen.setdefault(program, (data, carry, best_x, best_f, keys, count))
        return carry, best_x, best_f, jnp.full(keys.shape[:1], jnp.inf, jnp.float32)

    driver.chunk_program = spy
    try:
        jp.search(problem, seed=seed, progress=False, search_only=True, polish=False)
    finally:
        driver.chunk_program = real
    return seen


def search_programs(problem, seed):
    """The chunk programs `jp.search`'s default builds for `problem` (first chunk's
    arguments), measured like the driver calls them."""
    from jaxplace.search import driver

    rows = []
    for program, args in first_chunks(problem, seed).items():
        rows.append(measure(f"search {type(program).__name__} N={program_spec(program)}",
                            driver._loop_chunk, (program, *args), static=(0,), steady=True))
    return rows


def program_spec(program):
    spec = getattr(program, "spec", None) or getattr(program.fitness, "spec", None)
    w = getattr(program, "window", None)
    if w is None and hasattr(program, "fitness"):
        w = getattr(program.fitness, "window", None)
    return f"{spec.N} K={spec.K} window={w}"


def many_program(problem, index):
    from jaxplace.search.many import ManySettings, prepare
    from jaxplace.search.many.buckets import plan_buckets
    from jaxplace.search.many.program import _many_chunk
    from jaxplace.search.many.run import BucketRun

    prep = prepare(problem, index)
    b = plan_buckets([prep.cls])[0]
    run = BucketRun([prep], b, ManySettings(), None)
    data = run._data()
    state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
    return [measure(f"many N={b.spec.N} K={b.spec.K} window={b.window}", _many_chunk,
                    (run.program, data, state, jnp.int32(8)), static=(0,), steady=True)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="0,1,2")
    ap.add_argument("--what", default="parts,search,many")
    ap.add_argument("--variants", default="base",
                    help="comma-separated of " + ", ".join(VARIANTS))
    ap.add_argument("--pieces", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the whole list")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    global PIECES, REPS
    PIECES, REPS = a.pieces, a.reps
    what = a.what.split(",")
    insts = instances(30, [4, 8, 16], 0)
    print(f"load {os.getloadavg()[0]:.1f}")
    print("| program | trace s | lower s | XLA compile s | StableHLO ops | whiles | "
          "HLO instr | fusions | steady s | compile CPU s | steady CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for i in [int(x) for x in a.graphs.split(",")] * a.rounds:
        _, g, k = insts[i]
        p = jp.Problem(g, k)
        for v in a.variants.split(","):
            set_variant(v)
            print(f"| graph {i} n={p.n} k={k} variant {v} | | | | | | | | |", flush=True)
            if "parts" in what:
                parts(p)
            if "search" in what:
                search_programs(p, i)
            if "many" in what:
                many_program(p, i)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
