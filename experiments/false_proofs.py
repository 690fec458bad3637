"""Scan certify-with-a-partition for false proofs on tiny throughput instances.

Oracle: every assignment of the n ops to k blocks, costed from the definition
(docs/problem.md) with Python sets, contiguity checked by a DFS over the block graph:
nothing from jaxplace's cost code. A false proof: a lower bound above the optimum, or
`optimal` at a cost above it.

    python experiments/false_proofs.py                  # the one-value variations
    python experiments/false_proofs.py --random 300     # also 300 seeded random instances
    python experiments/false_proofs.py --tight 300      # and 300 shaped like the defect
    python experiments/false_proofs.py --near 300       # and 300 two changes from it

It runs the library as shipped, through its public face. The ablations with the
guards off (the MIP start unconfirmed, no cross-check) patched library internals;
that version of this script is in git history (experiments/false_proofs.md).
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

import jaxplace as jp

WORK, EDGES = [0, 3, 0, 0], [(0, 2), (1, 3)]
PARAM, OUT = [3, 3, 1, 3], [1, 0, 3, 0]
PART = [0, 0, 1, 0]
LADDERS = [("simple", "bottleneck", "bottleneck-guess", "exact"), ("exact",),
           ("bottleneck-lp", "exact")]
RTOL = 1e-6


def block_cost(work, edges, out, S, memory, param, bandwidth):
    S = set(S)
    c = sum(work[v] for v in S)
    for u in range(len(work)):
        cons = {v for a, v in edges if a == u}
        if not cons:
            continue
        if u in S and cons - S:
            c += out[u] / bandwidth
        if u not in S and cons & S:
            c += out[u] / bandwidth
    if memory is not None:
        c += max(0.0, sum(param[v] for v in S) - memory) / bandwidth
    return c


def acyclic(edges, a, k):
    succ = {b: set() for b in range(k)}
    for u, v in edges:
        if a[u] != a[v]:
            succ[a[u]].add(a[v])
    state = {}

    def visit(b):
        state[b] = 1
        for c in succ[b]:
            if state.get(c) == 1 or (c not in state and not visit(c)):
                return False
        state[b] = 2
        return True

    return all(b in state or visit(b) for b in range(k))


def optimum(work, edges, param, out, k, memory=None, bandwidth=1.0):
    n, best = len(work), np.inf
    for a in itertools.product(range(k), repeat=n):
        if not acyclic(edges, a, k):
            continue
        cost = max(block_cost(work, edges, out, [v for v in range(n) if a[v] == b],
                              memory, param, bandwidth) for b in range(k))
        best = min(best, cost)
    return best


def variations():
    """One value of the instance changed: an entry of work, size_param or size_out to
    another value in 0..4, k to 1, 2 or 4, an entry of the partition to another block."""
    base = {"work": WORK, "param": PARAM, "out": OUT, "edges": EDGES, "k": 3, "part": PART}
    for key in ("work", "param", "out"):
        for i in range(4):
            for v in range(5):
                if v != base[key][i]:
                    new = list(base[key])
                    new[i] = v
                    yield {**base, key: new}
    for k in (1, 2, 4):
        yield {**base, "k": k}
    for i in range(4):
        for b in range(3):
            if b != PART[i]:
                part = list(PART)
                part[i] = b
                yield {**base, "part": part}


def random_cases(count, seed):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(3, 6))
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.4]
        yield {"work": rng.integers(0, 5, n).tolist(), "param": rng.integers(0, 4, n).tolist(),
               "out": rng.integers(0, 4, n).tolist(), "edges": edges,
               "k": int(rng.integers(1, 4)), "part": rng.integers(0, 3, n).tolist(),
               "memory": None if rng.random() < 0.5 else float(rng.integers(1, 5))}


def tight_cases(count, seed):
    """Random instances shaped like the defect's: one op holds all the work, so the
    optimum often equals the simple bound (the case HiGHS's presolve settles)."""
    rng = np.random.default_rng(seed)
    for c in random_cases(count, seed + 1):
        work = [0] * len(c["work"])
        work[int(rng.integers(len(work)))] = int(rng.integers(1, 5))
        yield {**c, "work": work, "memory": None}


def near_cases(count, seed, changes=2):
    """The defect's instance with `changes` random values changed (work, size_param,
    size_out entries in 0..4, a block of the partition)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        c = {"work": list(WORK), "param": list(PARAM), "out": list(OUT), "edges": EDGES,
             "k": 3, "part": list(PART)}
        for _ in range(changes):
            key = ["work", "param", "out", "part"][int(rng.integers(4))]
            c[key][int(rng.integers(4))] = int(rng.integers(0, 3 if key == "part" else 5))
        yield c


def scan(cases, methods):
    probes = false = refuted = skipped = 0
    for c in cases:
        g = jp.CompGraph(c["work"], c["edges"], size_param=c["param"], size_out=c["out"])
        problem = jp.Problem(g, c["k"], memory=c.get("memory"))
        part = [min(b, c["k"] - 1) for b in c["part"]]
        if not acyclic(c["edges"], part, c["k"]):
            skipped += 1
            continue
        opt = optimum(c["work"], c["edges"], c["param"], c["out"], c["k"], c.get("memory"))
        cert = jp.certify(problem, part, methods=methods, time_limit=20)
        probes += 1
        refuted += bool(getattr(cert, "notes", []))
        if cert.lower_bound > opt * (1 + RTOL) + 1e-12 or (
                cert.optimal and cert.upper_bound > opt * (1 + RTOL) + 1e-12):
            false += 1
    return probes, false, refuted, skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=0, help="random instances too")
    ap.add_argument("--tight", type=int, default=0,
                    help="random instances with all the work on one op too")
    ap.add_argument("--near", type=int, default=0,
                    help="the defect's instance with two random values changed")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sets = [("one-value variations", list(variations()))]
    if args.random:
        sets.append((f"random (seed {args.seed})", list(random_cases(args.random, args.seed))))
    if args.tight:
        sets.append((f"tight (seed {args.seed})", list(tight_cases(args.tight, args.seed))))
    if args.near:
        sets.append((f"near (seed {args.seed})", list(near_cases(args.near, args.seed))))
    print("| instances | ladder | probes | false proofs | with a note | skipped (cyclic "
          "partition) | s |")
    print("|---|---|---|---|---|---|---|")
    for name, cases in sets:
        for methods in LADDERS:
            t0 = time.perf_counter()
            probes, false, noted, skipped = scan(cases, methods)
            print(f"| {name} | {','.join(methods)} | {probes} | {false} | {noted} | "
                  f"{skipped} | {time.perf_counter() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
