"""`jaxplace bench search --phases`: the cold path, phase by phase.

Two tables on the regal-time suite (`--count` graphs, k = 4, 8, 16 unless `--ks`):

- `jp.search` per graph, as a user calls it: every compiled chunk program of the
  search (BRKGA or policy+BRKGA, the local search) timed as Python tracing, lowering,
  XLA compile, its first chunk and its steady chunk (the median of its later full
  chunks), with the time to the first answer (the first report to the observer), the
  time before the first program (planner facts, first answer, policy), the search's
  wall and cost. Programs are compiled once per process as `jax.jit` would: a graph
  whose padded class was compiled before reuses the program ("reused").
- `jp.search_many`'s bucket programs (one problem per call, the CPU default): trace,
  lower, XLA compile, first chunk and steady chunk (best of 3) per program, with XLA
  CPU option candidates (`--xla-options default,O0,cheap`).

Both compile fresh in this process (in-memory caches cleared); set
JAXPLACE_CACHE_DIR= to keep the persistent cache out (else "XLA compile" may be a
cache read).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field

import jaxplace as jp
from jaxplace.bench.runs import markdown_table
from jaxplace.bench.search_time import instances
from jaxplace.errors import JaxplaceError

#: XLA CPU compiler options measured for search_many's programs.
XLA_OPTIONS = {"default": {}, "O0": {"xla_backend_optimization_level": 0},
               "cheap": {"xla_llvm_disable_expensive_passes": True}}
PHASES = ("trace s", "lower s", "XLA compile s", "first chunk s", "steady chunk s")


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


# -- jp.search ----------------------------------------------------------------------


@dataclass
class ProgramTimes:
    """One compiled chunk program of the driver: its phases and every call."""

    label: str
    trace: float
    lower: float
    compile: float
    compiled: object
    calls: list = field(default_factory=list)  # (steps, seconds, chunk length)

    def first(self) -> float:
        return self.calls[0][1] if self.calls else float("nan")

    def steady(self) -> float:
        """Median seconds of the later calls that ran a full chunk (nan: none)."""
        full = [s for c, s, n in self.calls[1:] if c == n]
        return statistics.median(full) if full else float("nan")


class ChunkTimer:
    """Stands in for `jaxplace.search.driver.chunk_program` (`with ChunkTimer() as t`):
    each new (program, argument shapes) is traced, lowered and compiled explicitly and
    timed; each call is timed to completion. `new` lists the programs built since the
    last `take_new()`."""

    def __init__(self):
        self.programs: dict = {}
        self.new: list[ProgramTimes] = []
        self.used: list[ProgramTimes] = []

    def __enter__(self) -> ChunkTimer:
        from jaxplace.search import driver

        self._real = driver.chunk_program
        driver.chunk_program = self
        return self

    def __exit__(self, *exc) -> None:
        from jaxplace.search import driver

        driver.chunk_program = self._real

    def take(self) -> tuple[list[ProgramTimes], list[ProgramTimes]]:
        """(programs built, programs used) since the last call."""
        new, used = self.new, self.used
        self.new, self.used = [], []
        return new, used

    def __call__(self, program, *args):
        import jax

        leaves, tree = jax.tree.flatten(args[:-1])
        key = (program, tree, tuple((getattr(a, "shape", None), str(getattr(a, "dtype", "")))
                                    for a in leaves))
        pt = self.programs.get(key)
        if pt is None:
            t0 = time.perf_counter()
            traced = self._real.trace(program, *args)
            t1 = time.perf_counter()
            lowered = traced.lower()
            t2 = time.perf_counter()
            compiled = lowered.compile()
            t3 = time.perf_counter()
            pt = ProgramTimes(_label(program), t1 - t0, t2 - t1, t3 - t2, compiled)
            self.programs[key] = pt
            self.new.append(pt)
        if pt not in self.used:
            self.used.append(pt)
        t0 = time.perf_counter()
        out = jax.block_until_ready(pt.compiled(*args))
        pt.calls.append((int(args[-1]), time.perf_counter() - t0, int(args[-2].shape[0])))
        return out


def _label(program) -> str:
    spec = getattr(program, "spec", None)
    window = getattr(program, "window", None)
    fit = getattr(program, "fitness", None)
    if spec is None and fit is not None:
        spec, window = getattr(fit, "spec", None), getattr(fit, "window", None)
    shape = "" if spec is None else f" N={spec.N} K={spec.K} window={window}"
    return f"{type(program).__name__}{shape}"


def search_phases(problems, seed: int = 0) -> tuple[list[list], dict]:
    """The `jp.search` table's rows over `problems` (module doc) and totals."""
    import jax

    jax.clear_caches()
    rows, tot = [], {"wall": 0.0, "first": [], "compile": 0.0, "trace": 0.0,
                     "lower": 0.0, "programs": 0}
    with ChunkTimer() as timer:
        for i, p in enumerate(problems):
            seen = []
            t0 = time.perf_counter()
            res = jp.search(p, seed=seed + i, progress=False,
                            observer=lambda ev, seen=seen: seen.append(
                                (ev.elapsed, ev.best_cost, ev.phase)))
            wall = time.perf_counter() - t0
            new, used = timer.take()
            first = seen[0][0] if seen else float("nan")
            tot["wall"] += wall
            tot["first"].append(first)
            head = [f"{i} n={p.n} k={p.k}", f"{first:.3f}", f"{wall:.1f}",
                    f"{res.cost / res.lower_bound:.4f}"]
            if not used:
                rows.append(head + ["(no compiled program)"] + [""] * len(PHASES))
            for j, pt in enumerate(used):
                fresh = pt in new
                if fresh:
                    tot["compile"] += pt.compile
                    tot["trace"] += pt.trace
                    tot["lower"] += pt.lower
                    tot["programs"] += 1
                ph = ([f"{pt.trace:.2f}", f"{pt.lower:.2f}", f"{pt.compile:.2f}"] if fresh
                      else ["reused", "", ""])
                rows.append((head if j == 0 else [""] * len(head))
                            + [pt.label, *ph, f"{pt.first():.3f}", f"{pt.steady():.3f}"])
    return rows, tot


