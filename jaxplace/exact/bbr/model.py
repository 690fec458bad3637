"""The instance as branch, bound and remember (`bbr`) reads it: atoms as bits.

The atoms of `jaxplace.exact.atoms` (colocation classes contracted, contiguity on
forward edges, cost-free satellites merged) renumbered in a topological order, so that
listing a block's atoms by increasing number adds each one after its predecessors: a
block S grown from an ideal I by adding ready atoms of increasing number reaches every
S with I + S an ideal exactly once. Sets of atoms are Python ints used as bitsets.

Per-T data (`TData`): the station windows of `jaxplace.bounds.station` mapped to atoms
(an atom's earliest block is the latest of its nodes' earliest blocks, its latest block
the earliest of their latest), as bit masks per block index, and the masks of the
SALBP bounds LB2 / LB3 (Scholl 1999: an atom whose work exceeds T/2 needs a block of
its own; weights 1 above 2T/3 and 1/2 above T/3 sum to at most 1 per block).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxplace.bounds.station import station_data, station_skip, windows
from jaxplace.exact.atoms import build_atoms
from jaxplace.exact.bbr.cross import cross_data, crossings, refuted_by
from jaxplace.exact.bbr.instance import ATOL, RTOL, Model, TData
from jaxplace.orders import topo_rank
from jaxplace.problem import Problem


def build_model(problem: Problem, merge: bool = True) -> Model:
    """The `Model` of `problem` (see the module doc)."""
    # BB&R's bounds and checks are the identical-device model's: elsewhere they would
    # be false proofs
    problem.objective_impl.require("identical_devices", field="problem")
    atoms = build_atoms(problem, merge=merge)
    A = atoms.num_atoms
    rank = topo_rank(A, atoms.pred_ptr, atoms.pred_idx)
    inv = np.argsort(rank)  # new number -> old atom
    pred = [0] * A
    succ: list[list[int]] = [[] for _ in range(A)]
    for new, old in enumerate(inv.tolist()):
        for p in atoms.preds(old).tolist():
            pred[new] |= 1 << int(rank[p])
            succ[int(rank[p])].append(new)
    work = atoms.work[inv].tolist()
    cpu = atoms.cpu[inv].tolist()
    param = atoms.param[inv].tolist()
    bad = (atoms.bad[inv] > 0).tolist()
    C = min(problem.cpus, A)
    easy = [min(math.inf if b else w, c if C else math.inf)
            for w, c, b in zip(work, cpu, bad, strict=True)]
    groups: list[list[int]] = [[] for _ in range(A)]
    gmask, gcount = [], []
    for g, ends in enumerate(atoms.tensor_ends):
        m = 0
        for a in ends.tolist():
            r = int(rank[a])
            groups[r].append(g)
            m |= 1 << r
        gmask.append(m)
        gcount.append(len(ends))
    station = None if station_skip(problem) else station_data(problem)
    model = Model(
        atom_of=rank[atoms.atom_of], pred=pred, succ=succ, work=work, cpu=cpu,
        param=param, bad=bad, easy=easy, groups=groups,
        gsize=atoms.tensor_size.tolist(), gcount=gcount, gmask=gmask,
        K=min(problem.k, A), C=C, cap=float(problem.capacity_limit),
        memory=problem.memory, bandwidth=float(problem.bandwidth),
        full=(1 << A) - 1, bad_mask=sum(1 << a for a in range(A) if bad[a]),
        station=station)
    return dataclasses.replace(model, cross=cross_data(model))


def _mask(flags) -> int:
    m = 0
    for a in np.flatnonzero(flags).tolist():
        m |= 1 << a
    return m


def tdata(model: Model, T: float) -> TData:
    """The per-T data of `model` (windows only for finite T and where they apply)."""
    Tc = T * (1 + RTOL) + ATOL
    w = np.asarray(model.work)
    half, third, twothird = (_mask(w > Tc * f) for f in (0.5, 1 / 3, 2 / 3))
    G = len(model.gsize)
    forced, qsize, refuted = [False] * G, [0.0] * G, False
    data = model.station
    win = None
    if data is not None and math.isfinite(T):
        lo_n, hi_n = windows(data, T)
        A = model.num_atoms
        lo = np.full(A, -1, dtype=np.int64)
        hi = np.full(A, np.iinfo(np.int64).max, dtype=np.int64)
        np.maximum.at(lo, model.atom_of, lo_n)
        np.minimum.at(hi, model.atom_of, hi_n)
        win = (lo, hi)
        refuted = bool((lo > hi).any())
    if model.cross is not None and math.isfinite(T) and not refuted:
        f, q = crossings(model.cross, T, win)
        forced, qsize = f.tolist(), (q * model.cross.gsize).tolist()
        refuted = refuted_by(model.cross, T, q)
    if win is None:
        return TData(T, Tc, None, None, refuted, half, third, twothird, forced, qsize)
    D = model.K
    allowed = [_mask(lo <= d) for d in range(D + 1)]
    required = [_mask(hi <= d) for d in range(D + 1)]
    return TData(T, Tc, allowed, required, refuted, half, third, twothird, forced,
                 qsize)
