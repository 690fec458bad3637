"""Station windows for a guessed bottleneck T (SALBP-2 style bounds; Scholl 1999).

Number the blocks of a partition whose every block costs at most T in DAG order
(non-empty blocks first). If op v sits in block s (0-based), its ancestors along the
ordering edges and v itself (the set A_v) lie in blocks 0..s, so those s + 1 blocks
together cost at least cost(A_v) and s >= ceil(cost(A_v) / T) - 1; its descendants and
v (D_v) lie in blocks s..k-1, so s <= k - ceil(cost(D_v) / T). Here cost(A_v) is
work(A_v) plus what the transfers at the boundary of blocks 0..s must add:

- every tensor produced in A_v with a consumer c outside A_v either leaves blocks
  0..s (paid once, by its producer's block) or c is in them (its work is paid);
  c's work is shared among the tensors of A_v it consumes, so the two pots are never
  counted twice: each tensor adds min(size / B, its share of its consumers' work);
- mirrored for D_v: a tensor consumed in D_v whose producer p is outside D_v either
  enters blocks s..k-1 (paid at least once) or p is in them (p's work, shared among
  its tensors counted here);
- parameters: the blocks pay at least max(0, param(A_v) - (s+1) M) / B of overflow,
  and with a hard capacity C need param(A_v) <= (s+1) C.

Windows then propagate along ordering edges (a successor is never earlier) and over
colocation classes (members share a block). A guess T is refuted without a solver
when a window is empty or when the ops whose windows lie inside blocks a..b weigh
more than those b - a + 1 blocks can carry. Every refuted T is a valid lower bound
(OPT > T) whatever else happens; `StationBound` bisects on T for the largest one.

Accelerator blocks only: with CPU blocks or CPU-only ops (different costs, no
transfers) the rung reports bound 0, like the other block-model rungs.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from jaxplace.bounds.base import BoundContext, MethodResult, skipped, unmodelled
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

#: Above this many nodes the (n, n) ancestor matrix is not built; the rungs skip.
MAX_NODES = 6000

#: Relative slack on every comparison with T: a guess is refuted only when it is
#: refuted with this margin, so float rounding never refutes OPT itself.
SLACK = 1e-9

SKIPPED_SIZE = f"skipped: more than {MAX_NODES:,} nodes"


@dataclass(frozen=True)
class StationData:
    """What the windows need, independent of T (all (n,) float64 unless noted).

    Attributes:
        head: cost(A_v): work of v and its ancestors plus the transfer term (see module).
        head_param: param(A_v).
        tail: cost(D_v): the same for v and its descendants.
        tail_param: param(D_v).
        work, param: per-node work and parameters.
        edges: (m', 2) int64 ordering edges.
        topo: (n,) int64 a topological order of the ordering edges.
        color: (n,) int64 colocation class per node, -1 for none.
        k: blocks; memory, capacity, bandwidth: the problem's.
    """

    head: np.ndarray
    head_param: np.ndarray
    tail: np.ndarray
    tail_param: np.ndarray
    work: np.ndarray
    param: np.ndarray
    edges: np.ndarray
    topo: np.ndarray
    color: np.ndarray
    k: int
    memory: float | None
    capacity: float | None
    bandwidth: float


def _topo(n: int, edges: np.ndarray) -> np.ndarray:
    indeg = np.bincount(edges[:, 1], minlength=n) if len(edges) else np.zeros(n, np.int64)
    order = np.argsort(edges[:, 0], kind="stable") if len(edges) else np.zeros(0, np.int64)
    src, dst = edges[order, 0], edges[order, 1]
    ptr = np.searchsorted(src, np.arange(n + 1))
    ready = list(np.flatnonzero(indeg == 0))
    out = []
    indeg = indeg.copy()
    while ready:
        u = int(ready.pop())
        out.append(u)
        for w in dst[ptr[u]:ptr[u + 1]]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(int(w))
    return np.asarray(out, dtype=np.int64)


def _closure(n: int, edges: np.ndarray, topo: np.ndarray, reverse: bool) -> np.ndarray:
    """(n, n) bool: row v holds v and its ancestors (descendants when `reverse`)."""
    reach = np.eye(n, dtype=bool)
    if not len(edges):
        return reach
    u, v = (edges[:, 1], edges[:, 0]) if reverse else (edges[:, 0], edges[:, 1])
    order = np.argsort(v, kind="stable")
    u, v = u[order], v[order]
    ptr = np.searchsorted(v, np.arange(n + 1))
    for x in (topo[::-1] if reverse else topo):
        preds = u[ptr[x]:ptr[x + 1]]
        if len(preds):
            reach[x] |= reach[preds].any(axis=0)
    return reach


def _per_tensor(live: np.ndarray, pt: np.ndarray, vals: np.ndarray | None,
                num_t: int) -> tuple[np.ndarray, np.ndarray]:
    """((r, T) bool, (r, T) float): which tensors have a live pair in each row, and the
    sum of `vals` ((r, P), or None) over their live pairs."""
    r = live.shape[0]
    rr = np.broadcast_to(np.arange(r)[:, None], live.shape)[live]
    tt = np.broadcast_to(pt, live.shape)[live]
    has = np.zeros((r, num_t), dtype=bool)
    has[rr, tt] = True
    total = np.zeros((r, num_t))
    if vals is not None:
        np.add.at(total, (rr, tt), vals[live])
    return has, total


def _leaving(inside, pt, pc, tsize, work, prod, num_t) -> np.ndarray:
    """Per row of `inside` ((r, n) bool sets): the sum over tensors produced inside with
    consumers outside of min(size / B, their outside consumers' share of work), each
    consumer's work split evenly over the tensors of the set it consumes."""
    r, n = inside.shape
    live = inside[:, prod[pt]] & ~inside[:, pc]  # (r, P) pairs leaving the set
    deg = np.zeros((r, n))
    rr = np.broadcast_to(np.arange(r)[:, None], live.shape)[live]
    np.add.at(deg, (rr, np.broadcast_to(pc, live.shape)[live]), 1.0)
    share = work[pc][None, :] / np.maximum(np.take(deg, pc, axis=1), 1.0)
    has, total = _per_tensor(live, pt, share, num_t)
    return np.where(has, np.minimum(tsize[None, :], total), 0.0).sum(axis=1)


def _entering(inside, pt, pc, tsize, work, prod, num_t) -> np.ndarray:
    """Per row: the sum over tensors produced outside with consumers inside of
    min(size / B, the producer's work split evenly over its tensors counted here)."""
    r, n = inside.shape
    live = ~inside[:, prod[pt]] & inside[:, pc]  # (r, P) pairs entering the set
    has, _ = _per_tensor(live, pt, None, num_t)
    per_producer = np.zeros((r, n))
    tr, tt = np.nonzero(has)
    np.add.at(per_producer, (tr, prod[tt]), 1.0)
    share = work[prod][None, :] / np.maximum(np.take(per_producer, prod, axis=1), 1.0)
    return np.where(has, np.minimum(tsize[None, :], share), 0.0).sum(axis=1)


def _transfer_terms(problem: Problem, reach: np.ndarray, out_side: bool,
                    chunk: int = 256) -> np.ndarray:
    g = problem.graph
    if not g.num_tensors:
        return np.zeros(problem.n)
    pt = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    pc = np.asarray(g.tensor_consumers, dtype=np.int64)
    # a tensor consumed by its own producer never crosses a boundary of its own
    keep = g.tensor_producer[pt] != pc
    pt, pc = pt[keep], pc[keep]
    tsize = g.tensor_size / problem.bandwidth
    term = _leaving if out_side else _entering
    out = np.zeros(problem.n)
    for s in range(0, problem.n, chunk):
        out[s:s + chunk] = term(reach[s:s + chunk], pt, pc, tsize, g.work,
                                g.tensor_producer, g.num_tensors)
    return out


def station_data(problem: Problem) -> StationData:
    """The T-independent part of the windows (O(n^2) memory; see MAX_NODES)."""
    g, n = problem.graph, problem.n
    edges = np.asarray(ordering_edges(g), dtype=np.int64).reshape(-1, 2)
    topo = _topo(n, edges)
    anc = _closure(n, edges, topo, reverse=False)
    desc = _closure(n, edges, topo, reverse=True)
    work, param = np.asarray(g.work, float), np.asarray(g.size_param, float)
    color = g.node_attrs.get("color_class")
    color = (np.full(n, -1, dtype=np.int64) if color is None
             else np.asarray(color, dtype=np.int64))
    return StationData(
        head=anc @ work + _transfer_terms(problem, anc, out_side=True),
        head_param=anc @ param,
        tail=desc @ work + _transfer_terms(problem, desc, out_side=False),
        tail_param=desc @ param, work=work, param=param, edges=edges, topo=topo,
        color=color, k=problem.k, memory=problem.memory, capacity=problem.capacity,
        bandwidth=problem.bandwidth)


def _blocks_needed(cost: np.ndarray, param: np.ndarray, data: StationData,
                   T: float) -> np.ndarray:
    """(n,) the fewest blocks of cost <= T that can hold a set of this cost and
    parameters (k + 1 when even k cannot)."""
    k, t = data.k, T * (1 + SLACK)
    need = np.full(len(cost), k + 1, dtype=np.int64)
    for s in range(k, 0, -1):
        c = cost.copy()
        if data.memory is not None:
            c = c + np.maximum(0.0, param - s * data.memory) / data.bandwidth
        ok = c <= s * t
        if data.capacity is not None:
            ok &= param <= s * data.capacity * (1 + SLACK)
        need[ok] = s
    return need


def _propagate(lo: np.ndarray, hi: np.ndarray, data: StationData) -> None:
    """In place: lo non-decreasing and hi non-increasing along ordering edges, and
    equal over colocation classes, to a fixpoint."""
    u, v = data.edges[:, 0], data.edges[:, 1]
    cls = data.color >= 0
    members, cid = np.flatnonzero(cls), data.color[cls]
    ncls = int(cid.max()) + 1 if len(cid) else 0
    for _ in range(len(lo) + 2):
        lo0, hi0 = lo.copy(), hi.copy()
        if len(u):
            np.maximum.at(lo, v, lo[u])
            np.minimum.at(hi, u, hi[v])
        if ncls:
            cl = np.full(ncls, -1, dtype=np.int64)
            ch = np.full(ncls, np.iinfo(np.int64).max, dtype=np.int64)
            np.maximum.at(cl, cid, lo[members])
            np.minimum.at(ch, cid, hi[members])
            lo[members], hi[members] = cl[cid], ch[cid]
        if np.array_equal(lo, lo0) and np.array_equal(hi, hi0):
            return


def windows(data: StationData, T: float) -> tuple[np.ndarray, np.ndarray]:
    """(earliest, latest), (n,) int64 0-based blocks every op must lie between in any
    partition of cost <= T numbered in DAG order (empty blocks last); earliest >
    latest somewhere means no such partition exists."""
    k = data.k
    lo = _blocks_needed(data.head, data.head_param, data, T) - 1
    hi = k - _blocks_needed(data.tail, data.tail_param, data, T)
    _propagate(lo, hi, data)
    return lo, hi


def overloaded(data: StationData, lo: np.ndarray, hi: np.ndarray, T: float) -> bool:
    """Some blocks a..b must hold ops (those with windows inside a..b) whose work,
    overflow or parameters exceed what b - a + 1 blocks of cost <= T allow."""
    k, t = data.k, T * (1 + SLACK)
    for a in range(k):
        for b in range(a, k):
            inside = (lo >= a) & (hi <= b)
            if not inside.any():
                continue
            cnt = b - a + 1
            w = float(data.work[inside].sum())
            p = float(data.param[inside].sum())
            if data.memory is not None:
                w += max(0.0, p - cnt * data.memory) / data.bandwidth
            if w > cnt * t:
                return True
            if data.capacity is not None and p > cnt * data.capacity * (1 + SLACK):
                return True
    return False


def refuted(data: StationData, T: float) -> bool:
    """True when no partition costs at most T (proven by the windows alone)."""
    lo, hi = windows(data, T)
    return bool((lo > hi).any()) or overloaded(data, lo, hi, T)


def bisect_refuted(test, lo: float, hi: float, *, rtol: float = 1e-4,
                   deadline: float = math.inf) -> float:
    """The largest T in [lo, hi) found refuted by `test` (a monotone predicate: refuted
    at T implies refuted below T), by bisection to `rtol`; `lo` when none is.

    Only values `test` returned True for are returned, so the result is valid even
    when `test` is not monotone."""
    best = lo
    while hi - lo > rtol * max(hi, 1e-300) and time.perf_counter() < deadline:
        mid = 0.5 * (lo + hi)
        if test(mid):
            best = lo = mid
        else:
            hi = mid
    return best


def station_upper(problem: Problem, context: BoundContext) -> float:
    """A T no partition beats: the context's best partition's cost, else a sum of all
    block costs (every op and tensor in one block)."""
    if math.isfinite(context.upper_bound):
        return float(context.upper_bound)
    g = problem.graph
    return float(g.work.sum() + 2 * g.tensor_size.sum() / problem.bandwidth
                 + (g.size_param.sum() / problem.bandwidth if problem.memory is not None
                    else 0.0)) + 1.0


def station_skip(problem: Problem) -> str | None:
    """Why the station rungs cannot model `problem` (None when they can)."""
    if why := unmodelled(problem):
        return why
    if problem.n > MAX_NODES:
        return SKIPPED_SIZE
    return None


@dataclass(frozen=True)
class StationBound:
    """The largest T refuted by the station windows alone (no solver), by bisection
    between the best bound known (the simple bound at least) and the best partition."""

    name: str = "station"
    kind: str = "closed-form"

    def run(self, problem: Problem, context: BoundContext) -> MethodResult:
        if why := station_skip(problem):
            return skipped(self, why)
        t0 = time.perf_counter()
        L = throughput_lower_bound(problem)
        if not math.isfinite(L):
            return MethodResult(self.name, math.inf, "Infeasible",
                                time.perf_counter() - t0, kind=self.kind)
        data = station_data(problem)
        lo = max(L, context.lower_bound)
        hi = station_upper(problem, context)
        bound = L
        if lo < hi:
            bound = max(L, bisect_refuted(lambda T: refuted(data, T), lo, hi,
                                          deadline=t0 + context.time_limit))
            if bound == lo and not refuted(data, lo):
                bound = L  # nothing refuted: report only what this rung proves
        return MethodResult(self.name, bound, "closed form", time.perf_counter() - t0,
                            kind=self.kind)
