"""How many blocks a cut tensor group touches at least: the splits of its atoms.

`cross` counts a group that is not held whole as paid twice (by two blocks) unless
its atoms hold a clique of pairs that cannot share a block. On REGAL-like graphs at
k = 8-16 the searched plans touch a cut group with about 3 blocks on average, so most
of what the plans pay is above that count.

A group g not held whole is touched by r >= 2 blocks B_1 < ... < B_r (in the split's
block order), its atoms split into X_i = g & B_i. Every such split must pass:

- B_i holds hull(X_i) (blocks are convex in the atom DAG), so the hulls are disjoint;
- no atom of X_j is an ancestor of an atom of X_i for i < j (edges go forward);
- B_i costs at most T, and it pays at least: the work and overflow of hull(X_i), g
  itself (it touches g without holding all of it), every group touching the hull that
  no block can hold whole (q > 0 in `cross`), and for each other group touching
  the hull, its size or the work of its atoms outside the hull (holding it whole): the
  least over a threshold, as in `cross._paid`;
- where the station windows apply, block indices b_1 < ... < b_r exist with b_i in
  the window of every atom of X_i (the windows hold whatever the numbering).

When no split of g's atoms into 2 parts (then 3) passes, every split of cost <= T that
cuts g touches it with 3 (4) blocks at least (`cut_counts`). The hulls, their costs
without the T-dependent part and the candidate splits are T-free (`split_data`, built
once); each guess only masks and compares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from jaxplace.exact.bbr.instance import ATOL, RTOL

#: Groups with more atoms keep the count 2 (any count below the true one is valid):
#: 3^7 labelings per group at most.
MAX_ATOMS = 7

#: The rows (one per subset of a group's atoms) times the atoms are kept near this many
#: cells; groups past it keep the count 2.
MAX_CELLS = 6_000_000


@dataclass(frozen=True, eq=False)
class SplitData:
    """Per row (a nonempty subset of one group's atoms): `group`, `base` (work and
    overflow of its hull, inf over the capacity), `own` (its group's size), `members`
    (R, MAX_ATOMS) atoms padded with -1, `touch` (R, D) groups touching the hull other
    than its own sorted by `extra` (padded with G, a dummy of size 0), `extra` (R, D)
    the work of that group's atoms outside the hull (inf in the padding); per r in
    (2, 3) the candidate splits `parts[r]` (N, r) of rows in block order that pass the
    T-free tests, and `groups` the groups looked at."""

    group: np.ndarray
    base: np.ndarray
    own: np.ndarray
    members: np.ndarray
    touch: np.ndarray
    extra: np.ndarray
    parts: dict
    groups: np.ndarray


def _labelings(s: int, r: int) -> np.ndarray:
    """(N, s) every map of s atoms onto r parts using each part."""
    lab = np.indices((r,) * s).reshape(s, -1).T
    used = np.stack([(lab == p).any(1) for p in range(r)], 1).all(1)
    return lab[used]


def split_data(gatoms: np.ndarray, adn: np.ndarray, aup: np.ndarray, gsize: np.ndarray,
               base_cost, atom_work: np.ndarray) -> SplitData | None:
    """The T-free part (module doc). `gatoms` (G, A) bool: the atoms of every group;
    `adn`, `aup` (A, A) bool: per atom its descendants and ancestors (itself included);
    `base_cost(bits)`: work and overflow of every row of `bits` (inf over capacity)."""
    G, A = gatoms.shape
    gw = gatoms * atom_work[None, :]
    gf = gatoms.astype(np.float64)
    rows_g, rows_base, rows_mem, rows_touch, rows_extra = [], [], [], [], []
    parts: dict[int, list] = {2: [], 3: []}
    groups, cells, offset = [], 0, 0
    for g in range(G):
        L = np.flatnonzero(gatoms[g])
        s = len(L)
        if not 2 <= s <= MAX_ATOMS:
            continue
        S = (1 << s) - 1
        if cells + S * A > MAX_CELLS:
            break
        masks = np.arange(1, S + 1)
        M = ((masks[:, None] >> np.arange(s)) & 1).astype(bool)  # (S, s)
        Mf = M.astype(np.float64)
        H = ((Mf @ adn[L]) > 0) & ((Mf @ aup[L]) > 0)  # (S, A) hulls
        Hf = H.astype(np.float64)
        # only groups touching the whole group's hull (the last row) can touch a part's
        near = np.flatnonzero(gatoms[:, H[-1]].any(1))
        near = near[near != g]
        touch = (Hf @ gf[near].T) > 0  # (S, len(near))
        extra = np.where(touch, (~H).astype(np.float64) @ gw[near].T, np.inf)
        order = np.argsort(extra, axis=1, kind="stable")
        extra = np.take_along_axis(extra, order, 1)
        touch = np.where(np.isfinite(extra), near[order], G)
        meet = (Hf @ Hf.T) > 0  # hulls sharing an atom
        before = aup[L][:, L].T.copy()  # before[i, j]: atom i is an ancestor of atom j
        np.fill_diagonal(before, False)
        for r in (2, 3):
            lab = _labelings(s, r)
            # a later part may not hold an ancestor of an earlier part's atom
            ok = ~((lab[:, :, None] > lab[:, None, :]) & before[None]).any((1, 2))
            pm = np.stack([((lab == p) << np.arange(s)).sum(1) for p in range(r)], 1) - 1
            for a in range(r):
                for b in range(a + 1, r):
                    ok &= ~meet[pm[:, a], pm[:, b]]
            if ok.any():
                parts[r].append(pm[ok] + offset)
        rows_g.append(np.full(S, g))
        rows_base.append(base_cost(H))
        mem = np.full((S, MAX_ATOMS), -1, dtype=np.int64)
        for i in range(s):
            mem[M[:, i], i] = L[i]
        rows_mem.append(mem)
        rows_touch.append(touch)
        rows_extra.append(extra)
        groups.append(g)
        cells += S * A
        offset += S
    if not groups:
        return None
    D = max(1, max(t.shape[1] for t in rows_touch))
    tg = np.concatenate([np.pad(t, ((0, 0), (0, D - t.shape[1])), constant_values=G)
                         for t in rows_touch])
    extra = np.concatenate([np.pad(e, ((0, 0), (0, D - e.shape[1])),
                                   constant_values=np.inf) for e in rows_extra])
    group = np.concatenate(rows_g)
    return SplitData(
        group=group, base=np.concatenate(rows_base), own=gsize[group],
        members=np.concatenate(rows_mem), touch=tg, extra=extra,
        parts={r: (np.concatenate(p) if p else np.zeros((0, r), dtype=np.int64))
               for r, p in parts.items()},
        groups=np.asarray(groups, dtype=np.int64))


def cut_counts(sd: SplitData | None, T: float, q: np.ndarray, gsize: np.ndarray,
               win=None) -> np.ndarray:
    """(G,) a lower bound on the blocks touching each group in every split of cost <= T
    that does not hold it whole: at least 2 and q (`cross.crossings` at T), 3 or 4
    where no split into 2 (3) parts passes the module doc's tests. `win`: the atoms'
    station windows at T (`cross.atom_windows`), or None."""
    c = np.maximum(q, 2).astype(np.int64)
    if sd is None or not math.isfinite(T):
        return c
    Tc = T * (1 + RTOL) + ATOL
    never = np.r_[q > 0, False]  # groups no block holds whole: always paid
    size = np.r_[gsize, 0.0][sd.touch]
    nw = never[sd.touch]
    fixed = (size * nw).sum(1)
    free = np.where(nw, 0.0, size)
    after = np.c_[free[:, ::-1].cumsum(1)[:, ::-1][:, 1:], np.zeros(len(free))]
    e = np.where(nw, np.inf, sd.extra)
    least = np.minimum(free.sum(1), (e + after).min(1))
    fits = sd.base + sd.own + fixed + least <= Tc
    if win is not None:
        lo, hi = win
        big = np.iinfo(np.int64).max
        pad = sd.members >= 0
        lo_r = np.where(pad, lo[np.maximum(sd.members, 0)], -1).max(1)
        hi_r = np.where(pad, hi[np.maximum(sd.members, 0)], big).min(1)
    ok_by_r = {}
    for r, pm in sd.parts.items():
        ok = fits[pm].all(1)
        if win is not None and len(pm):
            b = np.full(len(pm), -1, dtype=np.int64)
            for i in range(r):  # the earliest index each part can take, in order
                b = np.maximum(lo_r[pm[:, i]], b + 1)
                ok &= b <= hi_r[pm[:, i]]
        hit = np.zeros(len(gsize), dtype=bool)
        hit[sd.group[pm[ok, 0]]] = True
        ok_by_r[r] = hit
    looked = np.zeros(len(gsize), dtype=bool)
    looked[sd.groups] = True
    count = np.where(ok_by_r[2], 2, np.where(ok_by_r[3], 3, 4))
    return np.where(looked, np.maximum(c, count), c)
