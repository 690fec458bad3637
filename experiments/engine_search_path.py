"""Where a warm `jp.search` of one graph spends its time, against `search_many`'s
per-problem path, and which programs it compiles (issue 51, session 23, helper H2).

    nice python experiments/engine_search_path.py [--count 30] [--what search,many]

One process, the regal-time suite (graph i, k = 4/8/16 by i % 3, seed i). For
`search`: a cold pass (compiles; every new chunk program labelled by type, padded
shape and window), then a warm pass in which the phases of each `jp.search` are timed
by wrapping the functions that run them (planner facts, the first answer, policy
loading + distribution, BRKGA or policy+BRKGA, the local-search starts, the local
search, the MIP polish, the final reference decode). For `many`: `search_many` over
the same problems with `workers=1` (one core, as jp.search), cold then warm, with
`prepare`, the bucket runs and the polish timed the same way. Per k: mean seconds
per graph. `--path bucket|driver` picks jp.search's path
(`jaxplace.objectives.throughput.bucket.SEARCH_PATH`): run once per value to compare.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections import defaultdict

import jaxplace as jp
from jaxplace.bench.search_time import instances

T: dict = defaultdict(float)


def wrap(obj, name: str, label: str) -> None:
    """Accumulate the seconds of obj.name (a module function or class attribute)
    into T[label]."""
    real = getattr(obj, name)

    @functools.wraps(real)
    def timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            T[label] += time.perf_counter() - t0

    setattr(obj, name, timed)


def instrument() -> None:
    import jaxplace.policy as jpol
    import jaxplace.search.api as sapi
    import jaxplace.search.many.api as mapi
    import jaxplace.search.many.run as mrun
    import jaxplace.search.policy as spol
    from jaxplace.objectives.throughput import objective as tobj
    from jaxplace.objectives.throughput import search as tsearch

    wrap(tobj.Throughput, "exact_fits", "planner facts")
    wrap(sapi, "_first_solution", "first answer")
    wrap(jpol, "load_policy", "load policy")
    wrap(spol, "padded_distribution", "policy distribution")
    wrap(spol, "policy_evolve", "brkga (policy) incl. load+dist")
    wrap(tsearch, "evolve", "brkga (uniform)")
    wrap(tsearch, "_starts", "local starts")
    wrap(tsearch, "shift_search", "local search")
    wrap(tsearch, "_polish", "polish")
    wrap(tsearch, "finish", "final decode")
    wrap(mapi, "prepare", "many: prepare")
    wrap(mrun.BucketRun, "compile", "many: compile call")
    wrap(mrun.BucketRun, "_finish", "many: finish (decode+polish)")
    wrap(mrun, "polish_result", "many: polish")
    wrap(mapi, "policy_distribution", "many: policy distribution")
    from jaxplace.objectives.throughput import bucket

    wrap(bucket, "bucket_search", "bucket path (all)")
    real = mrun.many_chunk

    def chunk(*a):  # to completion: the host loop blocks on it right after anyway
        import jax

        t0 = time.perf_counter()
        out = jax.block_until_ready(real(*a))
        T["many: chunks (incl. compile)"] += time.perf_counter() - t0
        return out

    mrun.many_chunk = chunk


def table(rows: dict, ks: list[int]) -> str:
    labels = sorted({lab for r in rows.values() for lab in r}, key=lambda s: (s != "wall", s))
    out = ["| phase | " + " | ".join(f"k={k} s/graph" for k in ks) + " |",
           "|---|" + "---|" * len(ks)]
    for lab in labels:
        out.append(f"| {lab} | " + " | ".join(f"{rows[k].get(lab, 0.0):.3f}" for k in ks)
                   + " |")
    return "\n".join(out)


def search_pass(problems, seed: int, label_programs: bool):
    from jaxplace.bench.phases import ChunkTimer

    per_k: dict = defaultdict(lambda: defaultdict(float))
    costs = []
    timer = ChunkTimer() if label_programs else None
    if timer:
        timer.__enter__()
    try:
        for i, p in enumerate(problems):
            T.clear()
            t0 = time.perf_counter()
            r = jp.search(p, seed=seed + i, progress=False, observer=lambda e: None)
            wall = time.perf_counter() - t0
            costs.append(r.cost)
            d = per_k[p.k]
            d["wall"] += wall
            d["graphs"] += 1
            for lab, v in T.items():
                d[lab] += v
            if timer:
                new, _ = timer.take()
                for pt in new:
                    print(f"  graph {i} n={p.n} k={p.k}: new program {pt.label} "
                          f"(compile {pt.compile:.2f} s)", flush=True)
    finally:
        if timer:
            timer.__exit__()
    for d in per_k.values():
        g = d.pop("graphs")
        for lab in d:
            d[lab] /= g
    return per_k, costs


def many_pass(problems, seed: int, workers: int):
    from jaxplace.search.many import search_many

    T.clear()
    t0 = time.perf_counter()
    rs = search_many(problems, seed=seed, workers=workers)
    wall = time.perf_counter() - t0
    d = dict(T)
    d["wall"] = wall
    return {lab: v / len(problems) for lab, v in d.items()}, [r.cost for r in rs]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--what", default="search,many")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--path", default=None, help="jp.search's path: bucket or driver")
    a = ap.parse_args()
    instrument()
    ks = [4, 8, 16]
    probs = [jp.Problem(g, k) for _, g, k in instances(a.count, ks, 0)]
    what = a.what.split(",")
    from jaxplace.objectives.throughput import bucket

    if a.path:
        bucket.SEARCH_PATH = a.path
    path = bucket.SEARCH_PATH
    print(f"load {os.getloadavg()}; {a.count} graphs; jp.search path {path}", flush=True)
    if "search" in what:
        t0 = time.perf_counter()
        _, cold_costs = search_pass(probs, 0, True)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        per_k, costs = search_pass(probs, 0, False)
        warm = time.perf_counter() - t0
        print(f"jp.search per graph (path {path}): cold {cold:.1f} s, warm {warm:.1f} s, "
              f"warm costs == cold costs: {cold_costs == costs}; load {os.getloadavg()}")
        print(table(per_k, ks), flush=True)
        print("costs", [round(c, 4) for c in costs], flush=True)
    if "many" in what:
        for k in ks:
            sub = [(i, p) for i, p in enumerate(probs) if p.k == k]
            # seed: search_many gives problem j seed + j, so one call per problem keeps
            # jp.search's seeds (graph i, seed i)
            t0 = time.perf_counter()
            for i, p in sub:
                many_pass([p], i, a.workers)
            cold = time.perf_counter() - t0
            agg: dict = defaultdict(float)
            mcost = []
            for i, p in sub:
                d, c = many_pass([p], i, a.workers)
                mcost += c
                for lab, v in d.items():
                    agg[lab] += v / len(sub)
            print(f"search_many([p]) k={k} ({len(sub)} graphs): cold pass {cold:.1f} s; "
                  f"warm per graph: " + ", ".join(f"{lab} {v:.3f}" for lab, v in
                                                  sorted(agg.items())), flush=True)
            print("  costs", [round(c, 4) for c in mcost], flush=True)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
