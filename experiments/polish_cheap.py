"""A cheaper deterministic MIP polish (issue 51): variants on the suite's k = 4 (and 8)
problems, each started from the same search_many result with the polish off.

    python experiments/polish_cheap.py cache                 # once: the starts, to /tmp
    python experiments/polish_cheap.py run --k 4 [--variants full,band2,...]
    python experiments/polish_cheap.py variants              # the names

`cache` runs `search_many(sub, seed=0, polish=False)` on the problems of
`instances(30, [4, 8, 16], 0)` with k in (4, 8) (what the warm pass of `bench batch`
polishes) and pickles their assignments to CACHE. `run` applies each variant to each
start the way the callers do (`mip_polish`, then the incumbent's blocks-in-order
priorities re-decoded by the float64 reference) and prints, per variant: seconds per
problem (mean, max), geometric mean of final cost / start cost (the "cost default /
polish off" of the warm split), the same against the "full" variant (the shipped root
node), how many improved. Variants run in the order given, all in one process, so
compare times only within one run (note the load).
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import time

import numpy as np

CACHE = os.environ.get("POLISH_CHEAP_CACHE", "/tmp/h4_polish_starts.pkl")

#: HiGHS's own defaults of the switches POLISH_HIGHS_OPTIONS sets (the polish before
#: this experiment ran with them).
HIGHS_DEFAULTS = {"mip_heuristic_run_rins": True, "mip_allow_restart": True,
                  "mip_detect_symmetry": True}

#: name -> mip_polish keyword arguments (HiGHS options over HIGHS_DEFAULTS).
VARIANTS: dict[str, dict] = {
    # the polish before: the whole MIP, root node only, HiGHS's defaults
    "full": dict(method="full", max_nodes=1),
    # HiGHS options on the whole MIP
    "full-nopre": dict(method="full", max_nodes=1, highs_options={"presolve": "off"}),
    "full-h0": dict(method="full", max_nodes=1,
                    highs_options={"mip_heuristic_effort": 0.0}),
    "full-h3": dict(method="full", max_nodes=1,
                    highs_options={"mip_heuristic_effort": 0.3}),
    "full-norins": dict(method="full", max_nodes=1,
                        highs_options={"mip_heuristic_run_rins": False}),
    "full-norens": dict(method="full", max_nodes=1,
                        highs_options={"mip_heuristic_run_rens": False}),
    "full-sol1": dict(method="full", max_nodes=1,
                      highs_options={"mip_max_improving_sols": 2}),
    "full-norestart": dict(method="full", max_nodes=1,
                           highs_options={"mip_allow_restart": False}),
    "full-rensonly": dict(method="full", max_nodes=1, highs_options={
        "mip_heuristic_run_rins": False, "mip_heuristic_run_root_reduced_cost": False,
        "mip_heuristic_run_feasibility_jump": False}),
    "full-norins-norestart": dict(method="full", max_nodes=1, highs_options={
        "mip_heuristic_run_rins": False, "mip_allow_restart": False}),
    "full-norestart-nosym": dict(method="full", max_nodes=1, highs_options={
        "mip_allow_restart": False, "mip_detect_symmetry": False}),
    "full-rensonly-norestart": dict(method="full", max_nodes=1, highs_options={
        "mip_heuristic_run_rins": False, "mip_heuristic_run_root_reduced_cost": False,
        "mip_heuristic_run_feasibility_jump": False, "mip_allow_restart": False}),
    "full-cheap": dict(method="full", max_nodes=1, highs_options={
        "mip_heuristic_run_rins": False, "mip_allow_restart": False,
        "mip_detect_symmetry": False}),
    "full-nosym": dict(method="full", max_nodes=1,
                       highs_options={"mip_detect_symmetry": False}),
    "full-rootpre": dict(method="full", max_nodes=1,
                         highs_options={"mip_root_presolve_only": True}),
    "full-n0": dict(method="full", max_nodes=0),
    # the band neighbourhood: nodes within `hops` edges of a cut, `rounds` MIPs
    "band0": dict(method="band", hops=0, rounds=3, max_nodes=1),
    "band1": dict(method="band", hops=1, rounds=3, max_nodes=1),
    "band2": dict(method="band", hops=2, rounds=3, max_nodes=1),
    "band3": dict(method="band", hops=3, rounds=3, max_nodes=1),
    "band1-n50": dict(method="band", hops=1, rounds=3, max_nodes=50),
    "band2-n50": dict(method="band", hops=2, rounds=3, max_nodes=50),
    "band2-r6": dict(method="band", hops=2, rounds=6, max_nodes=1),
    # every node free, moving at most `reach` blocks
    "reach1": dict(method="band", hops=None, reach=1, rounds=1, max_nodes=1),
    "reach1-r3": dict(method="band", hops=None, reach=1, rounds=3, max_nodes=1),
    "band1-reach1": dict(method="band", hops=1, reach=1, rounds=1, max_nodes=1),
}


def k_problems(k: int):
    import jaxplace as jp
    from jaxplace.bench.search_time import instances

    return [jp.Problem(g, kk) for _, g, kk in instances(30, [4, 8, 16], 0) if kk == k]


def cache(ks=(4,)) -> None:
    from jaxplace.search.many import search_many

    out = {}
    for k in ks:
        probs = k_problems(k)
        t = time.perf_counter()
        rs = search_many(probs, seed=0, polish=False)
        out[k] = [np.asarray(r.partition.assignment) for r in rs]
        print(f"k={k}: {len(rs)} starts in {time.perf_counter() - t:.1f} s, "
              f"costs {[round(r.cost, 1) for r in rs]}", flush=True)
    with open(CACHE, "wb") as f:
        pickle.dump(out, f)


def apply(problem, assignment, kw: dict) -> tuple[float, float, float, dict]:
    """(final cost, wall seconds, CPU seconds, info) of one polish as the callers
    apply it. CPU seconds: HiGHS runs on one thread, so the process's CPU time is its
    work, nearly independent of the other processes' load (wall is not)."""
    from jaxplace.cost import evaluate_partition
    from jaxplace.objectives.throughput.polish import mip_polish, partition_priorities
    from jaxplace.reference import decode_reference

    start = evaluate_partition(problem, assignment).bottleneck
    info: dict = {}
    t, c = time.perf_counter(), time.process_time()
    kw = {**kw, "highs_options": {**HIGHS_DEFAULTS, **kw.get("highs_options", {})}}
    out = mip_polish(problem, assignment, report=info, **kw)
    sec, cpu = time.perf_counter() - t, time.process_time() - c
    if out is None:
        return start, sec, cpu, info
    got = decode_reference(problem, partition_priorities(problem, out[0])).cost
    assert got <= out[1] * (1 + 1e-9) + 1e-12, (got, out[1])
    return min(start, got), sec, cpu, info


