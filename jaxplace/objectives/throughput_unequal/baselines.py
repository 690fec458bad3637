"""Baselines for throughput on unequal devices: what ignoring heterogeneity gives.

`uniform_split(problem)` searches the identical-device model (`objectives.throughput.reference`'s
MTPP, the fast special case) as a user would who describes every device as the
slowest one of the cluster (its op times, the slowest link's bandwidth, the smallest
memory as a hard capacity), then runs that split on the real cluster:

- `naive`: stage s on the cluster's device s (the order of the cluster file);
- `best_order`: the same split on the best of every ordered choice of devices.

Both are evaluated exactly by `jaxplace.objectives.throughput_unequal.reference.evaluate_stages`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from jaxplace.graph import CompGraph
from jaxplace.objectives.throughput_unequal.reference import evaluate_stages
from jaxplace.problem import Problem

#: Ordered device choices tried for `best_order`, at most.
MAX_ORDERS = 5040


@dataclass(frozen=True)
class UniformBaseline:
    """The identical-device split on the real cluster (module docstring).

    Attributes:
        assignment: (n,) stage of every op (pipeline order).
        uniform_cost: its bottleneck in the identical-device model (seconds).
        naive: bottleneck with stage s on device s.
        best_order: bottleneck on the best device order; `devices` is that order.
    """

    assignment: np.ndarray
    uniform_cost: float
    naive: float
    best_order: float
    devices: tuple[int, ...]


def slowest_device(inst) -> int:
    """The device with the largest total op time (ties: the smaller index)."""
    return int(np.argmax(inst.times.sum(axis=0)))


def identical_problem(problem: Problem, device: int | None = None) -> Problem:
    """The identical-device Problem of `problem` with every device like `device`
    (default: the slowest): its op times as work, tensor bytes as sizes, the
    slowest link as bandwidth, the smallest memory as the hard capacity."""
    inst = problem.pipeline_instance
    g = inst.graph
    p = slowest_device(inst) if device is None else int(device)
    tensors = [(int(g.tensor_producer[t]), float(inst.tensor_bytes[t]),
                [int(c) for c in g.consumers(t)]) for t in range(g.num_tensors)]
    ug = CompGraph(inst.times[:, p], g.edges, size_param=inst.memory, tensors=tensors,
                   names=g.names, op_types=g.op_types)
    d = inst.num_devices
    off = ~np.eye(d, dtype=bool)
    bw = float(inst.bandwidth[off].min()) if d > 1 else 1.0
    cap = float(inst.capacity.min())
    return Problem(ug, k=problem.k, bandwidth=bw,
                   capacity=None if not np.isfinite(cap) else cap)


def uniform_split(problem: Problem, *, method: str | None = None, **search_kw
                  ) -> UniformBaseline:
    """The identical-device search's split on the real cluster (module docstring);
    `search_kw` go to `jaxplace.search` (budget, time_limit, seed, ...)."""
    from jaxplace.search import search

    inst = problem.pipeline_instance
    up = identical_problem(problem)
    r = search(up, method, **{"progress": False, **search_kw})
    a = np.asarray(r.partition.assignment, np.int64)
    used = np.unique(a)
    a = np.searchsorted(used, a)
    S, d = len(used), inst.num_devices
    naive = evaluate_stages(inst, a, np.arange(d)).bottleneck
    best, devs = np.inf, tuple(range(S))
    for perm in itertools.islice(itertools.permutations(range(d), S), MAX_ORDERS):
        c = evaluate_stages(inst, a, list(perm)).bottleneck
        if c < best:
            best, devs = c, tuple(perm)
    return UniformBaseline(a, float(r.cost), float(naive), float(best), devs)


__all__ = ["UniformBaseline", "identical_problem", "slowest_device", "uniform_split"]
