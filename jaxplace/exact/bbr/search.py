"""One check of branch, bound and remember: is there a split with every block <= T?

Depth first over chains of ideals (the DP over ideals' states, `dp`): a node is an
ideal I (the atoms placed in the blocks so far, `model` numbering) with `a`
accelerators and `c` CPUs left; its children are the blocks S (I + S an ideal, S not
empty, cost <= T) on an accelerator or a CPU, grown atom by atom in increasing number
(each S once). Fullest blocks (most work) are tried first, as station-loading heuristics
do for SALBP (Scholl 1999).

Pruning, every rule valid for any split of cost <= T:
- while a block grows: its work, its overflow and the transfers it must pay whatever
  it adds (tensor groups with an atom already placed) only grow; a hard capacity on
  its parameters; an atom outside the block's station window (`instance.TData`)
  never enters it, and an atom whose window ends at this block must be in it;
- while a block grows, a tensor group that no block of cost <= T can hold whole
  (forced, `cross`) is paid by the block as soon as it touches it; the child's
  LB1 is checked as a budget: with slack a T - rest(I) at the node, a block S costs
  the child T - work(S) - (rest(I) - rest(I + S)) of it, which is T - cost(S) plus
  its overflow plus, per group it touches, its size when I + S still cuts a group I
  already cut, twice its size when it cuts one nobody has to pay twice, nothing for
  one paid twice, and (2 - q) times its size for one paid q > 2 times (subtracted from
  the slack up front); a branch whose committed part already exceeds the slack is
  cut (likewise a branch whose forced payments leave less room than the work the
  block must reach);
- at a child J = I + S with a', c' devices left: the remaining work (per atom the
  cheaper of accelerator work and CPU latency) fits (a' + c') T, the CPU-only atoms
  fit c' T, and without CPUs the remaining work plus the transfers the later blocks
  must pay fits a' T (LB1 with transfers: each tensor group J cuts once, each group
  with no atom placed as often as `cross` says blocks must touch it), LB2 and LB3
  on the remaining atoms' work;
- remember: a bounded table of the (J, a', c') already refuted, with the largest T
  they were refuted at (refuted at T means refuted at every T' <= T), shared by the
  checks of one run.
Sewell and Jacobson (INFORMS J. Computing 2012) for SALBP-1 and Alvarez-Miranda,
Pereira and Vila (Computers & Operations Research 2024) for SALBP-2 are the models;
dominance between different ideals of equal work is not used here (with transfers a
smaller remaining set can cost more).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

from jaxplace.exact.bbr.instance import Model, TData

#: Blocks listed at a time at a node before its children are searched.
CHUNK = 256


class Memo:
    """Refuted states: (J, accelerators left, CPUs left) -> largest T refuted.

    Bounded: once `max_entries` states are held, new ones are not stored (a miss only
    costs time, never correctness). Owned by one `bbr` run and shared by its checks.
    """

    def __init__(self, max_entries: int = 1_000_000):
        self.max_entries = int(max_entries)
        self.table: dict = {}
        self.hits = 0

    def refuted(self, key, T: float) -> bool:
        t = self.table.get(key)
        if t is not None and T <= t:
            self.hits += 1
            return True
        return False

    def store(self, key, T: float) -> None:
        t = self.table.get(key)
        if t is None:
            if len(self.table) < self.max_entries:
                self.table[key] = T
        elif T > t:
            self.table[key] = T

    def __len__(self) -> int:
        return len(self.table)


class OutOfTime(Exception):
    """The check's deadline or node limit passed (nothing proven)."""


@dataclass
class CheckStats:
    """Search nodes, blocks grown, the deepest node (blocks placed), the blocks
    that fit T but were cut by the child's bounds (`_fits`) or by the maximal-block
    rule, and the atoms not added while growing (cost or work bound)."""

    nodes: int = 0
    blocks: int = 0
    depth: int = 0
    cut_fits: int = 0
    cut_dominated: int = 0
    cut_growth: int = 0


@dataclass
class _Search:
    """The mutable state of one check (owned by `check`)."""

    m: Model
    td: TData
    memo: Memo
    deadline: float
    max_nodes: float
    stats: CheckStats = field(default_factory=CheckStats)
    cI: list = field(default_factory=list)  # per group: atoms in the placed ideal
    qn: list = field(default_factory=list)  # per group: blocks that must pay it (q)
    total_work: float = 0.0
    total_easy: float = 0.0
    total_forced: float = 0.0  # CPU latency of the atoms only a CPU may hold
    total_sup: float = 0.0  # work of the others
    max_ratio: float = 0.0


