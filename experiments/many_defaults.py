"""Cost against evaluations and wall for search_many's defaults (issue 51, session 23).

    python experiments/many_defaults.py [variant ...]

One process: the 30-graph regal-time suite (bench batch's problems), a first call to
compile, then each variant warm; per variant the geometric-mean cost against the C++
peer's brkga-10000 costs of the same graphs and seeds (read from
experiments/engine_pair_s22/after.json: the peer is deterministic, so its costs are
the same in every run), per k, mean evaluations and the wall. A variant is
comma-separated key=value of search_many options, e.g. "patience=4000,polish=0".
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import search_many

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(v: str) -> dict:
    kw = {}
    for item in filter(None, v.split(",")):
        key, val = item.split("=")
        kw[key] = {"polish": lambda s: {"auto": None, "1": True, "0": False}[s]}.get(
            key, lambda s: None if s == "none" else float(s) if "." in s else int(s))(val)
    return kw


def gm(x) -> float:
    return float(np.exp(np.mean(np.log(np.asarray(x, np.float64)))))


def main(variants: list[str]) -> None:
    cpp = json.load(open(os.path.join(HERE, "engine_pair_s22", "after.json")))
    cpp = np.asarray(cpp["cpp-brkga-10000"]["costs"], np.float64)
    inst = instances(30, [4, 8, 16], 0)
    probs = [jp.Problem(g, k) for _, g, k in inst]
    ks = np.array([k for _, _, k in inst])
    compiled = set()
    for v in variants:
        kw = parse(v)
        gkey = kw.get("group"), kw.get("max_programs")
        if gkey not in compiled:  # a new program shape: compile it untimed
            t = time.perf_counter()
            search_many(probs, seed=0, budget=300, polish=False,
                        **{k: kw[k] for k in ("group", "max_programs") if k in kw})
            print(f"# compile for {gkey}: {time.perf_counter() - t:.1f} s", flush=True)
            compiled.add(gkey)
        la = os.getloadavg()[0]
        t = time.perf_counter()
        rs = search_many(probs, seed=0, **kw)
        wall = time.perf_counter() - t
        r = np.array([x.cost for x in rs]) / cpp
        ev = np.mean([x.evaluations for x in rs])
        per_k = " ".join(f"k{k}={gm(r[ks == k]):.4f}" for k in (4, 8, 16))
        if os.environ.get("MANY_DEFAULTS_DUMP"):  # histories, for replaying stops
            import pickle

            with open(os.environ["MANY_DEFAULTS_DUMP"] + f".{v or 'default'}.pkl", "wb") as f:
                pickle.dump([dict(cost=x.cost, evaluations=x.evaluations, info=x.info,
                                  hist=(np.asarray(x.history.evaluations),
                                        np.asarray(x.history.best)))
                             for x in rs], f)
        print(f"{v or 'default':40s} cost/C++ {gm(r):.4f} ({per_k}) evals {ev:8.0f} "
              f"wall {wall:6.1f} s load {la:.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or [""])
