"""Session 25 (issue 51, H1): the compiled-program keys of jp.search per graph, and what
each part of the key contributes.

    python experiments/programs_s25_keys.py [--count 30] [--sweep 10]

Prints, per graph of the regal-time suite (regal_set(count, seed=0), k = [4, 8, 16][i %
3]): n, k, the exact Spec, jp.search's Spec (`solo_bucket`), its window and the
neighbour table width; the number of distinct keys (Spec, window, neighbour width),
and how many remain when a component is dropped from the key (an upper bound on what
merging it could save). `--sweep G`: also the keys of a user sequence, the first G
graphs each at k = 2, 4, 8, 16.
"""

from __future__ import annotations

import argparse
from collections import Counter

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.decoder.layout import graph_structure, problem_spec
from jaxplace.objectives.throughput.bucket import solo_bucket
from jaxplace.search.many.api import prepare
from jaxplace.search.many.buckets import plan_buckets
from jaxplace.search.programs import neighbour_table


def keys(problems) -> tuple[int, int]:
    """(distinct jp.search programs, distinct search_many one-problem classes)."""
    cls = [prepare(p, 0, coupled=False).cls for p in problems]
    solo = {(b.spec, b.window) for b in map(solo_bucket, cls)}
    many = {(b.spec, b.window) for b in (plan_buckets([c])[0] for c in cls)}
    return len(solo), len(many)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweep", type=int, default=0)
    a = ap.parse_args()
    rows = []
    for i, g, k in instances(a.count, (4, 8, 16), a.seed):
        p = jp.Problem(g, k)
        ex = problem_spec(p, graph_structure(g))
        b = solo_bucket(prepare(p, 0, coupled=False).cls)
        spec, window = b.spec, b.window
        Dn = int(neighbour_table(p, spec.width)[0].shape[1])
        rows.append((spec, window, Dn))
        print(f"{i:2d} n={g.num_nodes:3d} k={k:2d} exact(N={ex.N},T={ex.T},D={ex.D},S={ex.S}) "
              f"search(N={spec.N},T={spec.T},D={spec.D},S={spec.S},K={spec.K}) "
              f"window={window} Dn={Dn}")
    print(f"distinct (Spec, window, Dn): {len(Counter(rows))}")
    drops = {
        "D": lambda s, w, d: (s.N, s.T, s.S, s.K, w, d),
        "S": lambda s, w, d: (s.N, s.T, s.D, s.K, w, d),
        "K": lambda s, w, d: (s.N, s.T, s.D, s.S, w, d),
        "D,S": lambda s, w, d: (s.N, s.T, s.K, w, d),
        "T": lambda s, w, d: (s.N, s.D, s.S, s.K, w, d),
        "window": lambda s, w, d: (s, d),
        "Dn": lambda s, w, d: (s, w),
    }
    for name, f in drops.items():
        print(f"  without {name}: {len(Counter(f(*r) for r in rows))}")
    suite = [jp.Problem(g, k) for _, g, k in instances(a.count, (4, 8, 16), a.seed)]
    solo, many = keys(suite)
    print(f"suite: jp.search programs {solo}, search_many one-problem classes {many}")
    if a.sweep:
        sweep = [jp.Problem(g, k) for _, g, _ in instances(a.sweep, (4,), a.seed)
                 for k in (2, 4, 8, 16)]
        solo, many = keys(sweep)
        print(f"sweep ({a.sweep} graphs x k = 2, 4, 8, 16): jp.search programs {solo}, "
              f"search_many one-problem classes {many}")


if __name__ == "__main__":
    main()
