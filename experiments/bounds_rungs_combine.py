"""Combine `jaxplace bench bounds` logs of runs that share an --upper-cache.

Every log line "graph I n=N k=K: UB U (source)  name frac (...)  ..." gives each
rung's bound as frac * U. Per instance: the best upper bound over the runs, each
rung's bound over it, and the ladders named below (max over their rungs); then
geometric means per k.

    python experiments/bounds_rungs_combine.py LOG [LOG ...]
"""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict

LADDERS = {
    "today (simple, bottleneck, exact)": ("simple", "bottleneck", "exact"),
    "new (+ station, station-check)": ("simple", "station", "bottleneck",
                                       "station-check", "exact"),
}
LINE = re.compile(r"graph (\d+) n=(\d+) k=(\d+): UB ([0-9.e+]+) \(([^)]*)\)(.*)")
RUNG = re.compile(r"  ([a-z-]+) ([0-9.]+|inf|nan) \(")


def read(paths):
    ub = {}
    lb = defaultdict(dict)
    for path in paths:
        for line in open(path):
            m = LINE.match(line.strip())
            if not m:
                continue
            key = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
            u = float(m.group(4))
            ub[key] = min(ub.get(key, math.inf), u)
            for name, frac in RUNG.findall(m.group(6)):
                b = float(frac) * u
                lb[key][name] = max(lb[key].get(name, 0.0), b)
    return ub, lb


def gmean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def main(paths) -> None:
    ub, lb = read(paths)
    ks = sorted({k for _, _, k in ub})
    names = sorted({n for d in lb.values() for n in d})
    print("| graph | n | k | " + " | ".join(names) + " | "
          + " | ".join(LADDERS) + " |")
    print("|---|---|---|" + "---|" * (len(names) + len(LADDERS)))
    per_k = defaultdict(lambda: defaultdict(list))
    for key in sorted(ub, key=lambda t: (t[2], t[0])):
        g, n, k = key
        u = ub[key]
        row = [f"{lb[key][m] / u:.4f}" if m in lb[key] else "-" for m in names]
        for m in names:
            if m in lb[key]:
                per_k[k][m].append(lb[key][m] / u)
        for lad, rungs in LADDERS.items():
            best = max((lb[key].get(m, 0.0) for m in rungs), default=0.0) / u
            per_k[k][lad].append(best)
            row.append(f"{best:.4f}")
        print(f"| g{g} | {n} | {k} | " + " | ".join(row) + " |")
    print()
    print("| k | " + " | ".join(names) + " | " + " | ".join(LADDERS) + " |")
    print("|---|" + "---|" * (len(names) + len(LADDERS)))
    for k in ks:
        print(f"| {k} | " + " | ".join(f"{gmean(per_k[k][m]):.4f}" for m in names)
              + " | " + " | ".join(f"{gmean(per_k[k][lad]):.4f}" for lad in LADDERS)
              + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
