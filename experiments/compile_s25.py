"""What in a search_many program costs XLA its compile (issue 51, session 25, H3).

For one bucket of the regal-time suite (one problem per call, as on CPUs), lowers the
`_many_chunk` program, attributes its StableHLO ops to source files / functions (debug
locations), compiles it (CPU seconds of this process: XLA compiles on one thread) and
times the steady step (CPU seconds per step, min of reps). `--stub` replaces parts of
the step by trivial stand-ins (probe only: results meaningless) to see what each part
adds to the compile.

    JAXPLACE_CACHE_DIR= nice python experiments/compile_s25.py [--buckets 0,3]
        [--stubs none,old,vmap,score,canonical,neighbours,ask,mutants] [--attr] [--steps 40]
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import os
import re
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import ManySettings, prepare
from jaxplace.search.many import program as prog
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.many.run import BucketRun
from jaxplace.search.programs import ShiftSearch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _prepared(cache={}):  # noqa: B006 (the suite, prepared once per process)
    if not cache:
        probs = [jp.Problem(g, k) for _, g, k in instances(30, [4, 8, 16], 0)]
        cache["p"] = [prepare(p, i) for i, p in enumerate(probs)]
    return cache["p"]


def setup(j):
    prepared = _prepared()
    buckets = plan_buckets([p.cls for p in prepared], 8)
    b = buckets[j]
    run = BucketRun([prepared[b.members[0]]], b, ManySettings(), None)
    data = run._data()
    state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
    return b, run, data, state


def attribute(lowered, depth_files=("jaxplace",)):
    """{source: ops} from the StableHLO text's debug locations (innermost jaxplace frame)."""
    text = lowered.as_text(debug_info=True)
    locs = {}
    for m in re.finditer(r"^#(loc\d*) = (loc\(.*\))$", text, re.M):
        locs[m.group(1)] = m.group(2)

    def frames(ref, seen=0):
        s = locs.get(ref, "")
        out = re.findall(r'"([^"]+\.py)":(\d+)', s)
        for r in re.findall(r"#(loc\d+)", s):
            if seen < 40:
                out += frames(r, seen + 1)
        return out

    cache = {}
    count = collections.Counter()
    for line in text.splitlines():
        if "=" not in line or "loc(#" not in line or line.startswith("#"):
            continue
        if not re.search(r"(stablehlo|chlo)\.\w+", line):
            continue
        ref = re.search(r"loc\(#(loc\d+)\)\s*$", line)
        if not ref:
            continue
        r = ref.group(1)
        if r not in cache:
            fr = frames(r)
            jf = [(f, ln) for f, ln in fr if "/jaxplace/" in f]
            cache[r] = (f"{jf[0][0].split('/jaxplace/')[-1]}:{jf[0][1]}" if jf
                        else "other")
        count[cache[r]] += 1
    return count


def stub(name):
    """Monkeypatch one part away (probe only)."""
    undo = []
    if name == "score":
        old = prog.score
        prog.score = lambda spec, g, X, window=None: jnp.sum(X, 1)
        undo.append(lambda: setattr(prog, "score", old))
    elif name == "canonical":
        old, old_o = ShiftSearch.canonical, ShiftSearch.canonical_order
        ShiftSearch.canonical = lambda self, d, x: x
        ShiftSearch.canonical_order = lambda self, d, o: o.astype(jnp.float32)
        undo.append(lambda: setattr(ShiftSearch, "canonical", old))
        undo.append(lambda: setattr(ShiftSearch, "canonical_order", old_o))
    elif name == "neighbours":
        old = ShiftSearch.neighbours
        ShiftSearch.neighbours = lambda self, d, x, k: jnp.broadcast_to(
            x, (self.batch, self.spec.width)) + jax.random.uniform(k, (self.batch, 1))
        undo.append(lambda: setattr(ShiftSearch, "neighbours", old))
    elif name == "ask":
        from jaxplace.search.brkga import BRKGA
        old = BRKGA._ask
        BRKGA._ask = lambda self, k, s, p: (s.population, s)
        undo.append(lambda: setattr(BRKGA, "_ask", old))
    elif name == "mutants":
        old = prog.sample_priorities
        prog.sample_priorities = lambda d, k, P: jnp.broadcast_to(d["mean"], (P,) + d["mean"].shape)
        undo.append(lambda: setattr(prog, "sample_priorities", old))
    elif name in ("old", "vmap"):  # HEAD's step / the dropped PRNG variant (A/B)
        import compile_s25_old
        import compile_s25_vmap

        from jaxplace.search.brkga import BRKGA
        swaps = ([(prog.ManyProgram, "step", compile_s25_old.step),
                  (ShiftSearch, "neighbours", compile_s25_old.neighbours),
                  (BRKGA, "_ask", compile_s25_old._ask)] if name == "old" else
                 [(ShiftSearch, "neighbours", compile_s25_vmap.neighbours),
                  (BRKGA, "_ask", compile_s25_vmap._ask)])
        for cls, attr, new in swaps:
            was = getattr(cls, attr)
            undo.append(lambda c=cls, a=attr, f=was: setattr(c, a, f))
            setattr(cls, attr, new)
    elif name != "none":
        raise SystemExit(f"unknown stub {name}")
    return lambda: [u() for u in undo]