def check(model: Model, td: TData, memo: Memo, deadline: float = float("inf"),
          max_nodes: float = float("inf"), stats: CheckStats | None = None):
    """Blocks [(bitset, on_cpu), ...] in pipeline order of a split whose every block
    costs at most `td.Tc`, or None when there is none.

    Raises:
        OutOfTime: past `deadline` (perf_counter seconds) or `max_nodes` nodes.
    """
    m = model
    if td.refuted:
        return None
    s = _Search(m, td, memo, deadline, max_nodes, stats or CheckStats())
    s.cI = [0] * len(m.gsize)
    s.qn = [round(q / x) if x > 0 else 0 for q, x in zip(td.qsize, m.gsize, strict=True)]
    s.total_work = sum(m.work)
    s.total_easy = sum(m.easy)
    s.total_forced = sum(c for c, b in zip(m.cpu, m.bad, strict=True) if b)
    s.total_sup = sum(w for w, b in zip(m.work, m.bad, strict=True) if not b)
    ratios = [w / c if c > 0 else float("inf")
              for w, c, b in zip(m.work, m.cpu, m.bad, strict=True) if not b and w > 0]
    s.max_ratio = max(ratios, default=0.0)
    root = _Sums(cut=sum(td.qsize))
    if not _fits(s, 0, m.K, m.C, root):
        return None
    try:
        return _node(s, 0, m.K, m.C, root)
    except RecursionError:  # a block of about a thousand atoms: nothing proven
        raise OutOfTime from None


@dataclass(frozen=True)
class _Sums:
    """Sums over the placed ideal I."""

    work: float = 0.0
    easy: float = 0.0
    forced: float = 0.0
    sup: float = 0.0
    cut: float = 0.0  # transfers the blocks after I must pay (`_pay`)


def _fits(s: _Search, J: int, a: int, c: int, sums: _Sums) -> bool:
    """Can the atoms outside J (`sums` over J) still fit `a` accelerators and `c` CPUs?"""
    m, Tc = s.m, s.td.Tc
    work, easy, forced, sup, cut = sums.work, sums.easy, sums.forced, sums.sup, sums.cut
    R = m.full & ~J
    if not R:
        return True
    if a + c == 0:
        return False
    if s.total_easy - easy > (a + c) * Tc:
        return False
    if m.C == 0 or c == 0:
        if R & m.bad_mask:
            return False
        if s.total_work - work + cut > a * Tc:
            return False
        td = s.td
        if (R & td.half).bit_count() > a:
            return False
        big = (R & td.twothird).bit_count()
        if 2 * big + (R & td.third & ~td.twothird).bit_count() > 2 * a:
            return False
    else:
        budget = c * Tc - (s.total_forced - forced)
        if budget < -1e-12:
            return False
        spare = budget * s.max_ratio if budget > 0 else 0.0
        if s.total_sup - sup - spare > a * Tc:
            return False
    return True


def _pay(placed: int, n: int, size: float, qsize: float) -> float:
    """What the blocks after an ideal holding `placed` of a group's n atoms pay for it
    at least: `qsize` when none is placed, its size while it is cut, 0 once whole."""
    if placed == 0:
        return qsize
    return size if placed < n else 0.0


def _ready(m: Model, I: int) -> int:
    """Bitset of the atoms outside I whose predecessors are all in I."""
    r, rest = 0, m.full & ~I
    while rest:
        low = rest & -rest
        v = low.bit_length() - 1
        rest ^= low
        if not (m.pred[v] & ~I):
            r |= low
    return r


def _node(s: _Search, I: int, a: int, c: int, sums: _Sums):
    """Blocks completing the ideal I with a accelerators and c CPUs left, or None."""
    m = s.m
    if I == m.full:
        return []
    s.stats.nodes += 1
    if s.stats.nodes > s.max_nodes or not s.stats.nodes & 63:
        _tick(s)
    d = (m.K - a) + (m.C - c)
    s.stats.depth = max(s.stats.depth, d)
    ready = _ready(m, I)
    cS = [0] * len(m.gsize)  # this node's growing block (its generators are suspended
    # while the children below use their own)
    gens = []
    if a:
        gens.append(_grow_acc(s, I, a, c, d, sums, ready, cS))
    if c:
        gens.append(_grow_cpu(s, I, a, c, d, sums, ready, cS))
    for gen in gens:
        # blocks come in chunks, fullest first within a chunk: the search goes deep
        # before a node's blocks are all listed (there can be millions)
        while chunk := list(itertools.islice(gen, CHUNK)):
            chunk.sort(key=lambda x: -x[0])
            for _, S, on_cpu, child in chunk:
                key = (I | S, a - (not on_cpu), c - on_cpu)
                if s.memo.refuted(key, s.td.T):
                    continue
                _place(s, S, +1)
                try:
                    rest = _node(s, I | S, key[1], key[2], child)
                finally:
                    _place(s, S, -1)
                if rest is not None:
                    return [(S, on_cpu), *rest]
                s.memo.store(key, s.td.T)
    return None


