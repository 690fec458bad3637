"""Where the warm search_many pass of the regal-time suite spends its time (issue 51).

    python experiments/engine_warm_split.py [count]

One process, per k (10 graphs each): `prepare` alone (heuristic orders sliced in NumPy,
classes, policy distributions), then search_many with the polish off (this first call
compiles: a bucket's program is shaped by its number of problems), with the default
polish, and with the polish off again (warm). Polish = default - second off; search
chunks = second off - prepare.
"""

from __future__ import annotations

import sys
import time

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import prepare, search_many
from jaxplace.search.many.api import geometric_mean


def main(count: int = 30) -> None:
    probs = [jp.Problem(g, k) for _, g, k in instances(count, [4, 8, 16], 0)]
    for k in (4, 8, 16):
        sub = [p for p in probs if p.k == k]
        t = time.perf_counter()
        for i, p in enumerate(sub):
            prepare(p, i)
        t_prep = time.perf_counter() - t
        t = time.perf_counter()
        search_many(sub, seed=0, polish=False)
        t_first = time.perf_counter() - t
        t = time.perf_counter()
        on = search_many(sub, seed=0)
        t_on = time.perf_counter() - t
        t = time.perf_counter()
        off = search_many(sub, seed=0, polish=False)
        t_off = time.perf_counter() - t
        gm = geometric_mean([a.cost / b.cost for a, b in zip(on, off, strict=True)])
        ev = sum(r.evaluations for r in on) / len(on)
        print(f"k={k:2d} ({len(sub)} graphs): prepare {t_prep:6.1f} s, first call (compiles) "
              f"{t_first:6.1f} s, default {t_on:6.1f} s, polish off {t_off:6.1f} s; "
              f"mean evaluations {ev:,.0f}; "
              f"cost default / polish off {gm:.4f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
