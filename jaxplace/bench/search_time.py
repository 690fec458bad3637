"""`jaxplace bench search --suite regal-time`: time to solution, as a user meets it.

Fresh REGAL-like graphs (`regal_set(count, seed)`, n 50-200), graph i with
k = ks[i % len(ks)] (default 4, 8, 16), searched one after another in one Python
process with `jp.search(problem, method, seed=seed + i)`, against the C++ BRKGA peer
(`jaxplace.bench.cpp_peer`, the paper's brkga-10000 on one core) on the same graphs.

Each jaxplace method runs in its own fresh worker process (`python -m
jaxplace.bench.search_time --worker ...`), so its first search pays every compile:
- cold: wall time from the worker's start (importing jaxplace included) to the last
  search's end, and the XLA programs built (`jaxplace.compile_cache.count_compiles`): the large
  search programs compiled by XLA and those read from the persistent cache;
- warm: the same searches again in that process (everything compiled);
- cost: geometric mean of cost / C++ cost and of cost / simple lower bound;
- the curve: geometric-mean cost / C++ final cost at wall-time checkpoints since each
  search's start (from the `observer`; the C++ peer's per-generation trace).

Workers run with a plain Python process's XLA flags (the CLI's forced host device
count removed: JAX's cache keys hash XLA_FLAGS, see `jaxplace warmup --for`).

`--cache fresh` (default) gives each worker an empty JAXPLACE_CACHE_DIR: a user's
very first run. `--cache user` keeps the environment's cache (e.g. after `jaxplace
warmup`), `--cache off` turns it off.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench import cpp_peer
from jaxplace.bench.cpp_peer import CppUnavailable
from jaxplace.bench.runs import markdown_table as _table
from jaxplace.compile_cache import SEARCH_PROGRAMS, count_compiles, plain_python_env
from jaxplace.errors import JaxplaceError
from jaxplace.generators import regal_suite

#: Methods of the suite: jaxplace methods (bench names) and the C++ peer.
DEFAULT_METHODS = "default,brkga-10000,cpp-brkga-10000"
CPP = "cpp-brkga-10000"
#: Seconds since a search's start at which the curve reads the best cost.
CHECKPOINTS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
#: The targets of time to solution: programs compiled, cost and wall against C++.
MAX_PROGRAMS = 8
MAX_COST_RATIO = 0.97
MAX_TIME_RATIO = 2.0


def instances(count: int, ks: list[int], seed: int):
    """[(graph index, graph, k)] of the suite (`jaxplace.generators.regal_suite`)."""
    return regal_suite(count, ks, seed)


def _curve(points, checkpoints=CHECKPOINTS) -> list[float]:
    """Best cost at each checkpoint from (seconds, best cost) points (inf: none yet)."""
    out = []
    for c in checkpoints:
        seen = [b for t, b in points if t <= c]
        out.append(min(seen) if seen else float("inf"))
    return out


def _pass(problems, method: str, seed: int) -> tuple[list[float], list[list[float]], float]:
    """One pass over the problems: (costs, curves, wall seconds)."""
    from jaxplace.search import search_named

    costs, curves = [], []
    t0 = time.perf_counter()
    for i, p in problems:
        points = []
        start = time.perf_counter()
        r = search_named(p, method, seed + i,
                       observer=lambda e, s=start, pts=points: pts.append(
                           (time.perf_counter() - s, float(e.best_cost))))
        points.append((time.perf_counter() - start, float(r.cost)))
        costs.append(float(r.cost))
        curves.append(_curve(points))
    return costs, curves, time.perf_counter() - t0


def worker(method: str, count: int, ks: list[int], seed: int, out: str,
           t_start: float) -> int:
    """Cold then warm pass of one method; writes a JSON record to `out`."""
    import jax

    t_import = time.perf_counter() - t_start
    problems = [(i, jp.Problem(g, k)) for i, g, k in instances(count, ks, seed)]
    t_graphs = time.perf_counter()
    with count_compiles() as counts:
        costs, curves, cold = _pass(problems, method, seed)
    _, warm_curves, warm = _pass(problems, method, seed)
    rec = dict(method=method, import_s=t_import, cold_s=cold, warm_s=warm,
               total_s=t_import + cold, graphs_s=t_graphs - t_start - t_import,
               costs=costs, curves=curves, warm_curves=warm_curves,
               lower_bounds=[float(jp.simple_lower_bound(p)) for _, p in problems],
               programs_built=counts.built(SEARCH_PROGRAMS),
               programs_compiled=counts.compiled(SEARCH_PROGRAMS),
               cache_hits=sum(counts.cache_hits[k] for k in SEARCH_PROGRAMS),
               jit_built=counts.built(), jit_compiled=counts.compiled(),
               by_program=dict(counts), devices=jax.device_count(),
               cache_dir=jax.config.jax_compilation_cache_dir or "")
    with open(out, "w") as f:
        json.dump(rec, f)
    return 0


def _run_worker(method: str, args, ks, cache_root: str | None) -> dict:
    env = plain_python_env()  # as a user's `python` process, not the CLI's device flags
    if args.cache == "fresh":
        env["JAXPLACE_CACHE_DIR"] = tempfile.mkdtemp(prefix="xla-", dir=cache_root)
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    elif args.cache == "off":
        env["JAXPLACE_CACHE_DIR"] = ""
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    with tempfile.NamedTemporaryFile("r", suffix=".json") as f:
        cmd = [sys.executable, "-m", "jaxplace.bench.search_time", "--worker", method,
               "--count", str(args.count), "--ks", ",".join(map(str, ks)),
               "--seed", str(args.seed), "--out", f.name]
        r = subprocess.run(cmd, env=env)
        if r.returncode != 0:
            raise JaxplaceError(f"bench worker for {method} failed (exit {r.returncode})")
        return json.load(f)


def run_cpp(args, ks) -> dict:
    """The C++ peer over the suite (one process per graph, serial)."""
    t0 = time.perf_counter()
    exe = cpp_peer.build()
    build_s = time.perf_counter() - t0
    costs, curves, secs, loop, evals = [], [], [], [], []
    for i, g, k in instances(args.count, ks, args.seed):
        r = cpp_peer.run_brkga(jp.Problem(g, k), seed=args.seed + i, exe=exe)
        costs.append(r.cost)
        secs.append(r.seconds)
        loop.append(r.loop_seconds)
        evals.append(r.evaluations)
        curves.append(_curve([(t, b) for _, t, b in r.trace]))
    total = float(sum(secs))
    return dict(method=CPP, build_s=build_s, total_s=total, warm_s=total, cold_s=total,
                loop_s=float(sum(loop)), costs=costs, curves=curves, warm_curves=curves,
                evaluations=int(np.mean(evals)), programs_built=0, programs_compiled=0,
                cache_hits=0)


def _gm(x) -> float:
    x = np.asarray(x, np.float64)
    return float(np.exp(np.mean(np.log(x)))) if np.all(np.isfinite(x)) and len(x) else \
        float("inf")


def report(recs: dict, lbs: list[float], args, ks) -> tuple[str, bool]:
    """The tables (markdown) and whether every target was met."""
    ref = recs.get(CPP)
    head = ["method", "total wall (cold)", "programs compiled (XLA / cache hits)",
            "warm wall", "per graph warm", "cost / C++", "cost / simple LB"]
    rows = []
    for m, r in recs.items():
        c = np.asarray(r["costs"])
        rows.append([m, f"{r['total_s']:.1f} s", f"{r['programs_compiled']} / "
                     f"{r['cache_hits']}", f"{r['warm_s']:.1f} s",
                     f"{r['warm_s'] / len(c):.2f} s",
                     f"{_gm(c / np.asarray(ref['costs'])):.4f}" if ref else "-",
                     f"{_gm(c / np.asarray(lbs)):.4f}"])
    curve_head = ["method", "pass", *[f"{t:g} s" for t in CHECKPOINTS]]
    crows = []
    for m, r in recs.items():
        for name, key in (("cold", "curves"), ("warm", "warm_curves")):
            if m == CPP and name == "warm":
                continue
            cv = np.asarray(r[key], np.float64)
            base = np.asarray(ref["costs"] if ref else lbs)[:, None]
            crows.append([m, name if m != CPP else "-",
                          *[(f"{_gm(cv[:, j] / base[:, 0]):.4f}"
                             if np.all(np.isfinite(cv[:, j])) else "-")
                            for j in range(len(CHECKPOINTS))]])
    basis = "C++ brkga-10000's final cost" if ref else "simple lower bound"
    text = (f"REGAL-like graphs: regal_set({args.count}, seed={args.seed}), graph i with "
            f"k = {ks}[i % {len(ks)}], seed {args.seed} + i; cache: {args.cache}\n\n"
            + _table(head, rows)
            + f"\n\nGeometric-mean best cost / {basis}, at wall-time "
            "checkpoints since each search's start ('-': some search had no solution "
            "yet):\n\n" + _table(curve_head, crows))
    met, lines = _targets(recs)
    return text + "\n\n" + "\n".join(lines), met


def _targets(recs: dict) -> tuple[bool, list[str]]:
    ref, d, b = recs.get(CPP), recs.get("default"), recs.get("brkga-10000")
    lines, met = ["Targets:"], True

    def check(ok, what):
        nonlocal met
        met &= bool(ok)
        lines.append(f"- {'met' if ok else 'MISSED'}: {what}")

    if d is not None:
        check(d["programs_compiled"] <= MAX_PROGRAMS,
              f"default compiles at most {MAX_PROGRAMS} search programs "
              f"({d['programs_compiled']})")
    if d is not None and ref is not None:
        ratio = _gm(np.asarray(d["costs"]) / np.asarray(ref["costs"]))
        check(ratio <= MAX_COST_RATIO, f"default cost <= {MAX_COST_RATIO}x C++ "
              f"({ratio:.4f}x)")
        t = d["total_s"] / ref["total_s"]
        check(t <= MAX_TIME_RATIO, f"default total wall <= {MAX_TIME_RATIO}x C++ "
              f"({t:.2f}x: {d['total_s']:.1f} s vs {ref['total_s']:.1f} s)")
    if ref is None:
        lines.append(f"- not checked: the cost and time targets ({CPP} did not run)")
    if b is not None and ref is not None:
        t = b["warm_s"] / ref["total_s"]
        check(t <= 1.0, f"brkga-10000 warm at least as fast as the C++ loop ({t:.2f}x: "
              f"{b['warm_s']:.1f} s vs {ref['total_s']:.1f} s)")
    return met, lines


def run(args) -> int:
    """The suite (see the module doc); 1 when a target is missed."""
    ks = [int(k) for k in (args.ks if args.ks != "2,4,8,16,32,64" else "4,8,16").split(",")
          if k.strip()]
    methods = [m.strip() for m in (args.methods if args.methods_given else
                                   DEFAULT_METHODS).split(",") if m.strip()]
    lbs = [float(jp.simple_lower_bound(jp.Problem(g, k)))
           for _, g, k in instances(args.count, ks, args.seed)]
    recs = {}
    with tempfile.TemporaryDirectory(prefix="jaxplace-bench-") as root:
        for m in methods:
            t0 = time.perf_counter()
            if m == CPP:
                try:
                    recs[m] = run_cpp(args, ks)
                except CppUnavailable as exc:  # no g++: ratios to the bound only
                    print(f"skipping {CPP}: {exc}", flush=True)
                    continue
            else:
                recs[m] = _run_worker(m, args, ks, root)
            print(f"{m}: done in {time.perf_counter() - t0:.0f} s", flush=True)
    recs = {m: recs[m] for m in [*[m for m in methods if m != CPP],
                                 *[m for m in methods if m == CPP]]}
    text, met = report(recs, lbs, args, ks)
    write_report(text, recs, args)
    return 0 if met else 1


def write_report(text: str, recs: dict, args) -> None:
    """Print the report; write it to --markdown and the records to --json if asked."""
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(recs, f)


def _main(argv=None) -> int:
    t_start = time.perf_counter()
    import argparse

    p = argparse.ArgumentParser(prog="python -m jaxplace.bench.search_time")
    p.add_argument("--worker", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--ks", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    return worker(a.worker, a.count, [int(k) for k in a.ks.split(",")], a.seed, a.out,
                  t_start)


if __name__ == "__main__":
    sys.exit(_main())
