"""Forced crossings: transfers that every split of cost <= T must pay, and the bound
they give.

A block of a contiguous split is convex in the atom DAG (`model`): holding atoms x
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
it refutes). BB&R (`search`) uses q at its nodes (the remaining blocks pay q[g]
size[g] for every group with no atom placed, size[g] for every group cut by the placed
ideal) and the forced flags while a block grows (a block touching a forced group pays
it). CPU blocks pay no transfers, so none of this applies when CPUs may be used.

Groups held whole (`_whole_most`): every group not held whole is paid at least c
times, c = max(2, q) or 3-4 where its atoms cannot be split over fewer blocks of cost
<= T (`split`), so K T >= work + overflow + sum c size - sum c size (over the
groups held whole).
What can be held whole is bounded by a weighted independent set: groups whose hulls
share an atom and are both held whole lie in one block, and so does a whole chain of
them (each sharing an atom with the next): its union hull, the groups touching it that
are never whole, and for the others touching it their size or what holding them adds,
must fit T, else not all of the chain is whole (a chain cut). The pairs and triples
go to a small MIP (dual bound); the chains, found round by round from an LP's
solution together with cliques of the pair conflicts, to that LP (`_chain_lp`, bound
from its duals).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import LinearConstraint, milp  # imported up front: the first call
from scipy.sparse import coo_array  # would otherwise pay it inside a time limit

from jaxplace.bounds.station import windows
from jaxplace.exact.bbr.instance import ATOL, RTOL, Model
from jaxplace.exact.bbr.split import SplitData, cut_counts, split_data

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

#: Rounds of cuts in the whole-groups LP (`_chain_lp`; each re-solves it): cliques of
#: pair conflicts, and connected sets of groups (hulls overlapping in a chain) whose
#: union hull cannot fit one block (`_chain_cuts`, `_chain_walks`).
CHAIN_ROUNDS = 30

#: Starting groups tried per component when looking for a small violating chain.
CHAIN_STARTS = 12

#: Chain cuts only up to this many tensor groups: past it the LP's rounds and walks take
#: the rung's whole time for little (500 REGAL ops, 362 groups: +0.014-0.036 of UB in
#: 60 s; 1,500 ops: nothing in 60 s), so larger graphs keep the pairs-and-triples bound.
CHAIN_MAX_GROUPS = 400

#: First step (relative to the bound known) of the climb with the chain cuts.
CHAIN_STEP = 0.004

#: Chain cuts kept for later guesses (a cut found at T holds at every T' <= T).
CHAIN_POOL = 4000

#: Cut groups' block counts (`split`) only up to this many atoms: their T-free part
#: adds 0.1-0.2 s to the model at 79-186 REGAL ops, 1 s at 300 and 3-6 s at 500-1,000
#: (load 11), where the whole rung takes about a second.
SPLIT_MAX_ATOMS = 250

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
    - `gdn`, `gup`, `gatoms`: (G, A) bool, the descendants, the ancestors and the atoms
      of every group (a set of groups' hull is any(gdn) & any(gup)); `atom_work`,
      `atom_param`: (A,); `overlap`: per group, the groups whose hulls share an atom
      (all of them, unlike `group_a`/`group_b`, which the cell budget may cut);
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
    gdn: np.ndarray = None
    gup: np.ndarray = None
    gatoms: np.ndarray = None
    atom_work: np.ndarray = None
    atom_param: np.ndarray = None
    overlap: list = None
    split: SplitData | None = None  # `split`: blocks a cut group touches at least
    whole_memo: dict = field(default_factory=dict)  # (q, apart, T) -> `_whole_most`
    chain_pool: list = field(default_factory=list)  # (T found at, groups) chain cuts


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
    split = None
    if A <= SPLIT_MAX_ATOMS:
        split = split_data(gm, np.stack([_bits(d, A) for d in desc]),
                           np.stack([_bits(u, A) for u in anc]),
                           np.asarray(m.gsize, dtype=np.float64),
                           lambda bits: _hull_cost(bits, work, param, m), work)
    return CrossData(
        split=split,
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
        group_b=gb.astype(np.int64), group_t=gt,
        gdn=np.stack([_bits(x, A) for x in gdn]), gup=np.stack([_bits(x, A) for x in gup]),
        gatoms=gm, atom_work=work, atom_param=param,
        overlap=[np.flatnonzero(row).tolist() for row in (ov | ov.T)])


def atom_windows(cd: CrossData, T: float, A: int | None = None):
    """(earliest, latest) block per atom at T from the station windows (the latest of
    its nodes' earliest, the earliest of their latest), or None without windows."""
    if cd.station is None or not math.isfinite(T):
        return None
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


def _whole_most(cd: CrossData, q: np.ndarray, apart: np.ndarray,
                T: float = math.inf, enough: float = -math.inf,
                deadline: float = math.inf, cut: np.ndarray | None = None) -> float:
    """An upper bound on the size of the groups a split of cost <= T holds whole, each
    counted `cut` times (the blocks it is paid by at least when cut, `split`;
    default twice: what it saves over being cut): only groups with q = 0 can be; two
    whose hulls overlap can only if their union fits (`apart` false), three likewise,
    and a chain of overlapping hulls only if its union hull fits one block
    (`_chain_cuts`, at a finite T). A weighted independent set, solved by HiGHS
    (scipy) with a node limit; its dual bound. The chain rounds stop once the bound is
    below `enough` (all the caller needs) or past `deadline`."""
    free = q == 0
    w = (2.0 if cut is None else cut) * cd.gsize * free
    total = float(w.sum())
    npair = len(cd.group_a)
    sel = apart[:npair] & free[cd.group_a] & free[cd.group_b]
    tsel = apart[npair:] & free[cd.group_t].all(1)
    chains = (cd.gdn is not None and math.isfinite(T)
              and len(cd.gsize) <= CHAIN_MAX_GROUPS)
    if total <= 0 or not (sel.any() or tsel.any() or chains):
        return total
    # the chain cuts depend on T, so the guess is part of the key
    key = (w.tobytes(), sel.tobytes(), tsel.tobytes(),
           (T, enough) if chains else None)
    if (hit := cd.whole_memo.get(key)) is not None:
        return hit
    if len(cd.whole_memo) > 4096:
        cd.whole_memo.clear()
    out = _independent(cd, w, total, sel, tsel, T if chains else None, free, enough,
                       deadline)
    if time.perf_counter() <= deadline:  # a result cut short is not the answer at T
        cd.whole_memo[key] = out
    return out


def _independent(cd: CrossData, w: np.ndarray, total: float, sel: np.ndarray,
                 tsel: np.ndarray, T: float | None = None,
                 free: np.ndarray | None = None, enough: float = -math.inf,
                 deadline: float = math.inf) -> float:
    """`_whole_most` for the conflicting pairs `sel` (at most one whole) and triples
    `tsel` (at most two) (uncached): the MIP's dual bound (HiGHS, node limit), and with
    T given the smaller of it and `_chain_lp`."""
    pairs, trips = np.c_[cd.group_a[sel], cd.group_b[sel]], cd.group_t[tsel]
    used = np.unique(np.r_[pairs.ravel(), trips.ravel()])  # the others: all whole
    best = total
    if len(used):
        idx = np.full(len(w), -1, dtype=np.int64)
        idx[used] = np.arange(len(used))
        A = _rows([*pairs.tolist(), *trips.tolist()], idx, len(used))
        ub = np.r_[np.ones(len(pairs)), np.full(len(trips), 2.0)]
        res = milp(-w[used], integrality=np.ones(len(used)), bounds=(0, 1),
                   constraints=LinearConstraint(A, -np.inf, ub),
                   options={"node_limit": MWIS_NODES, "presolve": True})
        dual = getattr(res, "mip_dual_bound", None)
        if dual is not None and np.isfinite(dual):
            best = min(total, total - float(w[used].sum()) - float(dual))
    if T is None or best < enough:
        return best
    return min(best, _chain_lp(cd, w, pairs, trips, T, free, enough, deadline))


def _rows(sets: list, idx: np.ndarray, ncol: int):
    """CSR matrix with a row of ones per set of groups (`idx`: group -> column)."""
    rows = np.repeat(np.arange(len(sets)), [len(c) for c in sets])
    cols = idx[np.fromiter((g for c in sets for g in c), dtype=np.int64)]
    return coo_array((np.ones(len(rows)), (rows, cols)), shape=(len(sets), ncol)).tocsr()


def _chain_lp(cd: CrossData, w: np.ndarray, pairs: np.ndarray, trips: np.ndarray,
              T: float, free: np.ndarray, enough: float, deadline: float) -> float:
    """The whole-groups bound as an LP with cuts, round by round: the pairs (at most
    one whole) and triples (at most two), the chain cuts of the pool found at a T' >=
    T (each holds at every T' below where it was found), then per round the cliques
    of the pair conflicts (at most one whole) and the chain cuts (`_chain_cuts`,
    `_chain_walks`) that the LP's solution violates. Every constraint holds for every
    split of cost <= T; each round's bound comes from the LP's duals (`_lp_bound`,
    valid whatever the solver's tolerances), the smallest is returned."""
    from scipy.optimize import linprog

    var = np.flatnonzero(w > 0)
    idx = np.full(len(w), -1, dtype=np.int64)
    idx[var] = np.arange(len(var))
    sets = [*pairs.tolist(), *trips.tolist()]
    rhs = [1.0] * len(pairs) + [2.0] * len(trips)
    seen = {frozenset(c) for c in sets}
    for t, c in cd.chain_pool:
        if t >= T and (w[list(c)] > 0).all() and frozenset(c) not in seen:
            seen.add(frozenset(c))
            sets.append(list(c))
            rhs.append(len(c) - 1.0)
    adj: dict[int, set[int]] = {}
    for a, b in pairs.tolist():
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    Tc = T * (1 + RTOL) + ATOL
    wv, best = w[var], float(w.sum())
    for _ in range(CHAIN_ROUNDS):
        A = _rows(sets, idx, len(var)) if sets else None
        b = np.asarray(rhs)
        res = linprog(-wv, A_ub=A, b_ub=b if sets else None, bounds=(0, 1), method="highs")
        if res.status != 0:
            break
        y = -res.ineqlin.marginals if sets else np.zeros(0)
        best = min(best, _lp_bound(wv, A, b, y))
        if best < enough or time.perf_counter() > deadline:
            break
        x = np.zeros(len(w))
        x[var] = res.x
        new = (_cliques(x, adj) + _chain_cuts(cd, x > 0.5, free, Tc)
               + _chain_walks(cd, x, free, Tc, deadline))
        found = []
        for c, r in new:
            if x[c].sum() > r + 1e-6 and frozenset(c) not in seen:
                seen.add(frozenset(c))
                found.append((c, r))
        if not found:
            break
        for c, r in found:
            sets.append(c)
            rhs.append(r)
            if r == len(c) - 1.0 and len(c) > 2:  # a chain cut: keep for later guesses
                if len(cd.chain_pool) >= CHAIN_POOL:
                    cd.chain_pool.clear()
                cd.chain_pool.append((T, tuple(c)))
    return best


def _lp_bound(w: np.ndarray, A, b: np.ndarray, y: np.ndarray) -> float:
    """A valid bound on max w x s.t. A x <= b, 0 <= x <= 1 from any duals y:
    b y + sum max(0, w - A^T y), with y clipped at 0 (weak duality)."""
    if A is None:
        return float(np.maximum(w, 0).sum())
    y = np.maximum(np.nan_to_num(y), 0.0)
    return float(b @ y + np.maximum(w - A.T @ y, 0.0).sum())


def _cliques(x: np.ndarray, adj: dict) -> list:
    """(groups, 1): greedy cliques of the pair conflicts around each fractional group,
    heaviest first; at most one group of a clique is held whole."""
    out = []
    for v in sorted((v for v in adj if 1e-6 < x[v] < 1 - 1e-6), key=lambda v: -x[v]):
        clique = [v]
        for u in sorted(adj[v], key=lambda u: -x[u]):
            if x[u] > 1e-6 and all(u in adj[c] for c in clique[1:]):
                clique.append(u)
        if len(clique) >= 3:
            out.append((sorted(clique), 1.0))
    return out


def _chain_walks(cd: CrossData, x: np.ndarray, free: np.ndarray, Tc: float,
                 deadline: float = math.inf) -> list:
    """(groups, |groups| - 1): chains the LP's fractional solution may violate: from
    each group with x > 1/2, a walk adding the overlapping group of largest x until the
    union hull is too costly (`_block_cost`) or the missing sum(1 - x) reaches 1."""
    import heapq

    out = []
    for s in sorted(np.flatnonzero(x > 0.5).tolist(), key=lambda g: -x[g])[:CHAIN_STARTS * 4]:
        if time.perf_counter() > deadline:
            break
        walk, inside, slack = [s], {s}, 1.0 - x[s]
        heap = [(-x[h], h) for h in cd.overlap[s] if x[h] > 1e-6]
        heapq.heapify(heap)
        while heap:
            nx, h = heapq.heappop(heap)
            if h in inside:
                continue
            slack += 1.0 + nx
            if slack >= 1.0:
                break
            inside.add(h)
            walk.append(h)
            if _block_cost(cd, walk, free, Tc) > Tc:
                out.append((sorted(walk), len(walk) - 1.0))
                break
            for u in cd.overlap[h]:
                if u not in inside and x[u] > 1e-6:
                    heapq.heappush(heap, (-x[u], u))
    return out


def _chain_cuts(cd: CrossData, chosen: np.ndarray, free: np.ndarray,
                Tc: float) -> list:
    """(groups, |groups| - 1): sets of groups, among the `chosen` ones, that no split
    of cost <= T can hold all whole: groups held whole whose hulls share atoms,
    pairwise along a chain, lie in one block (an atom is in one block), which then
    holds their union hull (`_block_cost`). Per connected component of the chosen
    groups (hulls overlapping) whose union is too costly, the smallest too-costly
    prefix of a breadth-first walk from a few starts."""
    seen = np.zeros(len(chosen), dtype=bool)
    cuts = []
    for g0 in np.flatnonzero(chosen).tolist():
        if seen[g0]:
            continue
        comp, stack = [], [g0]
        seen[g0] = True
        while stack:
            g = stack.pop()
            comp.append(g)
            for h in cd.overlap[g]:
                if chosen[h] and not seen[h]:
                    seen[h] = True
                    stack.append(h)
        if len(comp) < 2 or _block_cost(cd, comp, free, Tc) <= Tc:
            continue
        best = None
        for s in comp[:CHAIN_STARTS]:
            walk = _too_costly_walk(cd, s, chosen, free, Tc,
                                    None if best is None else len(best))
            if walk is not None and (best is None or len(walk) < len(best)):
                best = walk
        if best is not None:
            cuts.append((sorted(best), len(best) - 1.0))
    return cuts


def _block_cost(cd: CrossData, whole, free: np.ndarray, Tc: float | None = None) -> float:
    """Least cost of a block holding the groups `whole` whole (inf over capacity):
    the work and overflow of their union hull H, every group touching H that is never
    held whole (q > 0) paid, and for the other groups touching H (free, not in
    `whole`) the least of t + the sizes of those whose growing H to hold them whole
    adds more than t (each is held whole, raising the block by at least its extra,
    or paid). With `Tc`, only whether it exceeds Tc is exact: the last term is left
    out (a smaller bound) when it cannot matter."""
    whole = list(whole)
    dn, up = cd.gdn[whole].any(0), cd.gup[whole].any(0)
    hull = dn & up
    base = _base_cost(cd, hull[None, :])[0]
    if not math.isfinite(base):
        return math.inf
    touch = (cd.gatoms & hull).any(1)
    touch[whole] = False
    c = base + float(cd.gsize[touch & ~free].sum())
    other = np.flatnonzero(touch & free)
    if Tc is not None and (c > Tc or c + float(cd.gsize[other].sum()) <= Tc):
        return c  # the last term is between 0 and the sizes of `other`
    if len(other):
        grown = (dn | cd.gdn[other]) & (up | cd.gup[other])
        extra = _base_cost(cd, grown) - base  # inf: over the capacity
        order = np.argsort(extra, kind="stable")
        extra, size = extra[order], cd.gsize[other][order]
        after = np.r_[size[::-1].cumsum()[::-1][1:], 0.0]  # paid above threshold j
        c += float(min(size.sum(), np.min(extra + after)))
    return c


def _base_cost(cd: CrossData, bits: np.ndarray) -> np.ndarray:
    """Work plus overflow of every row of `bits` (inf above the capacity)."""
    b = bits.astype(np.float64)
    p = b @ cd.atom_param
    c = b @ cd.atom_work
    if cd.memory is not None:
        c = c + np.maximum(0.0, p - cd.memory) / cd.bandwidth
    return np.where(p > cd.cap, np.inf, c)


def _too_costly_walk(cd: CrossData, start: int, chosen: np.ndarray, free: np.ndarray,
                     Tc: float, limit: int | None) -> list[int] | None:
    """Chosen groups in breadth-first order from `start` (each connected to the ones
    before it) up to the first whose `_block_cost` exceeds Tc; None when the walk
    ends first or would reach `limit` groups."""
    walk, inside = [start], {start}
    head = 0
    while head < len(walk):
        g = walk[head]
        head += 1
        for h in cd.overlap[g]:
            if not chosen[h] or h in inside:
                continue
            if limit is not None and len(walk) + 1 >= limit:
                return None
            inside.add(h)
            walk.append(h)
            if _block_cost(cd, walk, free, Tc) > Tc:
                return walk
    return None


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


def need(cd: CrossData, T: float, q: np.ndarray | None = None, goal: float = math.inf,
         deadline: float = math.inf, chains: bool = True) -> float:
    """What the K blocks must cost in all at guess T (module doc; with `q` from
    `crossings` at T given, the sum over q only, without the whole-groups part).
    `goal`: the caller only asks whether the answer exceeds it (the whole-groups
    part may stop there); `deadline`: perf_counter seconds (a bound found so far);
    `chains`: with the chain cuts."""
    over = 0.0
    if cd.memory is not None:
        over = max(0.0, cd.total_param - cd.K * cd.memory) / cd.bandwidth
    base = cd.total_work + over
    if q is not None:
        return base + float(q @ cd.gsize)
    win = atom_windows(cd, T)
    _, q, apart = _crossings(cd, T, win)
    if base + float(q @ cd.gsize) > goal:
        return base + float(q @ cd.gsize)
    # a group not held whole is touched by 2 blocks at least, by q when q > 2, and by
    # 3 or 4 when its atoms cannot be split over fewer (`split`)
    cut = cut_counts(cd.split, T, q, cd.gsize, win)
    most = float(cut @ cd.gsize)
    paid = most - _whole_most(cd, q, apart, T if chains else math.inf,
                              base + most - goal, deadline, cut.astype(np.float64))
    return base + max(float(q @ cd.gsize), paid)


def refuted(cd: CrossData, T: float, deadline: float = math.inf,
            chains: bool = True) -> bool:
    """No split of cost <= T exists (the summed bound of the module doc)."""
    return refuted_by(cd, T, deadline=deadline, chains=chains)


def refuted_by(cd: CrossData, T: float, q: np.ndarray | None = None,
               deadline: float = math.inf, chains: bool = True) -> bool:
    """`refuted`, with `q` from `crossings` at T when already known (then the
    caller checks the windows themselves)."""
    if q is None:
        win = atom_windows(cd, T)
        if win is not None and bool((win[0] > win[1]).any()):
            return True  # the windows alone refute T (the station bound)
        Kc = cd.K * (T * (1 + RTOL) + ATOL)
        return Kc < need(cd, T, goal=Kc, deadline=deadline, chains=chains)
    return cd.K * (T * (1 + RTOL) + ATOL) < need(cd, T, q)


def crossing_bound(cd: CrossData | None, lo: float, hi: float, rtol: float = 1e-7,
                   deadline: float = math.inf) -> float:
    """The largest T in [lo, hi] that `refuted` refutes (lo when none; lo is assumed a
    proven bound and hi a cost reached by a split, so hi itself is never refuted; hi =
    inf: the upper end is found by doubling from lo). Past `deadline` (perf_counter
    seconds) the bisection stops with the largest T refuted so far.

    Three passes: first with the sum over q alone (no solver; what it refutes the full
    bound refutes too), then with the whole-groups part without chain cuts (one small
    MIP a guess), then with them, climbing from there in steps that double from
    `CHAIN_STEP` (a guess the chain LP does not refute costs all its rounds, so the
    guesses stay near the bound known); the last two to `WHOLE_RTOL`."""
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
    a = _bisect(lambda T: refuted(cd, T, deadline, chains=False), a, hi,
                max(rtol, WHOLE_RTOL), deadline)
    if cd.gdn is None or len(cd.gsize) > CHAIN_MAX_GROUPS:
        return a
    step = CHAIN_STEP * a
    while a + step < hi and time.perf_counter() < deadline:
        if not refuted(cd, a + step, deadline):
            hi = a + step
            break
        a, step = a + step, 2 * step
    return _bisect(lambda T: refuted(cd, T, deadline), a, hi, max(rtol, WHOLE_RTOL),
                   deadline)


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
