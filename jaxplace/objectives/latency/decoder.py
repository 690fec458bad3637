"""The batched JAX list scheduler: (P, n) priorities -> (P,) makespans.

Computes exactly what `jaxplace.objectives.latency.reference.list_schedule` computes (same Kahn
order, same earliest-finish-time device choice, same port rules), one candidate per
`lax.fori_loop` over the padded ops, `vmap`ped over the population. Equal to the
reference in float64 (under `jax_enable_x64`); in float32 the makespans agree to
FLOAT32_RTOL unless two devices tie within float32 rounding, where the choice can
flip (the schedule is then a different, valid one).

Kahn's argmax runs over a two-level table (blocks of B ~ sqrt(N) ready keys and their
maxima), so a step reads O(sqrt N) keys instead of N: at n = 1000 the Kahn part would
otherwise dominate the scheduling part by ~10x.

Padding: ops to N (padded ops come after every real op and book nothing that
matters: no inputs, no time, no memory), arrival slots (tensors with several
consumers) to M, inputs per op to Din, successors per op to Ds, devices to D (padded
devices run no real op: infinite times, no memory), so a spec serves clusters of up to
D devices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplace.decoder.kahn import priority_keys
from jaxplace.decoder.layout import coarse, pow2
from jaxplace.objectives.latency.instance import LatencyInstance

#: Relative agreement of float32 makespans with the float64 reference (no device ties):
#: sums of ~n float32 times, each rounded at 6e-8.
FLOAT32_RTOL = 1e-4


@dataclass(frozen=True)
class LatencySpec:
    """Static shapes of one compiled scheduler (hashable; a jit static argument).

    Attributes:
        N: padded ops, a multiple of B.  M: arrival slots: tensors with several
        consumers (only those can be reused by a second consumer).  Din: inputs per
        op.  Ds: successors per op.  D: devices.  B: Kahn block size.
    """

    N: int
    M: int
    Din: int
    Ds: int
    D: int
    B: int

    @property
    def width(self) -> int:
        """Columns of a priority row (the search's candidate width)."""
        return self.N


class LatencyGraph(NamedTuple):
    """Device arrays of one instance (a pytree; shapes from `LatencySpec`). Per-op
    inputs are packed in two rows so that a step reads them with two gathers."""

    n: jax.Array  # () int32 real ops
    indeg: jax.Array  # (N,) int32 (padded ops: 0)
    succ: jax.Array  # (N, Ds) int32, padded with N
    opi: jax.Array  # (N, 2 Din) int32: input producers (N: none) | arrival slots (M: none)
    opf: jax.Array  # (N, D + 1 + Din) float: times (s) | memory (bytes) | input bytes
    cap: jax.Array  # (D,) float bytes
    lat: jax.Array  # (D, D) float seconds (diagonal 0)
    bw: jax.Array  # (D, D) float bytes/s (diagonal inf)


def _slots(g) -> np.ndarray:
    """(T,) arrival slot of every tensor: 0.. for tensors with several consumers, -1
    for the others (their single transfer is never reused)."""
    multi = np.diff(g.tensor_ptr) > 1
    out = np.full(g.num_tensors, -1, np.int64)
    out[multi] = np.arange(int(multi.sum()))
    return out


def make_spec(inst: LatencyInstance, *, steps: int = 2) -> LatencySpec:
    """Shapes of `inst`, rounded up (`coarse` sizes, power-of-two degrees) so that
    graphs of one size class share a compiled program."""
    g = inst.graph
    n = g.num_nodes
    B = pow2(max(4, math.isqrt(coarse(n, steps))))
    N = -(-coarse(n, steps) // B) * B
    din = int(np.diff(g.in_ptr).max(initial=0))
    ds = int(np.diff(g.succ_ptr).max(initial=0))
    m = int((np.diff(g.tensor_ptr) > 1).sum())
    return LatencySpec(N, coarse(max(m, 1), steps), pow2(max(din, 1)), pow2(max(ds, 1)),
                       inst.num_devices, B)


def latency_graph(inst: LatencyInstance, spec: LatencySpec | None = None,
                  dtype=jnp.float32) -> tuple[LatencySpec, LatencyGraph]:
    """(spec, padded device arrays) of `inst`."""
    spec = spec or make_spec(inst)
    g = inst.graph
    n, N, D, Din = g.num_nodes, spec.N, spec.D, spec.Din
    d = inst.num_devices
    slot = _slots(g)
    m = int((slot >= 0).sum())
    din = int(np.diff(g.in_ptr).max(initial=0))
    ds = int(np.diff(g.succ_ptr).max(initial=0))
    if n > N or m > spec.M or d > D or din > Din or ds > spec.Ds:
        raise ValueError(f"spec {spec} too small for n={n}, slots={m}, d={d}, "
                         f"inputs={din}, successors={ds}")
    indeg = np.zeros(N, np.int32)
    indeg[:n] = np.diff(g.pred_ptr)
    succ = np.full((N, spec.Ds), N, np.int32)
    opi = np.concatenate([np.full((N, Din), N), np.full((N, Din), spec.M)], axis=1)
    opf = np.zeros((N, D + 1 + Din))
    opf[:n, :D] = np.inf  # padded devices run no real op
    opf[:n, :d] = inst.times
    opf[:n, D] = inst.memory
    for v in range(n):
        s = g.successors(v)
        succ[v, :len(s)] = s
        e = g.consumed_tensors(v)  # sorted: ties of equal finish go to the smaller tensor
        k = len(e)
        opi[v, :k] = g.tensor_producer[e]
        opi[v, Din:Din + k] = np.where(slot[e] >= 0, slot[e], spec.M)
        opf[v, D + 1:D + 1 + k] = inst.tensor_bytes[e]
    cap = np.zeros(D)
    cap[:d] = inst.capacity
    bw, lat = np.full((D, D), np.inf), np.zeros((D, D))
    bw[:d, :d] = inst.bandwidth  # divided, not multiplied: the reference's rounding
    lat[:d, :d] = inst.link_latency
    np.fill_diagonal(bw, np.inf)
    np.fill_diagonal(lat, 0.0)
    f = lambda a: jnp.asarray(a, dtype)  # noqa: E731
    i = lambda a: jnp.asarray(a, jnp.int32)  # noqa: E731
    return spec, LatencyGraph(i(n), i(indeg), i(succ), i(opi), f(opf), f(cap), f(lat),
                              f(bw))


class _State(NamedTuple):
    indeg: jax.Array  # (N,) int32
    rk: jax.Array  # (N,) int32 key of a ready op, -1 otherwise
    bm: jax.Array  # (N // B,) int32 max of rk per block
    fin: jax.Array  # (N,) float finish time
    dev: jax.Array  # (N,) int32 device
    free: jax.Array  # (D,) device free from
    send: jax.Array  # (D,) send port free from
    recv: jax.Array  # (D,) receive port free from
    used: jax.Array  # (D,) bytes
    arr: jax.Array  # (M, D) arrival of a multi-consumer tensor on a device (inf: not there)


def _pop(spec: LatencySpec, g: LatencyGraph, keys, s: _State):
    """Emit the ready op of largest key; mark its successors that became ready."""
    B = spec.B
    b = jnp.argmax(s.bm).astype(jnp.int32)
    blk = lax.dynamic_slice(s.rk, (b * B,), (B,))
    i = jnp.argmax(blk).astype(jnp.int32)
    u = b * B + i
    bm = s.bm.at[b].set(jnp.max(blk.at[i].set(-1)))
    su = g.succ[u]  # (Ds,) padded with N
    indeg = s.indeg.at[su].add(-1, mode="drop")
    new = (su < spec.N) & (jnp.take(indeg, su, mode="fill", fill_value=1) == 0)
    k_new = jnp.where(new, jnp.take(keys, su, mode="fill", fill_value=-1), -1)
    # one scatter: u leaves the ready set, its newly ready successors enter it
    at = jnp.concatenate([u[None], jnp.where(new, su, spec.N)])
    rk = s.rk.at[at].set(jnp.concatenate([jnp.full(1, -1, jnp.int32), k_new]), mode="drop")
    bm = bm.at[su // B].max(k_new, mode="drop")
    return u, s._replace(indeg=indeg, rk=rk, bm=bm)


def _inputs(spec: LatencySpec, g: LatencyGraph, v, s: _State):
    """Op v's inputs in transfer order (producer finish, then tensor index): (Din,)
    valid, finish, device, bytes, slot and (Din, D) arrivals. The order comes from
    pairwise comparisons and one-hot picks: cheaper than a sort and gathers at Din <= 8."""
    D, Din, N = spec.D, spec.Din, spec.N
    opi, opf = g.opi[v], g.opf[v]
    prod, slot = opi[:Din], opi[Din:]
    valid = prod < N
    fu = jnp.take(s.fin, prod, mode="fill", fill_value=float("inf"))
    src = jnp.take(s.dev, prod, mode="fill", fill_value=0)
    have = jnp.take(s.arr, slot, axis=0, mode="fill", fill_value=float("inf"))  # (Din, D)
    nbytes = opf[D + 1:]
    j = jnp.arange(Din)
    first = (fu[None, :] < fu[:, None]) | ((fu[None, :] == fu[:, None]) & (j[None, :] < j[:, None]))
    rank = jnp.sum(first, axis=1)  # inputs that go before input j
    sel = rank[None, :] == j[:, None]  # sel[r, j]: input j is r-th
    pick = lambda a: jnp.sum(jnp.where(sel, a[None, :], 0), axis=1).astype(a.dtype)  # noqa: E731
    have = jnp.sum(jnp.where(sel[:, :, None], have[None], 0), axis=1)  # inf + 0 = inf
    return (pick(valid), pick(fu), pick(src), pick(nbytes), pick(slot), have)


def _place(spec: LatencySpec, g: LatencyGraph, v, s: _State) -> _State:
    """Put op v on its earliest-finish device, booking the transfers of its inputs."""
    D = spec.D
    dt = s.fin.dtype
    inf = jnp.asarray(jnp.inf, dt)
    valid, fu, src, nbytes, slot, have = _inputs(spec, g, v, s)
    qs = jnp.arange(D, dtype=jnp.int32)
    sendq = jnp.broadcast_to(s.send, (D, D))  # row q: send ports if v goes to q
    recvq = s.recv
    est = s.free
    rs, needs = [], []
    for j in range(spec.Din):
        a = have[j]  # (D,)
        same = src[j] == qs
        need = valid[j] & ~same & ~jnp.isfinite(a)
        p = src[j]
        col = qs == p  # masks instead of a gather and a scatter on (D, D): cheaper
        sp = jnp.max(jnp.where(col[None, :], sendq, -inf), axis=1)
        start = jnp.maximum(jnp.maximum(fu[j], sp), recvq)
        r = start + g.lat[p] + nbytes[j] / g.bw[p]
        ready = jnp.where(same, fu[j], jnp.where(need, r, a))
        est = jnp.maximum(est, jnp.where(valid[j], ready, 0))
        sendq = jnp.where(col[None, :] & need[:, None], r[:, None], sendq)
        recvq = jnp.where(need, r, recvq)
        rs.append(r)
        needs.append(need)
    opf = g.opf[v]
    t, mem = opf[:D], opf[D]
    ok = jnp.isfinite(t) & (s.used + mem <= g.cap)
    eft = jnp.where(ok, est + t, inf)
    q = jnp.argmin(eft).astype(jnp.int32)
    # one-hot selects instead of gathers and scatters on (D,) vectors: cheaper
    hot = qs == q
    at_q = lambda a: jnp.max(jnp.where(hot, a, -inf), axis=-1)  # noqa: E731
    f = at_q(eft)
    R = at_q(jnp.stack(rs))  # (Din,)
    Nd = jnp.any(hot & jnp.stack(needs), axis=-1)
    arr = s.arr.at[jnp.where(Nd, slot, spec.M), q].set(R, mode="drop")
    return s._replace(
        fin=s.fin.at[v].set(f), dev=s.dev.at[v].set(q), free=jnp.where(hot, f, s.free),
        send=at_q(sendq.T), recv=jnp.where(hot, recvq, s.recv),
        used=jnp.where(hot, s.used + mem, s.used), arr=arr)


def makespan_one(spec: LatencySpec, g: LatencyGraph, x: jnp.ndarray) -> jnp.ndarray:
    """() makespan of one (width,) priority row (+inf when some op fits nowhere)."""
    dt = g.opf.dtype
    N, B, D = spec.N, spec.B, spec.D
    keys = priority_keys(x[:N], g.n)
    rk = jnp.where(g.indeg == 0, keys, -1)
    s = _State(g.indeg, rk, rk.reshape(N // B, B).max(axis=1), jnp.zeros(N, dt),
               jnp.zeros(N, jnp.int32), jnp.zeros(D, dt), jnp.zeros(D, dt),
               jnp.zeros(D, dt), jnp.zeros(D, dt), jnp.full((spec.M, D), jnp.inf, dt))

    def body(_, s):
        u, s = _pop(spec, g, keys, s)
        # a padded op (no inputs, no time, no memory) books nothing that matters
        return _place(spec, g, u, s)

    s = lax.fori_loop(0, N, body, s)
    real = jnp.arange(N) < g.n
    return jnp.max(jnp.where(real, s.fin, -jnp.inf))


#: Candidates scheduled side by side: more per-candidate state than fits the caches
#: runs slower per candidate (a 2-core EPYC, n = 1000: 1,600 candidates per CPU second
#: at 64 against 900 at 256), fewer pays the loop overhead more often.
LANES = 64


def score(spec: LatencySpec, g: LatencyGraph, X: jnp.ndarray) -> jnp.ndarray:
    """(P,) makespans of (P, width) priority rows (pure; jit at the caller), LANES
    rows at a time (`lax.map` over equal chunks; rows padded to fill the last)."""
    one = jax.vmap(makespan_one, in_axes=(None, None, 0))
    P = X.shape[0]
    chunks = -(-P // LANES)
    if chunks <= 1:
        return one(spec, g, X)
    rows = -(-P // chunks)
    Xp = jnp.pad(X, ((0, chunks * rows - P), (0, 0)))
    out = lax.map(lambda x: one(spec, g, x), Xp.reshape(chunks, rows, X.shape[1]))
    return out.reshape(-1)[:P]


score_jit = jax.jit(score, static_argnums=0)


@dataclass(frozen=True)
class LatencyFitness:
    """The search fitness of this objective (`search.programs.Fitness`): the makespan of
    the list schedule of Kahn(x); `data` is the search's `SearchData`, `data.g` a
    `LatencyGraph`."""

    spec: LatencySpec

    def __call__(self, data, X: jnp.ndarray) -> jnp.ndarray:
        return score(self.spec, data.g, X)


def evaluate(inst: LatencyInstance, X, *, dtype=jnp.float32, chunk: int = 256,
             spec: LatencySpec | None = None) -> np.ndarray:
    """(P,) makespans of (P, n) priorities (host helper): calls of `chunk` rows, so
    that populations of any size share one compiled shape. A float64 `dtype` runs
    under x64 (scoped to the call), never truncated to float32."""
    with jax.enable_x64(jnp.dtype(dtype) == jnp.float64):
        return _evaluate(inst, X, dtype, chunk, spec)


def _evaluate(inst: LatencyInstance, X, dtype, chunk: int, spec) -> np.ndarray:
    spec, g = latency_graph(inst, spec, dtype=dtype)
    X = np.atleast_2d(np.asarray(X, np.float32 if dtype == jnp.float32 else np.float64))
    P, n = X.shape
    out = []
    for i in range(0, P, chunk):
        block = np.zeros((min(chunk, P - i) if P <= chunk else chunk, spec.N), X.dtype)
        rows = X[i:i + chunk]
        block[:len(rows), :n] = rows
        out.append(np.asarray(score_jit(spec, g, jnp.asarray(block)))[:len(rows)])
    return np.concatenate(out).astype(np.float64)


__all__ = ["FLOAT32_RTOL", "LatencyFitness", "LatencyGraph", "LatencySpec", "evaluate",
           "latency_graph",
           "make_spec", "makespan_one", "score", "score_jit"]