def gmean(x) -> float:
    return math.exp(sum(math.log(v) for v in x) / len(x))


def run(k: int, names: list[str], show: bool) -> None:
    from jaxplace.cost import evaluate_partition

    with open(CACHE, "rb") as f:
        starts = pickle.load(f)[k]
    probs = k_problems(k)
    base = [evaluate_partition(p, a).bottleneck for p, a in zip(probs, starts, strict=True)]
    print(f"k={k}, {len(probs)} problems, n = {[p.n for p in probs]}; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    costs: dict[str, list[float]] = {}
    print("| variant | CPU s / problem (mean) | max CPU s | wall s (mean) | "
          "cost / start (geomean) | cost / full | improved | free nodes (first MIP, mean) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        kw = VARIANTS[name]
        c, secs, cpus, free = [], [], [], []
        for p, a in zip(probs, starts, strict=True):
            cost, sec, cpu, info = apply(p, a, kw)
            c.append(cost)
            secs.append(sec)
            cpus.append(cpu)
            free.append(info.get("free", [p.n])[0])
            if show:
                print(f"   {name} n={p.n}: {cost / evaluate_partition(p, a).bottleneck:.4f} "
                      f"{cpu:.2f} CPU s {info.get('free')} nodes={info.get('nodes')}",
                      flush=True)
        costs[name] = c
        vs_full = (f"{gmean([x / y for x, y in zip(c, costs['full'], strict=True)]):.4f}"
                   if "full" in costs else "-")
        print(f"| {name} | {np.mean(cpus):.2f} | {max(cpus):.2f} | {np.mean(secs):.2f} | "
              f"{gmean([x / y for x, y in zip(c, base, strict=True)]):.4f} | {vs_full} | "
              f"{sum(x < y * (1 - 1e-9) for x, y in zip(c, base, strict=True))} of "
              f"{len(c)} | {np.mean(free):.0f} |", flush=True)
    print(f"load at the end {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["cache", "run", "variants"])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--variants", default="full,band1,band2")
    ap.add_argument("--show", action="store_true", help="a line per problem")
    a = ap.parse_args()
    if a.what == "cache":
        cache()
    elif a.what == "variants":
        for name, kw in VARIANTS.items():
            print(name, kw)
    else:
        run(a.k, a.variants.split(","), a.show)


if __name__ == "__main__":
    main()
