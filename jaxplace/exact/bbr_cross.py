"""Forced crossings: transfers that every split of cost <= T must pay, and the bound
they give.

A block of a contiguous split is convex in the atom DAG (`bbr_model`): holding atoms x
and y it holds every atom on a path between them, their hull. A tensor group g (the
atoms its tensor touches) is paid once by every block that touches it without holding
all of it. So for a guess T:

- g is *forced* when no block of cost <= T can hold all of g's atoms: the hull of g
  already costs more than T. A block's cost is at least the work and overflow of the
  hull, plus every forced group the hull touches (a block touching a forced group
  cannot hold it all, so it pays it): the forced set is grown to a fixpoint, each step
  valid given the previous ones;
- where the station windows apply (`bounds/station.py`: the blocks each op may sit
  in at T, in any split of cost <= T whatever the numbering of its blocks), g is also
  forced when its atoms' windows share no block;
- two atoms of g *conflict* when their pair hull costs more than T (same test) or
  their windows are disjoint: they sit in different blocks, so a clique of q
  conflicting atoms of g means q blocks touch g, each paying it; a forced group is
  touched by 2 blocks at least.

`q[g] = max(clique, 2 if forced else 0)` is then a lower bound on the blocks that pay
g, and summed over the K blocks (empty ones allowed):

    K T >= total work + total overflow + sum_g q[g] size[g]

for every split of cost <= T (`refuted(T)`; `crossing_bound` bisects for the largest T
it refutes). BB&R (`bbr_search`) uses q at its nodes (the remaining blocks pay q[g]
size[g] for every group with no atom placed, size[g] for every group cut by the placed
ideal) and the forced flags while a block grows (a block touching a forced group pays
it). CPU blocks pay no transfers, so none of this applies when CPUs may be used.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import LinearConstraint, milp  # imported up front: the first call
from scipy.sparse import coo_array  # would otherwise pay it inside a time limit

from jaxplace.exact.bbr_tolerance import ATOL, RTOL

if TYPE_CHECKING:
    from jaxplace.exact.bbr_model import Model

#: Pairs of one group's atoms looked at for conflicts: at most this many atoms per
#: group (any subset's clique is still a clique).
MAX_ENDS = 48

#: Groups touching a hull that its cost bound looks at (any subset is valid).
MAX_TOUCH = 64

#: Bit matrices (hulls x atoms) are kept near this many cells: past it no more pair
#: hulls are added and the groups each hull looks at are cut, and a graph whose group
#: hulls alone exceed it gets no crossings (None).
MAX_CELLS = 8_000_000

#: Branch-and-bound nodes for the whole-groups independent set (its dual bound is used).
MWIS_NODES = 100

#: Group triples: from atoms whose hull-sharing groups number 3 to MAX_STAR, at most
#: MAX_TRIPLES in all (any subset of the constraints is valid).
MAX_STAR = 8
MAX_TRIPLES = 4000

#: Relative precision of the bisection with the whole-groups part (each step solves
#: an independent set).
WHOLE_RTOL = 1e-5

#: Rounds of the forced-set fixpoint (each only adds groups; the bound is valid after
#: any number of rounds).
ROUNDS = 8


@dataclass(frozen=True, eq=False)
class CrossData:
    """T-free data. Hulls: first the G group hulls, then the pair hulls.

    - `work`, `param`: (H,) work and parameters of every hull.
    - `extra`: (H, D) per hull and group touching it (`extra_group`, G: none), what
      holding the group whole adds to the hull's work and overflow at least (inf: over
      the capacity); a block holding the hull pays each such group or holds it whole.
    - `pair_group`, `pair_x`, `pair_y`: per pair hull (H - G of them) its group and the
      positions of its two atoms in the group's atom list.
    - `gsize`: (G,) group sizes / B; `ends`: (G,) atoms per group (capped at MAX_ENDS
      for the pairs); `total_work`, `total_param`, `K`, `cap`, `memory`, `bandwidth`.
    - `group_a`, `group_b`: the two groups of every group pair hull (rows after the
      atom pairs: groups whose hulls share an atom); `group_t`: (N, 3) the groups of
      every group triple hull (the last rows: three hulls sharing an atom);
    - `pair_a`, `pair_b`: the two atoms of every pair; `ends_flat`, `ends_ptr`: the
      atoms of every group (CSR); `station`, `atom_of`: the station windows' data and
      the atom of every node (None: no windows).
    """

    work: np.ndarray
    param: np.ndarray
    extra: np.ndarray
    extra_group: np.ndarray
    pair_group: np.ndarray
    pair_x: np.ndarray
    pair_y: np.ndarray
    gsize: np.ndarray
    ends: np.ndarray
    total_work: float
    total_param: float
    K: int
    cap: float
    memory: float | None
    bandwidth: float
    pair_a: np.ndarray = None
    pair_b: np.ndarray = None
    ends_flat: np.ndarray = None
    ends_ptr: np.ndarray = None
    station: object = None
    atom_of: np.ndarray = None
    group_a: np.ndarray = None
    group_b: np.ndarray = None
    group_t: np.ndarray = None
    whole_memo: dict = field(default_factory=dict)  # (q, apart) -> `_whole_most`


def _bits(mask: int, A: int) -> np.ndarray:
    """(A,) bool of the bitset."""
    raw = np.frombuffer(mask.to_bytes((A + 7) // 8 or 1, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:A].astype(bool)


def cross_data(m: Model) -> CrossData | None:
    """The `CrossData` of `m`, or None where it does not apply (CPU blocks, no groups)."""
    A, G = m.num_atoms, len(m.gsize)
    if m.typed or G == 0 or A == 0:
        return None
    desc, anc = [0] * A, [0] * A
    for a in range(A - 1, -1, -1):  # atoms are numbered topologically
        d = 1 << a
        for s in m.succ[a]:
            d |= desc[s]
        desc[a] = d
    for a in range(A):
        d = 1 << a
        p = m.pred[a]
        while p:
            low = p & -p
            d |= anc[low.bit_length() - 1]
            p ^= low
        anc[a] = d
    hulls, pg, px, py, pa, pb, flat, ptr = [], [], [], [], [], [], [], [0]
    if G * A > MAX_CELLS:
        return None
    max_pairs = MAX_CELLS // A - G  # pairs past it are left out (any subset is valid)
    gdn, gup, pairs = [], [], []  # per group: descendants, ancestors of its atoms
    for g, gm in enumerate(m.gmask):
        ends, rest = [], gm
        while rest:
            low = rest & -rest
            ends.append(low.bit_length() - 1)
            rest ^= low
        dn = up = 0
        for x in ends:
            dn |= desc[x]
            up |= anc[x]
        gdn.append(dn)
        gup.append(up)
        hulls.append((dn, up))  # the G group hulls first, then the pairs (below)
        flat += ends
        ptr.append(len(flat))
        ends = ends[:MAX_ENDS] if len(pairs) < max_pairs else []
        for i, x in enumerate(ends):
            for j in range(i + 1, len(ends)):
                y = ends[j]
                pairs.append((desc[x] | desc[y], anc[x] | anc[y]))
                pg.append(g)
                px.append(i)
                py.append(j)
                pa.append(x)
                pb.append(y)
    hulls += pairs
    # pairs of groups whose hulls share an atom: both held whole means one block holds
    # both hulls (their union hull)
    gh = np.stack([_bits(dn & up, A) for dn, up in hulls[:G]]).astype(np.float64)
    ov = np.triu((gh @ gh.T) > 0, 1)
    ga, gb = np.nonzero(ov)
    keep = max(0, MAX_CELLS // A - len(hulls))
    ga, gb = ga[:keep], gb[:keep]
    hulls += [(gdn[a] | gdn[b], gup[a] | gup[b]) for a, b in zip(ga.tolist(), gb.tolist(),
                                                                 strict=True)]
    # triples of groups whose hulls share an atom (all three whole: one block)
    trip: set[tuple[int, int, int]] = set()
    room = min(MAX_TRIPLES, max(0, MAX_CELLS // A - len(hulls)))
    for v in range(A):
        star = np.flatnonzero(gh[:, v] > 0).tolist()
        if 3 <= len(star) <= MAX_STAR:
            trip.update(itertools.combinations(star, 3))
        if len(trip) >= room:
            break
    gt = np.asarray(sorted(trip)[:room], dtype=np.int64).reshape(-1, 3)
    hulls += [(gdn[a] | gdn[b] | gdn[c], gup[a] | gup[b] | gup[c])
              for a, b, c in gt.tolist()]
    work = np.asarray(m.work, dtype=np.float64)
    param = np.asarray(m.param, dtype=np.float64)
    Hb = np.stack([_bits(dn & up, A) for dn, up in hulls])  # (hulls, A) bool
    gm = np.stack([_bits(x, A) for x in m.gmask])  # (G, A)
    touch = (Hb.astype(np.float64) @ gm.T.astype(np.float64)) > 0
    # per hull and group touching it: the hull grown to hold the group whole
    rows, cols, grown = [], [], []
    per_hull = max(0, min(MAX_TOUCH, MAX_CELLS // (A * len(hulls))))
    for h, (dn, up) in enumerate(hulls):  # groups left out are simply not counted
        for g in np.flatnonzero(touch[h])[:per_hull].tolist():
            rows.append(h)
            cols.append(g)
            grown.append(_bits((dn | gdn[g]) & (up | gup[g]), A))
    cost = _hull_cost(Hb, work, param, m)
    if rows:
        Gb = np.stack(grown)
        base = cost[rows]
        grown_cost = _hull_cost(Gb, work, param, m)
        # a hull over the capacity is a conflict by itself: its extras do not matter
        extra = np.where(np.isfinite(base), grown_cost - np.where(np.isfinite(base),
                                                                   base, 0.0), 0.0)
    else:
        extra = np.zeros(0)
    D = max(1, int(np.bincount(rows, minlength=len(hulls)).max()) if rows else 1)
    E = np.full((len(hulls), D), np.inf)
    Gi = np.full((len(hulls), D), G, dtype=np.int64)  # G: a dummy group of size 0
    slot = np.zeros(len(hulls), dtype=np.int64)
    for r, g, e in zip(rows, cols, extra.tolist(), strict=True):
        E[r, slot[r]], Gi[r, slot[r]] = max(0.0, e), g
        slot[r] += 1
    return CrossData(
        work=Hb.astype(np.float64) @ work, param=Hb.astype(np.float64) @ param,
        extra=E, extra_group=Gi,
        pair_group=np.asarray(pg, dtype=np.int64), pair_x=np.asarray(px, dtype=np.int64),
        pair_y=np.asarray(py, dtype=np.int64),
        gsize=np.asarray(m.gsize, dtype=np.float64),
        ends=np.minimum(np.asarray(m.gcount, dtype=np.int64), MAX_ENDS),
        total_work=float(sum(m.work)), total_param=float(sum(m.param)), K=m.K,
        cap=m.cap, memory=m.memory, bandwidth=m.bandwidth,
        pair_a=np.asarray(pa, dtype=np.int64), pair_b=np.asarray(pb, dtype=np.int64),
        ends_flat=np.asarray(flat, dtype=np.int64), ends_ptr=np.asarray(ptr, dtype=np.int64),
        station=m.station, atom_of=m.atom_of, group_a=ga.astype(np.int64),
        group_b=gb.astype(np.int64), group_t=gt)


def atom_windows(cd: CrossData, T: float, A: int | None = None):
    """(earliest, latest) block per atom at T from the station windows (the latest of
    its nodes' earliest, the earliest of their latest), or None without windows."""
    if cd.station is None or not math.isfinite(T):
        return None
    from jaxplace.bounds.station import windows

    lo_n, hi_n = windows(cd.station, T)
    A = int(cd.atom_of.max()) + 1 if A is None else A
    lo = np.full(A, -1, dtype=np.int64)
    hi = np.full(A, np.iinfo(np.int64).max, dtype=np.int64)
    np.maximum.at(lo, cd.atom_of, lo_n)
    np.minimum.at(hi, cd.atom_of, hi_n)
    return lo, hi


def _hull_cost(bits: np.ndarray, work: np.ndarray, param: np.ndarray, m: Model
               ) -> np.ndarray:
    """Work plus overflow of every row of `bits` (inf above the capacity)."""
    b = bits.astype(np.float64)
    p = b @ param
    c = b @ work
    if m.memory is not None:
        c = c + np.maximum(0.0, p - m.memory) / m.bandwidth
    return np.where(p > m.cap, np.inf, c)


def _paid(cd: CrossData, forced: np.ndarray) -> np.ndarray:
    """(H,) the least a block holding each hull adds for the groups touching it: for
    some threshold t, it holds whole the groups whose `extra` is <= t (adding at least
    t of work) and pays the others; a forced group is always paid."""
    size = np.r_[cd.gsize, 0.0][cd.extra_group]
    e = np.where(np.r_[forced, False][cd.extra_group], np.inf, cd.extra)
    order = np.argsort(e, axis=1, kind="stable")
    e = np.take_along_axis(e, order, 1)
    size = np.take_along_axis(size, order, 1)
    after = size[:, ::-1].cumsum(1)[:, ::-1]  # paid when the threshold is below entry j
    after = np.c_[after[:, 1:], np.zeros(len(e))]
    best = np.minimum(size.sum(1), np.min(e + after, axis=1))
    return best


def _overflow(cd: CrossData, param: np.ndarray) -> np.ndarray:
    if cd.memory is None:
        return np.zeros_like(param)
    return np.maximum(0.0, param - cd.memory) / cd.bandwidth


def crossings(cd: CrossData, T: float, win=None) -> tuple[np.ndarray, np.ndarray]:
    """(forced (G,) bool, q (G,) int64) at guess T (module doc); `win`: the atoms'
    windows at T (`atom_windows`) when known."""
    forced, q, _ = _crossings(cd, T, win)
    return forced, q


def _crossings(cd: CrossData, T: float, win=None):
    """`crossings` and, per group pair, whether the two cannot both be held whole."""
    G, P = len(cd.gsize), len(cd.pair_group)
    Tc = T * (1 + RTOL) + ATOL
    base = cd.work + _overflow(cd, cd.param)
    over_cap = cd.param > cd.cap
    if win is None:
        win = atom_windows(cd, T)
    if win is not None:  # disjoint windows: never in one block (module doc)
        lo, hi = win
        starts = cd.ends_ptr[:-1]
        apart = (np.maximum.reduceat(lo[cd.ends_flat], starts)
                 > np.minimum.reduceat(hi[cd.ends_flat], starts))
        pairs = (hi[cd.pair_a] < lo[cd.pair_b]) | (hi[cd.pair_b] < lo[cd.pair_a])
        over_cap = over_cap | np.r_[apart, pairs, np.zeros(len(cd.group_a) + len(cd.group_t),
                                                            dtype=bool)]
    forced = np.zeros(G, dtype=bool)
    for _ in range(ROUNDS):
        conflict = over_cap | (base + _paid(cd, forced) > Tc)
        new = forced | conflict[:G]
        if (new == forced).all():
            break
        forced = new
    forced = forced | conflict[:G]  # valid whichever round stopped the loop
    q = np.where(forced, 2, 0).astype(np.int64)
    hit = np.flatnonzero(conflict[G:G + P])
    if len(hit):
        groups = cd.pair_group[hit]
        xs, ys = cd.pair_x[hit], cd.pair_y[hit]
        order = np.argsort(groups, kind="stable")
        groups, xs, ys = groups[order], xs[order], ys[order]
        starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        ends = np.r_[starts[1:], len(groups)]
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            g = int(groups[s])
            q[g] = max(q[g], _clique(int(cd.ends[g]), xs[s:e], ys[s:e]))
    return forced, q, conflict[G + P:]  # group pairs, then group triples


def _whole_most(cd: CrossData, q: np.ndarray, apart: np.ndarray) -> float:
    """An upper bound on the size of the groups a split holds whole, each counted
    twice (what they save over being cut): only groups with q = 0 can be, and two
    whose hulls overlap can only if their union fits (`apart` false), three likewise.
    A weighted independent set, solved by HiGHS (scipy) with a node limit; its dual
    bound."""
    free = q == 0
    w = 2.0 * cd.gsize * free
    total = float(w.sum())
    npair = len(cd.group_a)
    sel = apart[:npair] & free[cd.group_a] & free[cd.group_b]
    tsel = apart[npair:] & free[cd.group_t].all(1)
    if total <= 0 or not (sel.any() or tsel.any()):
        return total
    key = (free.tobytes(), sel.tobytes(), tsel.tobytes())  # nearby guesses share it
    if (hit := cd.whole_memo.get(key)) is not None:
        return hit
    if len(cd.whole_memo) > 4096:
        cd.whole_memo.clear()
    cd.whole_memo[key] = out = _independent(cd, w, total, sel, tsel)
    return out


def _independent(cd: CrossData, w: np.ndarray, total: float, sel: np.ndarray,
                 tsel: np.ndarray) -> float:
    """`_whole_most` for the conflicting pairs `sel` (at most one whole) and triples
    `tsel` (at most two) (uncached)."""
    pairs, trips = np.c_[cd.group_a[sel], cd.group_b[sel]], cd.group_t[tsel]
    used = np.unique(np.r_[pairs.ravel(), trips.ravel()])  # the others: all whole
    idx = np.full(len(w), -1, dtype=np.int64)
    idx[used] = np.arange(len(used))
    rows = np.r_[np.repeat(np.arange(len(pairs)), 2),
                 len(pairs) + np.repeat(np.arange(len(trips)), 3)]
    cols = np.r_[idx[pairs].ravel(), idx[trips].ravel()]
    nrow = len(pairs) + len(trips)
    A = coo_array((np.ones(len(rows)), (rows, cols)), shape=(nrow, len(used))).tocsr()
    ub = np.r_[np.ones(len(pairs)), np.full(len(trips), 2.0)]
    res = milp(-w[used], integrality=np.ones(len(used)), bounds=(0, 1),
               constraints=LinearConstraint(A, -np.inf, ub),
               options={"node_limit": MWIS_NODES, "presolve": True})
    dual = getattr(res, "mip_dual_bound", None)
    if dual is None or not np.isfinite(dual):
        return total
    return min(total, total - float(w[used].sum()) - float(dual))


def _clique(n: int, xs: np.ndarray, ys: np.ndarray) -> int:
    """Size of a greedy clique (most conflicts first) of the conflict graph on n atoms."""
    adj = np.zeros((n, n), dtype=bool)
    adj[xs, ys] = adj[ys, xs] = True
    deg = adj.sum(1)
    chosen: list[int] = []
    for v in np.argsort(-deg, kind="stable").tolist():
        if deg[v] == 0:
            break
        if all(adj[v, u] for u in chosen):
            chosen.append(v)
    return max(len(chosen), 1)


def need(cd: CrossData, T: float, q: np.ndarray | None = None) -> float:
    """What the K blocks must cost in all at guess T (module doc; with `q` from
    `crossings` at T given, the sum over q only, without the whole-groups part)."""
    over = 0.0
    if cd.memory is not None:
        over = max(0.0, cd.total_param - cd.K * cd.memory) / cd.bandwidth
    base = cd.total_work + over
    if q is not None:
        return base + float(q @ cd.gsize)
    _, q, apart = _crossings(cd, T)
    # a group not held whole is touched by 2 blocks at least, by q when q > 2
    paid = float(np.maximum(q, 2) @ cd.gsize) - _whole_most(cd, q, apart)
    return base + max(float(q @ cd.gsize), paid)


def refuted(cd: CrossData, T: float) -> bool:
    """No split of cost <= T exists (the summed bound of the module doc)."""
    return refuted_by(cd, T)


def refuted_by(cd: CrossData, T: float, q: np.ndarray | None = None) -> bool:
    """`refuted`, with `q` from `crossings` at T when already known (then the
    caller checks the windows themselves)."""
    if q is None:
        win = atom_windows(cd, T)
        if win is not None and bool((win[0] > win[1]).any()):
            return True  # the windows alone refute T (the station bound)
        return cd.K * (T * (1 + RTOL) + ATOL) < need(cd, T)
    return cd.K * (T * (1 + RTOL) + ATOL) < need(cd, T, q)


def crossing_bound(cd: CrossData | None, lo: float, hi: float, rtol: float = 1e-7,
                   deadline: float = math.inf) -> float:
    """The largest T in [lo, hi] that `refuted` refutes (lo when none; lo is assumed a
    proven bound and hi a cost reached by a split, so hi itself is never refuted; hi =
    inf: the upper end is found by doubling from lo). Past `deadline` (perf_counter
    seconds) the bisection stops with the largest T refuted so far.

    Two passes: first with the sum over q alone (no solver; what it refutes the full
    bound refutes too), then with the whole-groups part from there, to `WHOLE_RTOL`."""
    if cd is None or not math.isfinite(lo) or lo <= 0 or lo >= hi:
        return lo

    def quick(T: float) -> bool:
        win = atom_windows(cd, T)
        if win is not None and bool((win[0] > win[1]).any()):
            return True
        return refuted_by(cd, T, crossings(cd, T, win)[1])

    if not math.isfinite(hi):
        hi = 2 * lo
        for _ in range(64):
            if time.perf_counter() > deadline or not quick(hi):
                break
            lo, hi = hi, 2 * hi
        else:
            return lo
    a = _bisect(quick, lo, hi, rtol, deadline) if quick(lo) else lo
    return _bisect(lambda T: refuted(cd, T), a, hi, max(rtol, WHOLE_RTOL), deadline)


def _bisect(test, a: float, b: float, rtol: float, deadline: float) -> float:
    """The largest T test refutes in [a, b], a known refuted (or the bound to return
    when nothing is), b not, to rtol; past `deadline` the best so far."""
    while b - a > rtol * b and time.perf_counter() < deadline:
        mid = 0.5 * (a + b)
        if test(mid):
            a = mid
        else:
            b = mid
    return a
