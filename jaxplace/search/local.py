"""Batched local search on the order (`ShiftSearch`), optionally focused on the
incumbent's bottleneck block and its neighbours."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.problem import Problem
from jaxplace.search.driver import LoopOutcome, Run, run_program
from jaxplace.search.programs import SearchData, ShiftSearch, neighbour_table


def bottleneck_pool(problem: Problem, x, width: int):
    """((width,) int32 nodes, () int32 count): the nodes of the bottleneck block of
    Decode(x) and of the blocks next to it in the order (padded with 0)."""
    part = decode_reference(problem, np.asarray(x, np.float32)[:problem.n])
    a = np.asarray(part.assignment)
    total = evaluate_partition(problem, a).total
    b = int(np.argmax(total))
    seq = a[np.asarray(part.order)]
    at = np.flatnonzero(seq == b)
    keep = {b}
    if len(at):
        if at[0] > 0:
            keep.add(int(seq[at[0] - 1]))
        if at[-1] + 1 < len(seq):
            keep.add(int(seq[at[-1] + 1]))
    nodes = np.flatnonzero(np.isin(a, list(keep))).astype(np.int32)
    pool = np.zeros(width, np.int32)
    pool[:len(nodes)] = nodes
    return jnp.asarray(pool), jnp.asarray(len(nodes), jnp.int32)


def shift_search(problem: Problem, x0, *, steps: int, batch: int = 64, moves: int = 3,
                 focus: float = 0.0, seed: int = 0, run: Run | None = None,
                 patience: int | None = None, chunk: int | None = None,
                 device=None, window: int | None = None) -> LoopOutcome:
    """Batched local search on the order from priorities x0 (see `ShiftSearch`).

    With `focus` > 0 that share of the moves stays within the incumbent's bottleneck
    block and its neighbours, recomputed on the host between chunks. `device`:
    (Spec, DeviceGraph) of the problem when already built; `window`: see
    `DecodeFitness`.
    """
    program, data, X0 = _setup(problem, x0, batch, moves, focus, device, window)
    spec = program.spec
    update = None
    if focus > 0:
        data = data.replace(pool=bottleneck_pool(problem, X0[0], spec.width))

        def update(carry, data):
            return data.replace(pool=bottleneck_pool(problem, np.asarray(carry[0]),
                                                     spec.width))

    return run_program(program, data, jax.random.key(seed), X0, steps,
                       run or Run(phase="local"), patience=patience, update=update,
                       chunk=chunk)


def _setup(problem: Problem, x0, batch, moves, focus, device, window):
    """(ShiftSearch, SearchData without the focus pool, (1, width) X0) of a search."""
    if device is None:
        from jaxplace.decoder.layout import device_graph

        device = device_graph(problem)
    spec, g = device
    X0 = np.zeros((1, spec.width), np.float32)
    if x0 is not None:
        X0[0, :problem.n] = np.asarray(x0, np.float32)[:problem.n]
    data = SearchData(g=g, nbr=neighbour_table(problem, spec.width),
                      nn=jnp.asarray(problem.n, jnp.int32))
    return ShiftSearch(spec, batch, moves, focus, window), data, X0


__all__ = ["bottleneck_pool", "shift_search"]
