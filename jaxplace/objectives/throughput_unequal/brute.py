"""Brute force for tiny instances: the oracle of `objectives.throughput_unequal.reference`'s DP.

`best_split` tries every split of one order on one device sequence; `optimum` every
pipeline of the graph: every stage map (edges never go back, no empty stage) and
every ordered choice of distinct devices, scored by `evaluate_stages`.
"""

from __future__ import annotations

import itertools

import numpy as np

from jaxplace.objectives.throughput_unequal.reference import evaluate_stages


def best_split(inst, order, devices, k: int) -> float:
    """Best bottleneck over every split of `order` into <= k non-empty stages, stage s
    on devices[s]."""
    n = inst.n
    order = np.asarray(order, np.int64)
    best = np.inf
    for S in range(1, min(k, len(devices), n) + 1):
        for cuts in itertools.combinations(range(1, n), S - 1):
            a = np.empty(n, np.int64)
            for s, piece in enumerate(np.split(order, list(cuts))):
                a[piece] = s
            best = min(best, evaluate_stages(inst, a, devices[:S]).bottleneck)
    return best


def optimum(inst, k: int) -> float:
    """Best bottleneck over every pipeline of at most k stages (exponential)."""
    g, n, d = inst.graph, inst.n, inst.num_devices
    e = g.edges
    best = np.inf
    for S in range(1, min(k, d, n) + 1):
        for a in itertools.product(range(S), repeat=n):
            a = np.asarray(a, np.int64)
            if len(np.unique(a)) != S or (len(e) and np.any(a[e[:, 0]] > a[e[:, 1]])):
                continue
            for devs in itertools.permutations(range(d), S):
                best = min(best, evaluate_stages(inst, a, list(devs)).bottleneck)
    return best


__all__ = ["best_split", "optimum"]
