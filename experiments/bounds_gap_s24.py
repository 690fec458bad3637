"""Where the gap sits on the bench's REGAL pairs (issue 53, session 24).

    python experiments/bounds_gap_s24.py            # table 1: the plans' balance
    python experiments/bounds_gap_s24.py 0:16:0.80 1:16:0.87 2:16:0.90 0:8:0.80 1:8:0.90
                                                    # table 2: transfers, bound vs plan

Table 1, per best plan known (the cache or the floor runs' best): the simple bound
W/K, the plan's mean block cost (W + transfers paid)/K and its least block, as
fractions of its bottleneck. A sum-type bound (K T >= W + what every split of cost <= T
pays: `cross`) can reach at most the least mean block cost over those splits.

Table 2, at T = a fraction of the best plan's cost (near the cross bound): the
transfers the cross bound charges (sum of c size over the groups, c = the blocks a cut
group touches at least, minus what the whole-groups LP lets be held whole) against
what the plan pays, split into the plan's whole-group savings and the blocks it
touches its cut groups with above c.
"""

import glob
import json
import sys

import numpy as np

import jaxplace as jp
from jaxplace.cost import partition_costs
from jaxplace.exact import bbr_cross as bc
from jaxplace.exact.bbr_model import build_model
from jaxplace.exact.bbr_split import cut_counts
from jaxplace.generators import regal_set

graphs = regal_set(3, seed=0)
cache = json.load(open("experiments/bounds_rungs_upper.json"))
best = {}
for path in glob.glob("experiments/bounds_floor_runs/*.jsonl"):
    for line in open(path):
        d = json.loads(line)
        if "best_assignment" in d:
            key = (d["graph"], d["k"])
            if key not in best or d["best_ub"] < best[key][0]:
                best[key] = (d["best_ub"], np.asarray(d["best_assignment"], np.int64))


def plan(gi, k):
    p = jp.Problem(graphs[gi], k)
    a = np.asarray(cache[f"search-64-seed0-{gi}-n{p.n}-k{k}"], np.int64)
    if (gi, k) in best and best[(gi, k)][0] < partition_costs(p, a).bottleneck:
        a = best[(gi, k)][1]
    return p, a


if len(sys.argv) == 1:
    print("| pair | UB | W/K / UB | mean cost / UB | min block / UB | work share of "
          "bottleneck block | transfers / W |")
    print("|---|---|---|---|---|---|---|")
    for gi in range(3):
        for k in (4, 8, 16):
            p, a = plan(gi, k)
            c = partition_costs(p, a)
            ub, W = c.bottleneck, p.graph.work.sum()
            j = int(np.argmax(c.total))
            print(f"| g{gi} k={k} | {ub:.1f} | {W / k / ub:.4f} | {c.total.sum() / k / ub:.4f} | "
                  f"{c.total[c.total > 0].min() / ub:.4f} | {c.work[j] / c.total[j]:.3f} | "
                  f"{(c.io_in + c.io_out).sum() / W:.3f} |")
    sys.exit()
print("| pair | T / UB | K T - W | bound's transfers (c size - whole) | plan's transfers | "
      "plan's whole savings | bound's whole savings | plan's blocks above c on cut groups |")
print("|---|---|---|---|---|---|---|---|")
for s in sys.argv[1:]:
    gi, k, f = s.split(":")
    gi, k, f = int(gi), int(k), float(f)
    p, a = plan(gi, k)
    ub = partition_costs(p, a).bottleneck
    m = build_model(p)
    cd = m.cross
    blk = np.zeros(m.num_atoms, np.int64)
    blk[m.atom_of] = a
    nb = np.array([len(np.unique(blk[row])) for row in cd.gatoms])
    whole = nb == 1
    T = f * ub
    win = bc.atom_windows(cd, T)
    _, q, apart = bc._crossings(cd, T, win)
    cut = cut_counts(cd.split, T, q, cd.gsize, win).astype(float)
    most = float(cut @ cd.gsize)
    wm = bc._whole_most(cd, q, apart, T, -np.inf, np.inf, cut)
    paid = float((cd.gsize * nb)[~whole].sum())
    saved = float((cut * cd.gsize)[whole].sum())
    above = float(((nb - cut) * cd.gsize)[~whole].sum())
    print(f"| g{gi} k={k} | {f:.3f} | {k * T - cd.total_work:.0f} | {most - wm:.0f} | "
          f"{paid:.0f} | {saved:.0f} | {wm:.0f} | {above:.0f} |")
