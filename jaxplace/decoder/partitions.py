"""Decoding: the full partition (order, cuts, assignment) of priority vectors.

Orders (and, on plain graphs, the DP's split choices) are computed in JAX for a
batch; the traceback and the heterogeneous device-typed split run on the host in
float64, so the returned `Partition` is exact for the partition it describes.
"""

from __future__ import annotations

from functools import partial

import jax
import numpy as np

from jaxplace.decoder.kahn import kahn_one, priority_keys
from jaxplace.decoder.layout import Spec
from jaxplace.decoder.scoring import unit_priorities
from jaxplace.decoder.slicing import FEWER, slice_one
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import slice_order
from jaxplace.partition import Partition
from jaxplace.problem import Problem


@partial(jax.jit, static_argnames=("spec", "use_keys", "orders_only"))
def decode_chunk(spec: Spec, g, Z, *, use_keys: bool, orders_only: bool = False):
    """Unit orders of (P, width) priorities or (P, N) keys, with the DP's choices
    ((P,) costs, (P, K, N+1) choices) unless `orders_only`."""

    def one(z):
        keys = z if use_keys else priority_keys(unit_priorities(spec, g, z[None])[0], g.n)
        order = kahn_one(spec, g, keys)
        if orders_only:
            return order
        cost, ch = slice_one(spec, g, order, with_choice=True)
        return order, cost, ch

    return jax.vmap(one)(Z)


def traceback(problem: Problem, order: np.ndarray, ch: np.ndarray) -> Partition:
    """The Partition of a plain graph from its order and the DP's choice table."""
    n = problem.n
    j, t = min(problem.k, n), n
    starts = []
    while t > 0:
        c = int(ch[j - 1, t])
        if c == FEWER:
            j -= 1
            continue
        starts.append(c)
        t, j = c, j - 1
    cuts = tuple(sorted(s for s in starts if s > 0))
    assignment = np.empty(n, dtype=np.int64)
    for b, block in enumerate(np.split(order, list(cuts))):
        assignment[block] = b
    cost = evaluate_partition(problem, assignment).bottleneck
    return Partition(order, cuts, assignment, cost)


def partitions(problem: Problem, spec: Spec, out, count: int) -> list[Partition]:
    """Partitions of the first `count` rows of `decode_chunk`'s output."""
    plain = not (spec.NX or spec.C or spec.use_bad)
    n = problem.n
    if plain:
        order, _, ch = (np.asarray(a) for a in out)
        return [traceback(problem, order[i, :n].astype(np.int64), ch[i])
                for i in range(count)]
    # units, CPUs: the device-typed DP of the reference on the host, float64
    order = np.asarray(out)
    units = problem.graph.units
    U = units.num_units
    return [slice_order(problem, np.concatenate(
        [units.unit_members(int(u)) for u in order[i, :U]]).astype(np.int64))
        for i in range(count)]


__all__ = ["decode_chunk", "partitions", "traceback"]
