"""The cover rung started at the ladder's bound (`CoverConfig(start="ladder")`) through
`jp.certify`, after simple, station and cross, with a long limit (session 25).

    nice python experiments/cover_s25_climb.py GRAPH K SECONDS
"""

from __future__ import annotations

import json
import sys

import numpy as np

import jaxplace as jp
from jaxplace.bounds import certify
from jaxplace.bounds.cover import CoverBound, CoverConfig
from jaxplace.bounds.registry import BOUNDS, Ladder
from jaxplace.generators import regal_set


def main():
    gi, k, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    problem = jp.Problem(regal_set(3, seed=0)[gi], k)
    cache = json.load(open("experiments/bounds_rungs_upper.json"))
    a = np.asarray(cache[f"search-64-seed0-{gi}-n{problem.n}-k{k}"], dtype=np.int64)
    registry = Ladder([CoverBound("cover", CoverConfig(start="ladder")) if name == "cover"
                       else BOUNDS[name] for name in ("simple", "station", "cross",
                                                      "cover")])
    cert = certify(problem, a, methods=("simple", "station", "cross", "cover"),
                   time_limit=seconds, registry=registry)
    ub = cert.upper_bound
    for r in cert.results:
        print(f"graph {gi} k={k} {r.name}: {r.bound / ub:.4f} of UB ({r.status}, "
              f"{r.time:.1f} s)")


if __name__ == "__main__":
    main()
