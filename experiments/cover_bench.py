"""Issue 16 measurement: where the REGAL-like certificates are weak, and the cover bound.

Per graph of `regal_set(count, seed=0)` and k: the default search's partition (UB),
the exact MIP's root LP, its dual bound over time and its incumbent (T s, started from
the search's partition, z >= the simple bound only), the bottleneck MIP (T s) and the
cover bound (T s, searching z from the simple bound). One JSON line per instance.

    nice -n 10 python experiments/cover_bench.py --count 3 --ks 16,8,4 --time-limit 60

Ratios in experiments/bench_bounds.md divide by min(search cost, exact MIP incumbent).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds._model import solve_model
from jaxplace.bounds.bottleneck import bottleneck_bound
from jaxplace.bounds.cover import CoverConfig, cover_bound
from jaxplace.bounds.exact import exact_bound, exact_model
from jaxplace.cost import simple_lower_bound
from jaxplace.generators import regal_set
from jaxplace.search import search


def at(history, t):
    """The dual bound reached by time t (nan before the first record)."""
    seen = [h for h in history if h[0] <= t]
    return seen[-1][2] if seen else float("nan")


def instance(g, k, seed, T):
    p = jp.Problem(g, k)
    t0 = time.perf_counter()
    s = search(p, seed=seed, progress=False)
    ub, a, t_search = float(s.cost), s.partition.assignment, time.perf_counter() - t0
    t0 = time.perf_counter()
    lp = solve_model(exact_model(p, relax=True), relax=True, time_limit=T)
    t_lp = time.perf_counter() - t0
    ex, _, _ = exact_bound(p, a, time_limit=T)
    bn, _ = bottleneck_bound(p, time_limit=T)
    t0 = time.perf_counter()
    cv, tests = cover_bound(p, simple_lower_bound(p), ub, assignment=a, time_limit=T,
                            config=CoverConfig())
    return dict(n=g.num_nodes, k=k, ub_search=ub, t_search=t_search,
                simple=simple_lower_bound(p), root_lp=lp.bound, t_root_lp=t_lp,
                exact=ex.bound, exact_incumbent=ex.primal, exact_nodes=ex.nodes,
                exact_at={s_: at(ex.history, s_) for s_ in (5, 15, 30)},
                bottleneck=bn.bound, bottleneck_status=bn.status, cover=cv,
                t_cover=time.perf_counter() - t0,
                cover_tests=[(t.z / ub, t.refuted, t.iterations, t.polished / ub)
                             for t in tests])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=3)
    ap.add_argument("--ks", default="16,8,4")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    for i, g in enumerate(regal_set(args.count, seed=0)):
        for k in (int(x) for x in args.ks.split(",")):
            row = instance(g, k, i, args.time_limit)
            print(json.dumps({"graph": i, **row},
                             default=lambda x: float(x) if np.isscalar(x) else str(x)),
                  flush=True)


if __name__ == "__main__":
    main()
