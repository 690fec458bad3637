"""A/B on the CPU: the device refinement (search/many/_device_refine.py) against the
HiGHS MIP polish, from the same starts, on the regal-time suite's k = 4 graphs.

Starts: search_many's CPU default mode with the polish off (exact step off, so every
graph is searched). Then, per graph: the MIP polish (the library's default settings,
one HiGHS thread, its node limit), and the device refinement of all graphs in one
call (compiled first, then timed warm) for each --steps. Prints one markdown table
(cost / C++ is against the C++ brkga-10000 costs when --cpp is given, else cost /
start) and the load.

    nice python experiments/device_refine_ab.py --count 30 --steps 4,16,64
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.objectives.throughput.polish import mip_polish
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.search.many import search_many
from jaxplace.search.many._device_refine import refine


def gm(x) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(x, np.float64)))))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", default="4,16,64")
    a = ap.parse_args()
    probs = [jp.Problem(g, k) for _, g, k in instances(a.count, [4, 8, 16], a.seed)
             if k == 4]
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    starts = search_many(probs, polish=False, exact=False, seed=a.seed)
    t_start = time.perf_counter() - t0
    base = np.array([r.cost for r in starts])
    rows = [["start (CPU default, polish off)", f"{t_start:.1f}", "1", "-"]]

    t0 = time.perf_counter()
    pol = []
    for p, r in zip(probs, starts, strict=True):
        out = mip_polish(p, r.partition.assignment)
        pol.append(r.cost if out is None else min(r.cost, float(out[1])))
    t_pol = time.perf_counter() - t0
    rows.append(["MIP polish (per graph, 1 thread)", f"{t_pol:.1f}",
                 f"{gm(np.array(pol) / base):.4f}",
                 f"{int(np.sum(np.array(pol) < base * (1 - 1e-9)))}/{len(probs)}"])

    X = [r.priorities for r in starts]
    for steps in [int(s) for s in a.steps.split(",")]:
        t0 = time.perf_counter()
        refine(probs, X, steps=steps)  # compile
        t_c = time.perf_counter() - t0
        t0 = time.perf_counter()
        Xr, _, applied = refine(probs, X, steps=steps)
        t_r = time.perf_counter() - t0
        got = np.array([min(b, decode_reference(p, x[:p.n]).cost)
                        for p, x, b in zip(probs, Xr, base, strict=True)])
        rows.append([f"device refinement, {steps} rounds (all graphs, one call; compile "
                     f"{t_c:.1f} s apart)", f"{t_r:.1f}", f"{gm(got / base):.4f}",
                     f"{int(np.sum(got < base * (1 - 1e-9)))}/{len(probs)} "
                     f"({int(applied.sum())} moves)"])
    from jaxplace.bench.runs import markdown_table

    print(markdown_table(["step", "wall s", "cost / start (geo. mean)", "graphs improved"],
                         rows))
    print(f"{len(probs)} graphs (k = 4) of the regal-time suite ({a.count}, seed {a.seed}); "
          f"load {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"{os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