def run_search_phases(problems, seed: int) -> str:
    t0 = time.perf_counter()
    rows, tot = search_phases(problems, seed)
    firsts = [f for f in tot["first"] if f == f]
    head = ["graph", "first answer s", "wall s", "cost / LB", "program", *PHASES]
    return (f"jp.search per graph ({len(problems)} graphs, seed {seed}), cold in this "
            f"process: {time.perf_counter() - t0:.1f} s in all, {tot['programs']} programs "
            f"compiled (trace {tot['trace']:.1f} s, lower {tot['lower']:.1f} s, XLA compile "
            f"{tot['compile']:.1f} s); first answer after at most "
            f"{max(firsts, default=float('nan')):.3f} s (median "
            f"{statistics.median(firsts) if firsts else float('nan'):.3f} s); load "
            f"average {load_average():.1f}\n\n" + markdown_table(head, rows))


# -- search_many ----------------------------------------------------------------------


def program_phases(run, options: dict, steps: int = 8) -> list[float]:
    """Seconds of (trace, lower, compile, first call, steady call) of a `BucketRun`'s
    program for `steps` steps, compiled with XLA `options`."""
    import jax
    import jax.numpy as jnp

    from jaxplace.search.many.program import many_chunk

    data = run._data()
    state = jax.vmap(run.program.init_state)(run.X0, data.x_seed)
    count = jnp.int32(steps)
    jax.clear_caches()
    t = [time.perf_counter()]
    traced = many_chunk.trace(run.program, data, state, count)
    t.append(time.perf_counter())
    lowered = traced.lower()
    t.append(time.perf_counter())
    compiled = lowered.compile(compiler_options=options or None)
    t.append(time.perf_counter())
    jax.block_until_ready(compiled(data, state, count))
    t.append(time.perf_counter())
    steady = []
    for _ in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(data, state, count))
        steady.append(time.perf_counter() - t0)
    return [b - a for a, b in zip(t, t[1:], strict=False)] + [min(steady)]


def run_many_phases(problems, names: list[str], seed: int) -> str:
    from jaxplace.search.many import ManySettings, prepare
    from jaxplace.search.many.buckets import plan_buckets
    from jaxplace.search.many.run import BucketRun

    t0 = time.perf_counter()
    prepared = [prepare(p, i) for i, p in enumerate(problems)]
    t_prep = time.perf_counter() - t0
    buckets = plan_buckets([p.cls for p in prepared])
    rows, tot = [], {o: [0.0] * len(PHASES) for o in names}
    for b in buckets:
        run = BucketRun([prepared[b.members[0]]], b, ManySettings(seed=seed), None)
        for o in names:
            ph = program_phases(run, XLA_OPTIONS[o])
            tot[o] = [x + y for x, y in zip(tot[o], ph, strict=True)]
            rows.append([f"N={b.spec.N} K={b.spec.K} window={b.window}", o,
                         *[f"{x:.3f}" for x in ph]])
            print(" | ".join(rows[-1]), flush=True)
    rows += [[f"total ({len(buckets)} programs)", o, *[f"{x:.3f}" for x in tot[o]]]
             for o in names]
    return (f"search_many bucket programs ({len(problems)} graphs, seed {seed}); prepare "
            f"(heuristic orders, classes, policy) {t_prep:.1f} s; load average "
            f"{load_average():.1f}\n\n"
            + markdown_table(["program", "XLA options", *PHASES], rows))


def run_phases(args) -> int:
    """`--phases` (module doc)."""
    names = [o.strip() for o in args.xla_options.split(",") if o.strip()]
    bad = [o for o in names if o not in XLA_OPTIONS]
    if bad:
        raise JaxplaceError(f"unknown {', '.join(bad)}; known: {', '.join(XLA_OPTIONS)}",
                            field="--xla-options")
    which = [w.strip() for w in args.phases_of.split(",") if w.strip()]
    if bad := [w for w in which if w not in ("search", "many")]:
        raise JaxplaceError(f"unknown {', '.join(bad)}; known: search, many",
                            field="--phases-of")
    ks = [4, 8, 16] if args.ks == "2,4,8,16,32,64" else [int(k) for k in args.ks.split(",")]
    count = 30 if args.count is None else args.count
    problems = [jp.Problem(g, k) for _, g, k in instances(count, ks, args.seed)]
    texts = []
    if "search" in which:
        texts.append(run_search_phases(problems, args.seed))
        print(texts[-1], flush=True)
    if "many" in which:
        texts.append(run_many_phases(problems, names, args.seed))
        print(texts[-1], flush=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n\n".join(texts) + "\n")
    return 0


__all__ = ["PHASES", "XLA_OPTIONS", "ChunkTimer", "program_phases", "run_phases",
           "search_phases"]
