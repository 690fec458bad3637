"""The planner's cheap facts at 5,000 and 20,000 ops, every generator family, and
`jaxplace partition --time-limit` on them (issue 51, item 3).

    python experiments/engine_facts.py facts 20000        # seconds of every fact
    python experiments/engine_facts.py partition 5000 60  # the CLI under a limit
    PYTHONPATH=/tmp/old-tree python experiments/engine_facts.py partition 5000 60 \
        erdos_renyi,unet                      # another tree's CLI, some families

Families: the five random models of the REGAL-like generator, and the DNN
generators (transformer, resnet, inception, unet) sized to about n ops. Graphs are
cached under /tmp/jaxplace-facts (generating 20,000-op REGAL-like graphs takes
minutes). Facts timed: build_atoms, the antichain check (widest_layer), the whole
exact check (`exact_fits`: the ideal count with its limits), the simple lower bound,
the memory check; "planner" is all of them in the planner's order.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

CACHE = "/tmp/jaxplace-facts"
REGAL = ("erdos_renyi", "barabasi_albert", "watts_strogatz", "random_geometric",
         "stochastic_block")
DNN = ("transformer", "resnet", "inception", "unet")


def dnn_graph(family: str, n: int):
    """A DNN generator's graph of about n ops (the smallest setting reaching n)."""
    from jaxplace.generators import dnn

    make = {"transformer": lambda s: dnn.transformer(layers=s),
            "resnet": lambda s: dnn.resnet(stages=(s, s, s, s)),
            "inception": lambda s: dnn.inception(modules=s),
            "unet": lambda s: dnn.unet(depth=4, convs=s)}[family]
    lo, hi = 1, 1
    while make(hi).num_nodes < n:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if make(mid).num_nodes < n:
            lo = mid + 1
        else:
            hi = mid
    return make(lo)


def graph(family: str, n: int):
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{family}-{n}.pkl")
    if os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    if family in REGAL:
        from jaxplace.generators.regal import regal

        g = regal(0, n=n, model=family)
    else:
        g = dnn_graph(family, n)
    with open(path, "wb") as f:
        pickle.dump(g, f)
    return g


def facts(n: int, families) -> None:
    import jaxplace as jp
    from jaxplace.exact.atoms import build_atoms
    from jaxplace.exact.lattice import widest_layer
    from jaxplace.objectives.api import simple_lower_bound as problem_lower_bound

    print(f"load {os.getloadavg()[0]:.1f}")
    print("family | ops | atoms | width | build_atoms s | antichain s | exact_fits s | "
          "lower bound s | memory check s | planner s | exact")
    for fam in families:
        t = time.perf_counter()
        g = graph(fam, n)
        gen = time.perf_counter() - t
        p = jp.Problem(g, 16)  # the planner's facts first, on a fresh graph (no
        obj = p.objective_impl  # cached units or structure)
        t0 = time.perf_counter()
        reason = obj.exact_fits(p)
        t1 = time.perf_counter()
        problem_lower_bound(p)
        t2 = time.perf_counter()
        obj.check_resources(p)
        t3 = time.perf_counter()
        t = time.perf_counter()
        atoms = build_atoms(p)
        ta = time.perf_counter() - t
        t = time.perf_counter()
        width = widest_layer(atoms)
        tw = time.perf_counter() - t
        print(f"{fam} | {p.n} | {atoms.num_atoms} | {width} | {ta:.2f} | {tw:.3f} | "
              f"{t1 - t0:.2f} | {t2 - t1:.3f} | {t3 - t2:.3f} | {t3 - t0:.2f} | "
              f"{reason or 'refused'} (generated in {gen:.0f} s)", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


def partition(n: int, limit: float, families) -> None:
    from jaxplace.formats.nodelink import nodelink_data

    print(f"load {os.getloadavg()[0]:.1f}")
    print("family | ops | process wall s | limit s | search_s | evaluations | cost | "
          "stopped | found_by")
    for fam in families:
        path = os.path.join(CACHE, f"{fam}-{n}.json")
        if not os.path.exists(path):
            with open(path, "w") as f:
                json.dump(nodelink_data(graph(fam, n)), f)
        out = os.path.join(CACHE, f"{fam}-{n}-result.json")
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "jaxplace", "partition", path, "-k",
                            "16", "--time-limit", str(limit), "-q", "-o", out],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            print(f"{fam} | failed {r.returncode}: {r.stderr.strip()[-300:]}", flush=True)
            continue
        with open(out) as f:
            res = json.load(f)
        search_s = (res.get("timings") or {}).get("search_s", float("nan"))
        print(f"{fam} | {n} | {wall:.1f} | {limit:g} | {search_s:.1f} | "
              f"{res.get('evaluations')} | "
              f"{res['bottleneck']:.6g} | {res.get('stopped', '-')} | "
              f"{res.get('found_by')}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    mode, n = sys.argv[1], int(sys.argv[2])
    fams = REGAL + DNN
    if mode == "facts":
        facts(n, sys.argv[3].split(",") if len(sys.argv) > 3 else fams)
    else:
        partition(n, float(sys.argv[3]), sys.argv[4].split(",") if len(sys.argv) > 4
                  else fams)
