"""Where one BB&R check loses time on a REGAL graph: the root bounds as fractions of
the cached upper bound, then single checks at guesses above the best root bound
(answer, nodes/s, blocks grown/s, deepest node, what cut the blocks that fit).

    python experiments/bbr_profile.py GRAPH K SECONDS [rel guesses, e.g. 1.0,1.02]
"""

import json
import math
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bounds.base import BoundContext
from jaxplace.bounds.registry import BOUNDS
from jaxplace.cost import evaluate_partition, simple_lower_bound
from jaxplace.exact.bbr_cross import crossing_bound
from jaxplace.exact.bbr_model import build_model, tdata
from jaxplace.exact.bbr_search import CheckStats, Memo, OutOfTime, check
from jaxplace.generators import regal_set

gi, k, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
rels = [float(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "1.0,1.01,1.03").split(",")]
g = regal_set(gi + 1, seed=0)[gi]
p = jp.Problem(g, k)
cache = json.load(open("experiments/bounds_rungs_upper.json"))
a = np.asarray(cache[f"search-64-seed0-{gi}-n{g.num_nodes}-k{k}"])
ub = evaluate_partition(p, a).bottleneck
t0 = time.perf_counter()
m = build_model(p)
L = simple_lower_bound(p)
st = BOUNDS["station"].run(p, BoundContext(time_limit=10, lower_bound=L, upper_bound=ub,
                                           assignment=a)).bound
cb = crossing_bound(m.cross, L, ub)
print(f"g{gi} n={g.num_nodes} atoms={m.num_atoms} k={k} UB {ub:.6g}: simple {L / ub:.4f} "
      f"station {st / ub:.4f} cross {cb / ub:.4f} ({time.perf_counter() - t0:.2f}s)")
lo = max(st, cb)
memo = Memo()
for r in rels:
    T = lo * r
    td = tdata(m, T)
    stats = CheckStats()
    t1 = time.perf_counter()
    try:
        ans = "refuted" if check(m, td, memo, t1 + secs, stats=stats) is None else "feasible"
    except OutOfTime:
        ans = "unknown"
    dt = time.perf_counter() - t1
    print(f"  T {T / ub:.4f} of UB: {ans} in {dt:.1f}s, nodes {stats.nodes} "
          f"({stats.nodes / dt:.0f}/s), blocks {stats.blocks} ({stats.blocks / dt:.0f}/s), "
          f"depth {stats.depth}/{m.K}, cut by bounds {stats.cut_fits}, dominated "
          f"{stats.cut_dominated}, cut while growing {stats.cut_growth}, "
          f"memo {len(memo)} hits {memo.hits}, forced groups "
          f"{sum(td.forced)}/{len(td.forced)}", flush=True)
    if ans == "feasible" or (ans == "unknown" and math.isfinite(secs)):
        pass