def _tick(s: _Search) -> None:
    if s.stats.nodes > s.max_nodes or time.perf_counter() > s.deadline:
        raise OutOfTime


def _place(s: _Search, S: int, sign: int) -> None:
    """Add (sign +1) or remove (-1) the atoms of S to the placed counts."""
    m, cI = s.m, s.cI
    while S:
        low = S & -S
        v = low.bit_length() - 1
        S ^= low
        for g in m.groups[v]:
            cI[g] += sign


def _grow_acc(s: _Search, I: int, a: int, c: int, d: int, sums: _Sums, ready: int,
              cS: list):
    """Yield (score, S, False, child sums) for every accelerator block from I that
    costs at most Tc and passes the child's bounds; `cS` counts the block's atoms per
    tensor group."""
    m, td = s.m, s.td
    Tc = td.Tc
    allowed = m.full if td.allowed is None else td.allowed[min(d, len(td.allowed) - 1)]
    required = 0 if td.required is None else td.required[min(d, len(td.required) - 1)]
    ready &= allowed & ~m.bad_mask
    cI, groups, gsize, gcount = s.cI, m.groups, m.gsize, m.gcount
    forced, qsize = td.forced, td.qsize
    work_, param_, pred, succ = m.work, m.param, m.pred, m.succ
    cap, mem, B = m.cap, m.memory, m.bandwidth
    easy_, bad_ = m.easy, m.bad

    never = m.full & ~(allowed & ~m.bad_mask)  # atoms block d never takes
    # the work the block must reach for the rest to fit a - 1 accelerators (LB1 of the
    # child, no CPUs): its final work is at most Tc less what it already must pay, so a
    # branch whose forced payments leave less room is dead
    need = (s.total_work - sums.work - (a - 1) * Tc) if m.C == 0 else -math.inf
    # the child's LB1 as a budget (`_waste`): the slack a Tc - rest of the node, less
    # what groups paid three times or more can give back
    slack = math.inf
    if m.C == 0:
        slack = a * Tc - (s.total_work - sums.work) - sums.cut
        slack -= sum((q - 2) * gsize[g] for g, q in enumerate(s.qn)
                     if q > 2 and cI[g] == 0)
    notI = m.full & ~I
    strict = td.T * (1 - 1e-12)  # what an atom moved into the block must keep it under

    def dominated(S: int, J: int, rdy: int, w: float, p: float, io: float) -> bool:
        """Can a ready atom u join S (cost <= T) without raising any later block's cost?
        Then every split using S maps to one using S + u (see `_grow_acc`)."""
        while rdy:
            low = rdy & -rdy
            u = low.bit_length() - 1
            rdy ^= low
            w2 = w + work_[u]
            if w2 > strict:
                continue
            p2 = p + param_[u]
            if p2 > cap:
                continue
            cost = w2 + (max(0.0, p2 - mem) / B if mem is not None else 0.0) + io
            loose = 0.0  # groups of u touching no placed atom: u's later block may pay
            for g in groups[u]:
                n_s, n = cS[g], gcount[g]
                cost += gsize[g] * ((0 < n_s + 1 < n) - (0 < n_s < n))
                if cI[g] + n_s == 0:
                    loose += gsize[g]
            if cost <= strict and work_[u] >= loose:
                return True
        return False

    qn = s.qn

    def grow(S: int, J: int, last: int, work: float, param: float, io: float,
             fixed: float, dcut: float, easy: float, rdy: int, open_: tuple,
             waste: float, pend: tuple) -> None:
        # the lowest required atom not placed bounds the next atom's number: atoms are
        # added in increasing number, so one passed over can never join this block
        miss = required & ~J
        limit = (miss & -miss).bit_length() if miss else m.num_atoms
        cand = (rdy >> (last + 1)) << (last + 1)
        while cand:
            low = cand & -cand
            v = low.bit_length() - 1
            cand ^= low
            if v >= limit:
                break
            w = work + work_[v]
            if w > Tc:
                continue
            p = param + param_[v]
            if p > cap:
                continue
            over = max(0.0, p - mem) / B if mem is not None else 0.0
            S2, J2 = S | low, J | low
            below = (~S2 & (low - 1)) | never  # atoms this block can no longer take
            io2, fixed2, dcut2 = io, fixed, dcut
            # a group S touches that holds a placed atom or one passed over crosses
            # every block this branch can still grow: S pays it for sure
            still = []
            for g in open_:
                if m.gmask[g] & below:
                    fixed2 += gsize[g]
                else:
                    still.append(g)
            waste2, pend2, gone = waste, [], below & notI
            for g in pend:
                if m.gmask[g] & gone:  # J = I + S will cut it, whatever S adds
                    waste2 += gsize[g] if cI[g] else 2 * gsize[g]
                else:
                    pend2.append(g)
            for g in groups[v]:
                n_s, n_i, n = cS[g], cI[g], gcount[g]
                x = gsize[g]
                # crossing S: 0 < cS < n; crossing J = I + S: 0 < cI + cS < n
                io2 += x * ((0 < n_s + 1 < n) - (0 < n_s < n))
                dcut2 += _pay(n_i + n_s + 1, n, x, 0.0) - _pay(n_i + n_s, n, x, qsize[g])
                if n_s == 0:
                    if n_i > 0 or forced[g] or m.gmask[g] & below:
                        fixed2 += x
                    elif n > 1:
                        still.append(g)
                    if n_i > 0 or qn[g] == 0:
                        if m.gmask[g] & gone:
                            waste2 += x if n_i else 2 * x
                        else:
                            pend2.append(g)
            if (w + fixed2 + over > Tc or Tc - fixed2 - over < need
                    or waste2 + over > slack):
                s.stats.cut_growth += 1
                continue
            for g in groups[v]:
                cS[g] += 1
            r2 = rdy & ~low
            for x_ in succ[v]:
                if not (pred[x_] & ~J2) and (allowed >> x_) & 1 and not bad_[x_]:
                    r2 |= 1 << x_
            e2 = easy + easy_[v]
            s.stats.blocks += 1
            if not s.stats.blocks & 1023:
                _tick(s)
            if w + io2 + over <= Tc and (J2 & required) == required:
                child = _Sums(sums.work + w, sums.easy + e2, sums.forced, sums.sup + w,
                              sums.cut + dcut2)
                if not _fits(s, J2, a - 1, c, child):
                    s.stats.cut_fits += 1
                elif dominated(S2, J2, r2, w, p, io2):
                    s.stats.cut_dominated += 1
                else:
                    yield (w, S2, False, child)
            yield from grow(S2, J2, v, w, p, io2, fixed2, dcut2, e2, r2, tuple(still),
                            waste2, tuple(pend2))
            for g in groups[v]:
                cS[g] -= 1

    yield from grow(0, I, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ready, (), 0.0, ())


