"""`jaxplace bench batch`: the regal-time suite through `search_many`, against the
per-problem default search and the C++ brkga-10000 peer in the same run.

The suite of `jaxplace bench search --suite regal-time` (`regal_set(count, seed)`,
graph i with k = ks[i % len(ks)], search seed `seed + i`). Methods:
- `many`: one `jp.search_many` call over all problems, in a fresh worker process
  (`python -m jaxplace.bench.batch --worker ...`): cold = wall time from the
  worker's start (importing jaxplace and JAX included) to the last result; programs
  compiled = XLA compiles of the search programs (`_many_chunk` and the
  per-problem ones, `jaxplace.compile_cache.count_compiles`); warm = the same call again in that
  process. `--time-limit` bounds the call (compile time included), `--budget` sets
  the evaluations per problem, `--max-programs` the buckets.
- `default`: `jp.search` per problem in a fresh worker (as the regal-time suite).
- `cpp-brkga-10000`: the C++ peer (`jaxplace.bench.cpp_peer`), one process per graph.

Cost: geometric mean over graphs of cost / C++ cost. `--cache fresh` (default): each
worker gets an empty compilation cache (a user's first run). Exit status 1 when a
target (2-core CPU) is missed: at most 8 programs, cost <= 0.97x
C++ in total cold wall <= 3x C++'s, warm wall <= 1.5x, and (no time limit) the warm
pass's costs bit-identical to the cold pass's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench import search_time
from jaxplace.bench.cpp_peer import CppUnavailable
from jaxplace.bench.runs import markdown_table as _table
from jaxplace.bench.search_time import instances
from jaxplace.compile_cache import SEARCH_PROGRAMS, count_compiles, plain_python_env
from jaxplace.errors import JaxplaceError

HELP = ("regal-time suite through search_many vs per-problem default search and C++ "
        "brkga-10000: programs, cold and warm wall, cost")
DEFAULT_METHODS = "many,default,cpp-brkga-10000"
CPP = "cpp-brkga-10000"
#: The CPU targets: programs compiled, cost against C++, cold wall against C++.
MAX_PROGRAMS = 8
MAX_COST_RATIO = 0.97
MAX_TIME_RATIO = 3.0
#: With the programs compiled, the same cost in at most this x C++'s wall.
MAX_WARM_RATIO = 1.5


def add_arguments(p) -> None:
    p.add_argument("--count", type=int, default=30, help="number of REGAL-like graphs")
    p.add_argument("--ks", default="4,8,16", help="k of graph i: ks[i %% len(ks)]")
    p.add_argument("--seed", type=int, default=0, help="seed of the graphs and searches")
    p.add_argument("--methods", default=DEFAULT_METHODS,
                   help=f"comma-separated, of many, default, {CPP}")
    p.add_argument("--time-limit", type=float, default=None,
                   help="many: seconds for the whole search_many call")
    p.add_argument("--budget", type=int, default=None,
                   help="many: evaluations per problem (default: the default search's)")
    p.add_argument("--max-programs", type=int, default=MAX_PROGRAMS,
                   help="many: at most this many buckets (compiled programs)")
    p.add_argument("--group", type=int, default=None,
                   help="many: problems per program call (default: search_many's)")
    p.add_argument("--polish", choices=("auto", "on", "off"), default="auto",
                   help="many: the MIP polish at k <= 4 (auto: the default's rule)")
    p.add_argument("--cache", choices=("fresh", "user", "off"), default="fresh",
                   help="each worker's compilation cache (fresh: empty, a first run)")
    p.add_argument("--markdown", default=None, help="also write the table here")
    p.add_argument("--json", default=None, help="also write the records here")


def _polish(arg: str):
    return {"auto": None, "on": True, "off": False}[arg]


def worker(a, t_start: float) -> int:
    """Cold then warm `search_many` over the suite; writes a JSON record."""
    import jax

    from jaxplace.search.many import bucket_summary, search_many

    t_import = time.perf_counter() - t_start
    ks = [int(k) for k in a.ks.split(",")]
    probs = [jp.Problem(g, k) for _, g, k in instances(a.count, ks, a.seed)]
    kw = dict(time_limit=a.time_limit, budget=a.budget, seed=a.seed,
              max_programs=a.max_programs, polish=_polish(a.polish))
    if a.group is not None:
        kw["group"] = a.group
    names = SEARCH_PROGRAMS
    t0 = time.perf_counter()
    with count_compiles() as counts:
        rs = search_many(probs, **kw)
    cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    warm_rs = search_many(probs, **kw)
    warm = time.perf_counter() - t1
    buckets = [dict(N=b.spec.N, K=b.spec.K, window=b.window, problems=len(b.members))
               for b in bucket_summary(probs, a.max_programs)]
    rec = dict(method="many", import_s=t_import, cold_s=cold, warm_s=warm,
               total_s=t_import + cold, costs=[r.cost for r in rs],
               warm_costs=[r.cost for r in warm_rs],
               evaluations=[r.evaluations for r in rs],
               interrupted=sum(r.interrupted for r in rs),
               programs_compiled=counts.compiled(names),
               cache_hits=sum(counts.cache_hits[k] for k in names),
               by_program=dict(counts), buckets=buckets, devices=jax.device_count())
    with open(a.out, "w") as f:
        json.dump(rec, f)
    return 0


def _run_many(args) -> dict:
    env = plain_python_env()
    if args.cache in ("fresh", "off"):
        env["JAXPLACE_CACHE_DIR"] = tempfile.mkdtemp(prefix="xla-") if \
            args.cache == "fresh" else ""
        env.pop("JAX_COMPILATION_CACHE_DIR", None)
    with tempfile.NamedTemporaryFile("r", suffix=".json") as f:
        cmd = [sys.executable, "-m", "jaxplace.bench.batch", "--worker", "--out", f.name,
               "--count", str(args.count), "--ks", args.ks, "--seed", str(args.seed),
               "--max-programs", str(args.max_programs), "--polish", args.polish]
        if args.time_limit is not None:
            cmd += ["--time-limit", str(args.time_limit)]
        if args.budget is not None:
            cmd += ["--budget", str(args.budget)]
        if args.group is not None:
            cmd += ["--group", str(args.group)]
        r = subprocess.run(cmd, env=env)
        if r.returncode != 0:
            raise JaxplaceError(f"bench worker for search_many failed (exit "
                                f"{r.returncode})")
        return json.load(f)


def _gm(x) -> float:
    x = np.asarray(x, np.float64)
    return float(np.exp(np.mean(np.log(x)))) if len(x) and np.all(np.isfinite(x)) \
        else float("inf")


def report(recs: dict, lbs: list[float], args) -> tuple[str, bool]:
    ref = recs.get(CPP)
    head = ["method", "total wall (cold)", "programs compiled (XLA / cache hits)",
            "warm wall", "cost / C++", "cost / simple LB", "wall / C++ (cold)"]
    rows = []
    for m, r in recs.items():
        c = np.asarray(r["costs"], np.float64)
        rows.append([m, f"{r['total_s']:.1f} s",
                     f"{r['programs_compiled']} / {r['cache_hits']}",
                     f"{r['warm_s']:.1f} s",
                     f"{_gm(c / np.asarray(ref['costs'])):.4f}" if ref else "-",
                     f"{_gm(c / np.asarray(lbs)):.4f}",
                     f"{r['total_s'] / ref['total_s']:.2f}x" if ref else "-"])
    ks = [int(k) for k in args.ks.split(",")]
    lines = [f"REGAL-like graphs: regal_set({args.count}, seed={args.seed}), graph i with "
             f"k = {ks}[i % {len(ks)}], seed {args.seed} + i; cache: {args.cache}; "
             f"many: time limit {args.time_limit}, budget {args.budget or 'default'}, "
             f"max programs {args.max_programs}, polish {args.polish}", "",
             _table(head, rows)]
    many = recs.get("many")
    if many:
        lines += ["", "search_many buckets: " + ", ".join(
            f"N={b['N']} K={b['K']} window={b['window'] or 'full'} x{b['problems']}"
            for b in many["buckets"]),
            f"search_many: {many['interrupted']} of {len(many['costs'])} problems "
            "stopped by the time limit; warm pass cost / C++ "
            + (f"{_gm(np.asarray(many['warm_costs']) / np.asarray(ref['costs'])):.4f}"
               if ref else "-")]
    met = True
    lines += ["", "Targets (2-core CPU):"]

    def check(ok, what):
        nonlocal met
        met &= bool(ok)
        lines.append(f"- {'met' if ok else 'MISSED'}: {what}")

    if many:
        check(many["programs_compiled"] <= MAX_PROGRAMS,
              f"search_many compiles at most {MAX_PROGRAMS} programs "
              f"({many['programs_compiled']})")
    if many and ref:
        ratio = _gm(np.asarray(many["costs"]) / np.asarray(ref["costs"]))
        check(ratio <= MAX_COST_RATIO, f"cost <= {MAX_COST_RATIO}x C++ ({ratio:.4f}x)")
        t = many["total_s"] / ref["total_s"]
        check(t <= MAX_TIME_RATIO, f"total cold wall <= {MAX_TIME_RATIO}x C++ ({t:.2f}x: "
              f"{many['total_s']:.1f} s vs {ref['total_s']:.1f} s)")
        w = many["warm_s"] / ref["total_s"]
        check(w <= MAX_WARM_RATIO, f"warm wall (programs compiled) <= {MAX_WARM_RATIO}x "
              f"C++ ({w:.2f}x)")
    if many and args.time_limit is None:
        same = many["costs"] == many["warm_costs"]
        differ = sum(a != b for a, b in zip(many["costs"], many["warm_costs"], strict=True))
        check(same, "same seed, no time limit: the warm pass finds bit-identical costs"
              + ("" if same else f" ({differ} differ)"))
    return "\n".join(lines), met


def run(args) -> int:
    """The comparison (see the module doc); 1 when a target is missed."""
    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    bad = sorted(set(methods) - {"many", "default", CPP})
    if bad:
        raise JaxplaceError(f"unknown method(s) {', '.join(bad)}", field="methods")
    lbs = [float(jp.simple_lower_bound(jp.Problem(g, k)))
           for _, g, k in search_time.instances(args.count, ks, args.seed)]
    recs = {}
    with tempfile.TemporaryDirectory(prefix="jaxplace-bench-") as root:
        for m in methods:
            t0 = time.perf_counter()
            if m == "many":
                recs[m] = _run_many(args)
            elif m == CPP:
                try:
                    recs[m] = search_time.run_cpp(args, ks)
                except CppUnavailable as exc:
                    print(f"skipping {CPP}: {exc}", flush=True)
                    continue
            else:
                recs[m] = search_time._run_worker(m, args, ks, root)
            print(f"{m}: done in {time.perf_counter() - t0:.0f} s", flush=True)
    text, met = report(recs, lbs, args)
    search_time.write_report(text, recs, args)
    return 0 if met else 1


def _main(argv=None) -> int:
    t_start = time.perf_counter()
    import argparse

    p = argparse.ArgumentParser(prog="python -m jaxplace.bench.batch")
    p.add_argument("--worker", action="store_true", required=True)
    p.add_argument("--out", required=True)
    add_arguments(p)
    return worker(p.parse_args(argv), t_start)


if __name__ == "__main__":
    sys.exit(_main())
