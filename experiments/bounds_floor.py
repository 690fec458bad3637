"""The floor of issue 53's ratio: how far the cached upper bounds of `bench bounds` are
from the best plan we can find, and how far the 60 s bounds are from the best bound we
can prove, on the 9 (graph, k) pairs of `regal_set(3, seed=0)` x k = 4, 8, 16.

Per pair (one JSON line to --out, and a line on stdout):
1. the cached UB (`experiments/bounds_rungs_upper.json`, the default `jaxplace.search`
   with seed = graph index, which `bench bounds --upper-cache` divides by);
2. `jaxplace.search` (the default method) with --budget evaluations for each of --seeds
   (seeds the cache did not use), no time limit;
3. `jaxplace.certify` from the best of 1-2 with --methods, --time seconds per rung: the
   exact MIP warm-started from that partition (its incumbent is a better plan when it
   finds one, its dual bound a lower bound), the bottleneck MIP, BB&R (its descent is
   a local search from the partition), the forced-crossings bound.

    nice python experiments/bounds_floor.py --pairs all --seeds 101,102 --budget 90000 \
        --time 120 --out /tmp/floor.jsonl
    nice python experiments/bounds_floor.py --pairs 1:16 --seeds none \
        --methods simple,cross,bottleneck,exact --time 600 --start /tmp/floor.jsonl \
        --out /tmp/floor_lb.jsonl
    python experiments/bounds_floor.py --table /tmp/floor.jsonl /tmp/floor_lb.jsonl

`--table` merges the lines (per pair the smallest UB and the largest LB of any run,
plus what the bench's 60 s ladder reached, read from --bench-log) into the markdown
table of experiments/bbr.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time

import numpy as np

CACHE = "experiments/bounds_rungs_upper.json"
KS = (4, 8, 16)


def pairs_of(text: str) -> list[tuple[int, int]]:
    if text == "all":
        return [(i, k) for i in range(3) for k in KS]
    return [tuple(int(x) for x in p.split(":")) for p in text.split(",")]


def run_pair(gi: int, k: int, args) -> dict:
    import jaxplace as jp
    from jaxplace.bounds import certify
    from jaxplace.cost import evaluate_partition, simple_lower_bound
    from jaxplace.generators import regal_set

    g = regal_set(3, seed=0)[gi]
    problem = jp.Problem(g, k)
    with open(CACHE) as f:
        cache = json.load(f)
    cached = np.asarray(cache[f"search-64-seed0-{gi}-n{g.num_nodes}-k{k}"], np.int64)
    out = {"graph": gi, "n": g.num_nodes, "k": k,
           "cached_ub": float(evaluate_partition(problem, cached).bottleneck),
           "simple": float(simple_lower_bound(problem)), "searches": []}
    best_a, best_ub, source = cached, out["cached_ub"], "cached"
    for path in args.start or []:  # the best plans of earlier runs
        for line in open(path):
            d = json.loads(line)
            if (d["graph"], d["k"]) == (gi, k) and d["best_ub"] < best_ub:
                best_a = np.asarray(d["best_assignment"], np.int64)
                best_ub = float(evaluate_partition(problem, best_a).bottleneck)
                source = f"earlier run ({d['best_source']})"
    for s in args.seeds:
        t0 = time.perf_counter()
        r = jp.search(problem, seed=s, budget=args.budget, progress=False)
        out["searches"].append({"seed": s, "cost": float(r.cost),
                                "evaluations": int(r.evaluations),
                                "wall": round(time.perf_counter() - t0, 1)})
        if r.cost < best_ub:
            best_a, best_ub, source = r.partition.assignment, float(r.cost), f"search {s}"
    out["search_best"] = best_ub
    if args.methods:
        t0 = time.perf_counter()
        cert = certify(problem, best_a, methods=args.methods, time_limit=args.time)
        out["certify_wall"] = round(time.perf_counter() - t0, 1)
        out["rungs"] = [{"name": r.name, "bound": float(r.bound), "status": r.status,
                         "time": round(r.time, 1), "nodes": r.nodes}
                        for r in cert.results]
        if cert.upper_bound < best_ub * (1 - 1e-12):
            best_a, best_ub = cert.partition, float(cert.upper_bound)
            source = cert.partition_source
        out["lb"], out["lb_method"] = float(cert.lower_bound), cert.method
    out["best_ub"], out["best_source"] = best_ub, source
    out["best_assignment"] = [int(b) for b in best_a]
    return out


def bench_lines(path: str) -> dict:
    """(graph, k) -> (UB, best LB/UB over the rungs) from a `bench bounds` log."""
    pat = re.compile(r"^graph (\d) n=\d+ k=(\d+): UB ([0-9.e+]+) \([\w-]+\)\s+(.*)$")
    found = {}
    for line in open(path):
        m = pat.match(line)
        if not m:
            continue
        fr = [float(x) for x in re.findall(r" (\d\.\d{4}) \(", " " + m.group(4))]
        found[(int(m.group(1)), int(m.group(2)))] = (float(m.group(3)), max(fr))
    return found


def history(paths: list[str]) -> dict:
    """(graph, k) -> (smallest UB, largest LB) over earlier `bench bounds` logs (LB
    rebuilt from the logs' 4-decimal fractions, so up to 5e-5 of UB low)."""
    out: dict = {}
    for path in paths:
        for key, (ub, frac) in bench_lines(path).items():
            lo, hi = out.get(key, (math.inf, 0.0))
            out[key] = (min(lo, ub), max(hi, (frac - 5e-5) * ub))
    return out


def table(paths: list[str], bench_log: str | None, logs: list[str] | None = None) -> str:
    rows: dict = {}
    for p in paths:
        for line in open(p):
            d = json.loads(line)
            key = (d["graph"], d["k"])
            r = rows.setdefault(key, {"n": d["n"], "cached": d["cached_ub"], "ub": math.inf,
                                      "lb": d["simple"], "lb_by": "simple", "src": ""})
            if d["best_ub"] < r["ub"]:
                r["ub"], r["src"] = d["best_ub"], d["best_source"]
            for q in d.get("rungs", []):
                if q["bound"] > r["lb"]:
                    r["lb"], r["lb_by"] = q["bound"], f"{q['name']} {q['time']:.0f}s"
    bench = bench_lines(bench_log) if bench_log else {}
    for key, (ub, lb) in history(logs or []).items():  # earlier logs' best
        r = rows.get(key)
        if r is None:
            continue
        if ub < r["ub"] * (1 - 1e-9):
            r["ub"], r["src"] = ub, "earlier log"
        if lb > r["lb"]:
            r["lb"], r["lb_by"] = lb, "earlier log"
    out = ["| pair | n | cached UB | best UB (how) | cached / best UB | best LB (how) | "
           "best LB / best UB | bench 60 s LB / cached UB | bench 60 s LB / best UB |",
           "|---|---|---|---|---|---|---|---|---|"]
    g = {"cb": {}, "lbub": {}, "bench": {}, "bench_best": {}}
    for (gi, k), r in sorted(rows.items(), key=lambda x: (x[0][1], x[0][0])):
        b = bench.get((gi, k))
        blb = b[1] * b[0] if b else math.nan
        cells = [f"g{gi} k={k}", str(r["n"]), f"{r['cached']:.6g}",
                 f"{r['ub']:.6g} ({r['src']})", f"{r['cached'] / r['ub']:.4f}",
                 f"{r['lb']:.6g} ({r['lb_by']})", f"{r['lb'] / r['ub']:.4f}",
                 f"{b[1]:.4f}" if b else "-", f"{blb / r['ub']:.4f}" if b else "-"]
        out.append("| " + " | ".join(cells) + " |")
        for name, v in (("cb", r["cached"] / r["ub"]), ("lbub", r["lb"] / r["ub"]),
                        ("bench", b[1] if b else math.nan),
                        ("bench_best", blb / r["ub"])):
            g[name].setdefault(k, []).append(v)
    gm = lambda xs: float(np.exp(np.mean(np.log(xs))))  # noqa: E731
    out += ["", "| k | gmean cached / best UB | gmean best LB / best UB | gmean bench "
            "LB / cached UB | gmean bench LB / best UB |", "|---|---|---|---|---|"]
    for k in sorted(g["cb"]):
        out.append(f"| {k} | {gm(g['cb'][k]):.4f} | {gm(g['lbub'][k]):.4f} | "
                   + (f"{gm(g['bench'][k]):.4f} | {gm(g['bench_best'][k]):.4f} |"
                      if bench else "- | - |"))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", default="all", help="'all' or g:k,g:k,...")
    ap.add_argument("--seeds", default="101,102", help="search seeds, or 'none'")
    ap.add_argument("--budget", type=int, default=90_000)
    ap.add_argument("--methods", default="simple,cross,exact,bottleneck,bbr",
                    help="certify rungs from the best plan ('' for none)")
    ap.add_argument("--time", type=float, default=120.0, help="seconds per rung")
    ap.add_argument("--out", default=None, help="append JSON lines here")
    ap.add_argument("--start", nargs="*", default=None,
                    help="JSON-line files of earlier runs: start from their best plans")
    ap.add_argument("--table", nargs="*", default=None, help="JSON-line files to merge")
    ap.add_argument("--bench-log", default=None, help="a `bench bounds` log to compare")
    ap.add_argument("--logs", nargs="*", default=None,
                    help="earlier `bench bounds` logs whose best UB / LB count too")
    args = ap.parse_args()
    if args.table is not None:
        print(table(args.table, args.bench_log, args.logs))
        return
    args.seeds = [] if args.seeds == "none" else [int(s) for s in args.seeds.split(",")]
    args.methods = tuple(m for m in args.methods.split(",") if m)
    for gi, k in pairs_of(args.pairs):
        t0 = time.perf_counter()
        d = run_pair(gi, k, args)
        d["wall"] = round(time.perf_counter() - t0, 1)
        rungs = " ".join(f"{q['name']} {q['bound'] / d['best_ub']:.4f} ({q['status']}, "
                         f"{q['time']:.0f}s)" for q in d.get("rungs", []))
        print(f"g{gi} n={d['n']} k={k}: cached {d['cached_ub']:.6g} searches "
              + ", ".join(f"{s['cost']:.6g} ({s['wall']:.0f}s)" for s in d["searches"])
              + f" best {d['best_ub']:.6g} ({d['best_source']}) | {rungs} | {d['wall']:.0f}s",
              flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(d) + "\n")


if __name__ == "__main__":
    main()