def _grow_cpu(s: _Search, I: int, a: int, c: int, d: int, sums: _Sums, ready: int,
              cS: list):
    """Yield (score, S, True, child sums) for every CPU block from I whose CPU latency
    is at most Tc and that passes the child's bounds (no windows: CPU problems)."""
    m, Tc = s.m, s.td.Tc
    cpu_, work_, easy_, pred, succ, bad_ = m.cpu, m.work, m.easy, m.pred, m.succ, m.bad
    cI, groups, gsize, gcount = s.cI, m.groups, m.gsize, m.gcount
    qsize = s.td.qsize

    def grow(S: int, J: int, last: int, lat: float, work: float, easy: float,
             forced: float, sup: float, dcut: float, rdy: int) -> None:
        cand = (rdy >> (last + 1)) << (last + 1)
        while cand:
            low = cand & -cand
            v = low.bit_length() - 1
            cand ^= low
            t = lat + cpu_[v]
            if t > Tc:
                continue
            S2, J2 = S | low, J | low
            dc = dcut
            for g in groups[v]:
                n_j, n = cI[g] + cS[g], gcount[g]
                dc += _pay(n_j + 1, n, gsize[g], 0.0) - _pay(n_j, n, gsize[g], qsize[g])
                cS[g] += 1
            r2 = rdy & ~low
            for x_ in succ[v]:
                if not (pred[x_] & ~J2):
                    r2 |= 1 << x_
            w2 = work + work_[v]
            e2 = easy + easy_[v]
            f2 = forced + (cpu_[v] if bad_[v] else 0.0)
            s2 = sup + (0.0 if bad_[v] else work_[v])
            s.stats.blocks += 1
            if not s.stats.blocks & 1023:
                _tick(s)
            child = _Sums(sums.work + w2, sums.easy + e2, sums.forced + f2,
                          sums.sup + s2, sums.cut + dc)
            if _fits(s, J2, a, c - 1, child):
                yield (t, S2, True, child)
            yield from grow(S2, J2, v, t, w2, e2, f2, s2, dc, r2)
            for g in groups[v]:
                cS[g] -= 1

    yield from grow(0, I, -1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ready)