#: steps run before hashing the state (--hash-steps): past BRKGA into the local search
HASH_STEPS = 60


def measure(b, run, data, state, steps, reps, attr):
    jax.clear_caches()
    fn = jax.jit(prog._many_chunk, static_argnums=(0,))
    t0 = time.perf_counter()
    lowered = fn.lower(run.program, data, state, jnp.int32(1))
    t1 = time.perf_counter()
    c0 = time.process_time()
    compiled = lowered.compile()
    ccpu = time.process_time() - c0
    t2 = time.perf_counter()
    opt = compiled.as_text() or ""
    fusions = opt.count("calls=%fused")
    instr = sum(1 for ln in opt.splitlines() if " = " in ln)
    shlo = len(re.findall(r"(?:stablehlo|chlo)\.\w+", lowered.as_text()))
    s = compiled(data, state, jnp.int32(1))
    jax.block_until_ready(s)
    best = float("inf")
    for _ in range(reps):
        c = time.process_time()
        s2 = compiled(data, s, jnp.int32(steps))
        jax.block_until_ready(s2)
        best = min(best, (time.process_time() - c) / steps)
    out = compiled(data, state, jnp.int32(HASH_STEPS))
    row_phase = int(out.phase[0])
    h = hashlib.sha1()
    for a in jax.tree.leaves(out):
        h.update(np.asarray(a).tobytes())
    row = dict(lower=t1 - t0, compile_wall=t2 - t1, compile_cpu=ccpu, shlo=shlo,
               instr=instr, fusions=fusions, step_cpu=best,
               sha=f"{h.hexdigest()[:12]} ({prog.PHASE_NAMES[row_phase]})")
    if attr:
        row["attr"] = attribute(lowered)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--buckets", default="0")
    ap.add_argument("--stubs", default="none")
    ap.add_argument("--attr", action="store_true")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--hash-steps", type=int, default=60)
    a = ap.parse_args()
    global HASH_STEPS
    HASH_STEPS = a.hash_steps
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("| bucket | stub | trace+lower s | compile wall s | compile CPU s | StableHLO ops |"
          " HLO instr | fusions | step CPU ms | state sha1 after --hash-steps (phase) |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for _ in range(a.rounds):
        for j in [int(x) for x in a.buckets.split(",")]:
            b, run, data, state = setup(j)
            for st in a.stubs.split(","):
                undo = stub(st)
                try:
                    r = measure(b, run, data, state, a.steps, a.reps, a.attr)
                finally:
                    undo()
                print(f"| {j}: N={b.spec.N} K={b.spec.K} window={b.window} | {st} | "
                      f"{r['lower']:.2f} | {r['compile_wall']:.2f} | {r['compile_cpu']:.2f} | "
                      f"{r['shlo']} | {r['instr']} | {r['fusions']} | "
                      f"{1e3 * r['step_cpu']:.2f} | {r['sha']} |", flush=True)
                if a.attr:
                    tot = sum(r["attr"].values())
                    for k, v in r["attr"].most_common(40):
                        print(f"    {v:5d} {100 * v / tot:5.1f}%  {k}")
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
