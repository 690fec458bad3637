"""The ideals (downsets) of the atom DAG and the per-ideal tables the DP reads.

An ideal is a set of atoms closed under predecessors. Every contiguous piece of a
valid partition is J \\ I for ideals I subset of J (Tarnawski et al., NeurIPS 2020,
Fact 5.2). Ideals are enumerated level by level (level s: ideals of s atoms), each level
from the previous one by adding one ready atom, deduplicated on packed bits; the count
is checked after every level so that a graph with too many ideals fails fast with the
count reached, before memory runs out.

Block cost of a piece on an accelerator, from per-ideal numbers only (see `Lattice`):
a tensor group t with atom set E_t crosses the piece S = J \\ I iff E_t meets S and its
complement. With c_X(t) = |E_t & X| and cut(X) = {t : 0 < c_X(t) < |E_t|},

    f(J \\ I) = work(J) - work(I) + CUT(I)
                + sum_{t in cut(J)} s_t ([c_I(t) != c_J(t)] - [c_I(t) > 0])

(tensors outside cut(I) | cut(J) lie inside one of I, J \\ I or outside J), so a pull
step for J touches only the few tensors cut by J.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.exact.atoms import Atoms

#: Default limit on the number of ideals (raise it with `max_ideals=`). The paper's
#: largest workload (Inception-v3) has 36,596; each ideal costs about
#: (atoms + 2 * tensor groups + 16 * states) bytes of tables.
DEFAULT_MAX_IDEALS = 250_000


def _dedupe(rows: np.ndarray) -> np.ndarray:
    """Unique rows of a (L, A) bool matrix."""
    if len(rows) < 2:
        return rows
    packed = np.packbits(rows, axis=1)
    view = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1])))
    _, first = np.unique(view.ravel(), return_index=True)
    return rows[np.sort(first)]


def _preds_in(atoms: Atoms, rows: np.ndarray) -> np.ndarray:
    """(L, A) bool: all predecessors of atom a are in row l."""
    out = np.ones(rows.shape, dtype=bool)
    has = np.flatnonzero(np.diff(atoms.pred_ptr) > 0)
    if len(has):
        gathered = rows[:, atoms.pred_idx]  # (L, E)
        out[:, has] = np.logical_and.reduceat(gathered, atoms.pred_ptr[has], axis=1)
    return out


def widest_layer(atoms: Atoms) -> int:
    """Atoms in the largest layer of equal longest-path depth: an antichain (u below
    v means depth(u) < depth(v)), so the DAG has at least 2 ** width ideals (every
    subset of an antichain generates its own). O(atoms + edges): one pass over the
    atoms in a topological order (plain lists: deep, narrow graphs such as a
    transformer's have as many layers as atoms)."""
    A = atoms.num_atoms
    if A == 0:
        return 0
    pred_ptr, pred_idx = atoms.pred_ptr.tolist(), atoms.pred_idx.tolist()
    succ: list[list[int]] = [[] for _ in range(A)]
    for v in range(A):
        for u in pred_idx[pred_ptr[v]:pred_ptr[v + 1]]:
            succ[u].append(v)
    indeg = [pred_ptr[v + 1] - pred_ptr[v] for v in range(A)]
    depth = [0] * A
    stack = [v for v in range(A) if indeg[v] == 0]
    while stack:
        u = stack.pop()
        du = depth[u] + 1
        for v in succ[u]:
            if depth[v] < du:
                depth[v] = du
            indeg[v] -= 1
            if indeg[v] == 0:
                stack.append(v)
    return int(np.bincount(np.asarray(depth, np.int64)).max())


def enumerate_ideals(atoms: Atoms, max_ideals: int = DEFAULT_MAX_IDEALS,
                     max_work: float | None = None, deadline: float | None = None
                     ) -> np.ndarray:
    """All ideals of the atom DAG as an (N, A) bool matrix, level by level.

    Refuses at once when an antichain (`widest_layer`) proves more than `max_ideals`;
    `max_work` (optional) bounds the enumeration's elementwise work, sum over levels
    of ideals x (atoms + edges), a count, so the refusal does not depend on the
    machine (about 1e8 per second of one core). `deadline` (a perf_counter time,
    optional: only under a user's time limit, since it makes the answer depend on
    the load) is checked after every level.

    Raises:
        JaxplaceError: (field "max_ideals") when there are more than `max_ideals`,
            giving the count reached and the level it was reached at, or when the
            enumeration would cost more than `max_work` or pass `deadline`.
    """
    A = atoms.num_atoms
    unit = A + len(atoms.pred_idx) + 1
    if max_work is not None and A * unit > max_work:  # each of the A levels costs
        # at least one ideal x unit: the limit would stop it, so stop it at once
        raise JaxplaceError(
            f"counting the ideals of {A} atoms would cost at least {A * unit:.3g}, over "
            f"its work limit of {max_work:.3g}", field="max_ideals")
    width = widest_layer(atoms)
    if width < 63 and 2 ** width > max_ideals or width >= 63:
        raise JaxplaceError(
            f"more than {max_ideals:,} ideals: an antichain of {width} atoms has "
            f"2^{width}; use the MIP bounds", field="max_ideals")
    level = np.zeros((1, A), dtype=bool)
    levels, total, work = [level], 1, 0
    for size in range(1, A + 1):
        work += len(level) * unit
        if max_work is not None and work > max_work:
            raise JaxplaceError(
                f"counting the ideals stopped after {total:,} (up to size {size - 1} "
                f"of {A} atoms): over its work limit of {max_work:.3g}",
                field="max_ideals")
        if deadline is not None and time.perf_counter() >= deadline:
            raise JaxplaceError(
                f"counting the ideals stopped after {total:,} (up to size {size - 1} "
                f"of {A} atoms): out of its time", field="max_ideals")
        ready = ~level & _preds_in(atoms, level)
        rows, cols = np.nonzero(ready)
        # an ideal of `size` atoms comes from at most `size` parents: refuse before
        # materializing the candidates when even that many distinct ones are too many
        least = -(-len(rows) // size)
        if total + least > max_ideals:
            total += least
        else:
            nxt = level[rows]
            nxt[np.arange(len(rows)), cols] = True
            level = _dedupe(nxt)
            total += len(level)
        if total > max_ideals:
            raise JaxplaceError(
                f"more than {max_ideals:,} ideals: {total:,} counted up to size {size} of "
                f"{A} atoms; pass a larger max_ideals (each ideal needs about "
                f"{A + 64} bytes) or use the MIP bounds", field="max_ideals")
        levels.append(level)
    return np.concatenate(levels)


def count_ideals(atoms: Atoms, max_ideals: int = DEFAULT_MAX_IDEALS,
                 max_work: float | None = None, deadline: float | None = None) -> int:
    """Number of ideals (raises like `enumerate_ideals` above the limits)."""
    return len(enumerate_ideals(atoms, max_ideals, max_work, deadline))


@dataclass(frozen=True, eq=False)
class Lattice:
    """Ideals in canonical order (by accelerator work, then size: I subset of J comes
    first) and what the DP needs of each. N ideals, A atoms, T tensor groups.

    - `member_t`: (A, N) bool, atom a in ideal j (column-major: windows are slices).
    - `work`, `cpu`, `param`, `easy`: (N,) float64 sums over the ideal (`easy`: per atom
      the cheaper of accelerator work and CPU latency, inf for neither).
    - `bad`: (N,) int64 unsupported nodes in the ideal; `forced`: (N,) CPU latency of
      its atoms holding unsupported nodes; `sup_work`: (N,) work of its other atoms.
    - `cut`: (N,) float64 CUT(j), sum of s_t over the tensor groups cut by ideal j.
    - `count_t`: (T, N) uint8/uint16 c_j(t); `ends`: (T,) int64 |E_t|; `size`: (T,).
    - `cut_ptr` (N+1,), `cut_idx`: CSR of cut(j); `ready_ptr`, `ready_idx`: CSR of the
      atoms outside j whose predecessors are all in j (I subset of J iff I holds none).
    - `cpu_order`: (N,) int64 ideals sorted by CPU latency.
    """

    member_t: np.ndarray
    work: np.ndarray
    cpu: np.ndarray
    param: np.ndarray
    easy: np.ndarray
    bad: np.ndarray
    forced: np.ndarray
    sup_work: np.ndarray
    cut: np.ndarray
    count_t: np.ndarray
    ends: np.ndarray
    size: np.ndarray
    cut_ptr: np.ndarray
    cut_idx: np.ndarray
    ready_ptr: np.ndarray
    ready_idx: np.ndarray
    cpu_order: np.ndarray

    @property
    def num_ideals(self) -> int:
        return len(self.work)

    def cut_of(self, j: int) -> np.ndarray:
        return self.cut_idx[self.cut_ptr[j]:self.cut_ptr[j + 1]]

    def ready_of(self, j: int) -> np.ndarray:
        return self.ready_idx[self.ready_ptr[j]:self.ready_ptr[j + 1]]


def _csr_of(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (rows = columns of the (R, N) bool `mask`)."""
    cols, rows = np.nonzero(mask.T)
    ptr = np.zeros(mask.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols, minlength=mask.shape[1]), out=ptr[1:])
    return ptr, rows.astype(np.int64)


def _sums(member_t: np.ndarray, per_atom: np.ndarray) -> np.ndarray:
    """(N,) sums over each ideal, added atom by atom in one fixed order, so that
    I subset of J gives sum(I) <= sum(J) in floating point too (addition is monotone)."""
    acc = np.zeros(member_t.shape[1])
    for a, w in enumerate(per_atom.tolist()):
        if w != 0:
            acc += np.where(member_t[a], w, 0.0)
    return acc


def build_lattice(atoms: Atoms, ideals: np.ndarray, easy_atom: np.ndarray) -> Lattice:
    """Tables of `ideals` ((N, A) bool, any order) in canonical order."""
    work = _sums(np.ascontiguousarray(ideals.T), atoms.work)
    order = np.lexsort((ideals.sum(axis=1), work))
    member_t = np.ascontiguousarray(ideals[order].T)  # (A, N)
    work, cpu, param, easy = (_sums(member_t, w) for w in (
        atoms.work, atoms.cpu, atoms.param, easy_atom))
    bad = _sums(member_t, atoms.bad.astype(np.float64)).round().astype(np.int64)
    forced = _sums(member_t, np.where(atoms.bad > 0, atoms.cpu, 0.0))
    sup_work = _sums(member_t, np.where(atoms.bad > 0, 0.0, atoms.work))
    T, N = len(atoms.tensor_ends), len(work)
    ends = np.array([len(e) for e in atoms.tensor_ends], dtype=np.int64)
    dtype = np.uint8 if T == 0 or ends.max() < 255 else np.uint16
    count_t = np.zeros((T, N), dtype=dtype)
    for t, e in enumerate(atoms.tensor_ends):
        count_t[t] = member_t[e].sum(axis=0)
    is_cut = (count_t > 0) & (count_t < ends[:, None].astype(dtype))
    cut = atoms.tensor_size @ is_cut if T else np.zeros(N)
    cut_ptr, cut_idx = _csr_of(is_cut)
    rows = member_t.T
    ready_ptr, ready_idx = _csr_of((~rows & _preds_in(atoms, rows)).T)
    cpu_order = np.argsort(cpu, kind="stable")
    return Lattice(member_t, work, cpu, param, easy, bad, forced, sup_work, cut, count_t, ends,
                   atoms.tensor_size, cut_ptr, cut_idx, ready_ptr, ready_idx, cpu_order)
