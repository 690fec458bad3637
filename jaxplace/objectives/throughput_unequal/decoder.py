"""The batched JAX decoder of pipeline throughput on unequal devices:
(P, N + D) keys -> (P,) bottlenecks.

A candidate is a row of node priorities (columns 0..N-1, padding after the n real
ops) and device keys (columns N..N+D-1): Kahn with priorities gives the order
(`jaxplace.decoder.kahn`), the device keys sorted largest first give the device
sequence, and the slicing DP of `objectives.throughput_unequal.reference` splits the order into at
most K stages on a prefix of that sequence. The DP builds, per stage, the (N, N)
matrix of max(P[s-1][l], c_s(l, t)) over (cut t, start l) and reduces it over l: XLA
fuses the matrix into the reduction, so memory stays O(N) per candidate, and the
work is O(K N^2). The same float operations in the same association as the
reference, in float32: costs agree to FLOAT32_RTOL.

Padding: ops to N (padded ops come after every real op in Kahn's order, cost nothing,
hold nothing; the DP reads its answer at the real n), tensors to T, consumer entries
to E, successors per op to Ds. Devices are not padded (D = d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplace.decoder.kahn import positions, priority_keys
from jaxplace.decoder.layout import coarse, pow2
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput_unequal.model import capacity_limit

#: Relative agreement of float32 bottlenecks with the float64 reference: prefix sums
#: of ~n float32 op times and of tensor bytes entering and leaving the cut traffic.
FLOAT32_RTOL = 1e-4
#: Candidates per vmapped chunk (`lax.map` over chunks).
LANES = 16


@dataclass(frozen=True)
class HeteroSpec:
    """Static shapes of one compiled decoder (hashable; a jit static argument).

    Attributes:
        N: padded ops, a multiple of B.  Ds: successors per op.  T: padded tensors.  E: padded
        consumer entries.  D: devices.  K: most stages (min(k, D)).  B: Kahn's
        block of ready keys (~sqrt N).  window: some
        device cannot hold every op (the DP then needs memory windows; else a stage's
        start ranges over the whole prefix).
    """

    N: int
    Ds: int
    T: int
    E: int
    D: int
    K: int
    B: int
    window: bool = True

    @property
    def width(self) -> int:
        """Columns of a candidate row: N node priorities, then D device keys."""
        return self.N + self.D


class HeteroGraph(NamedTuple):
    """Device arrays of one instance (a pytree; shapes from `HeteroSpec`)."""

    n: jax.Array  # () int32 real ops
    indeg: jax.Array  # (N,) int32 (padded ops: 0)
    succ: jax.Array  # (N, Ds) int32, padded with N
    times: jax.Array  # (N, D) float seconds (padded ops: 0)
    memory: jax.Array  # (N,) float bytes
    t_prod: jax.Array  # (T,) int32 producer (padded: 0)
    t_bytes: jax.Array  # (T,) float (padded: 0)
    c_tensor: jax.Array  # (E,) int32 tensor of a consumer entry (padded: T, dropped)
    c_node: jax.Array  # (E,) int32 consumer op (padded: 0)
    cap: jax.Array  # (D,) float bytes (with the reference's slack)
    lat: jax.Array  # (D, D) float seconds (diagonal 0)
    bw: jax.Array  # (D, D) float bytes/s (diagonal inf)


def make_spec(inst, k: int, *, steps: int = 2) -> HeteroSpec:
    """Shapes of `inst` rounded up (`coarse` sizes) so graphs of a class share code."""
    g = inst.graph
    ds = int(np.diff(g.succ_ptr).max(initial=0))
    d = inst.num_devices
    import math

    B = pow2(max(4, math.isqrt(coarse(g.num_nodes, steps))))
    N = -(-coarse(g.num_nodes, steps) // B) * B
    return HeteroSpec(N, pow2(max(ds, 1)),
                      coarse(max(g.num_tensors, 1), steps),
                      coarse(max(len(g.tensor_consumers), 1), steps), d,
                      max(1, min(int(k), d)), B,
                      bool(inst.memory.sum() > capacity_limit(inst.capacity).min()))


def hetero_graph(inst, k: int, spec: HeteroSpec | None = None, dtype=jnp.float32
                 ) -> tuple[HeteroSpec, HeteroGraph]:
    """(spec, padded device arrays) of `inst` with at most k stages."""
    spec = spec or make_spec(inst, k)
    g = inst.graph
    n, N, T, E = g.num_nodes, spec.N, spec.T, spec.E
    ne = len(g.tensor_consumers)
    if n > N or g.num_tensors > T or ne > E or inst.num_devices != spec.D or \
            int(np.diff(g.succ_ptr).max(initial=0)) > spec.Ds:
        raise ValueError(f"spec {spec} does not fit n={n}, tensors={g.num_tensors}, "
                         f"entries={ne}, devices={inst.num_devices}")
    indeg = np.zeros(N, np.int32)
    indeg[:n] = np.diff(g.pred_ptr)
    succ = np.full((N, spec.Ds), N, np.int32)
    deg = np.diff(g.succ_ptr)
    rows = np.repeat(np.arange(n), deg)
    cols = np.arange(len(g.succ_idx)) - np.repeat(g.succ_ptr[:-1], deg)
    succ[rows, cols] = g.succ_idx
    times = np.zeros((N, spec.D))
    times[:n] = inst.times
    memory = np.zeros(N)
    memory[:n] = inst.memory
    t_prod = np.zeros(T, np.int32)
    t_prod[:g.num_tensors] = g.tensor_producer
    t_bytes = np.zeros(T)
    t_bytes[:g.num_tensors] = inst.tensor_bytes
    c_tensor = np.full(E, T, np.int32)
    c_tensor[:ne] = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    c_node = np.zeros(E, np.int32)
    c_node[:ne] = g.tensor_consumers
    bw = np.array(inst.bandwidth, np.float64)
    lat = np.array(inst.link_latency, np.float64)
    np.fill_diagonal(bw, np.inf)
    np.fill_diagonal(lat, 0.0)
    f = lambda a: jnp.asarray(a, dtype)  # noqa: E731
    i = lambda a: jnp.asarray(a, jnp.int32)  # noqa: E731
    return spec, HeteroGraph(i(n), i(indeg), i(succ), f(times), f(memory), i(t_prod),
                             f(t_bytes), i(c_tensor), i(c_node),
                             f(capacity_limit(inst.capacity)), f(lat), f(bw))


def kahn_blocked(spec: HeteroSpec, g: HeteroGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """(N,) int32 Kahn order for (N,) unique int32 keys (`priority_keys`), the argmax
    over a two-level table (blocks of B ready keys and their maxima) as in
    `jaxplace.objectives.latency.decoder`: O(sqrt N) reads per step instead of N."""
    N, B = spec.N, spec.B
    rk0 = jnp.where(g.indeg == 0, keys, -1)

    def step(c, _):
        indeg, rk, bm = c
        b = jnp.argmax(bm).astype(jnp.int32)
        blk = lax.dynamic_slice(rk, (b * B,), (B,))
        i = jnp.argmax(blk).astype(jnp.int32)
        u = b * B + i
        bm = bm.at[b].set(jnp.max(blk.at[i].set(-1)))
        su = g.succ[u]  # (Ds,) padded with N
        indeg = indeg.at[su].add(-1, mode="drop")
        new = (su < N) & (jnp.take(indeg, su, mode="fill", fill_value=1) == 0)
        k_new = jnp.where(new, jnp.take(keys, su, mode="fill", fill_value=-1), -1)
        at = jnp.concatenate([u[None], jnp.where(new, su, N)])
        rk = rk.at[at].set(jnp.concatenate([jnp.full(1, -1, jnp.int32), k_new]),
                           mode="drop")
        bm = bm.at[su // B].max(k_new, mode="drop")
        return (indeg, rk, bm), u

    c0 = (g.indeg, rk0, rk0.reshape(N // B, B).max(axis=1))
    _, order = lax.scan(step, c0, None, length=N)
    return order


def device_order(xd: jnp.ndarray) -> jnp.ndarray:
    """(D,) int32 devices by key, largest first, ties to the smaller index."""
    D = xd.shape[0]
    iota = jnp.arange(D, dtype=jnp.int32)
    _, perm = lax.sort((-xd + 0, iota), num_keys=2, is_stable=True)
    return perm


def cut_traffic(spec: HeteroSpec, g: HeteroGraph, order: jnp.ndarray):
    """((N+1,) tensors, (N+1,) bytes) crossing each cut of `order` (the reference's
    `cut_traffic`): a tensor crosses cuts p+1..q, producer at p, last consumer at q."""
    N, T = spec.N, spec.T
    dt = g.times.dtype
    pos = positions(order)
    last = jax.ops.segment_max(pos[g.c_node], g.c_tensor, num_segments=T)
    p = pos[g.t_prod]
    has = last > p
    lo = jnp.where(has, p + 1, N + 1)
    hi = jnp.where(has, last + 1, N + 1)
    one = has.astype(dt)
    cnt = jnp.zeros(N + 2, dt).at[lo].add(one).at[hi].add(-one)
    byt = jnp.zeros(N + 2, dt).at[lo].add(g.t_bytes * one).at[hi].add(-g.t_bytes * one)
    return jnp.cumsum(cnt)[:N + 1], jnp.cumsum(byt)[:N + 1]


def _link(g: HeteroGraph, cnt, byt, a, b):
    return cnt * g.lat[a, b] + byt / g.bw[a, b]


def slice_one(spec: HeteroSpec, g: HeteroGraph, order: jnp.ndarray, seq: jnp.ndarray
              ) -> jnp.ndarray:
    """() best bottleneck of one order on the device sequence `seq` (+inf: no fit)."""
    N, D, K = spec.N, spec.D, spec.K
    dt = g.times.dtype
    inf = jnp.asarray(jnp.inf, dt)
    z = jnp.zeros((1,), dt)
    W = jnp.concatenate([jnp.zeros((1, D), dt), jnp.cumsum(g.times[order], axis=0)])
    M = jnp.concatenate([z, jnp.cumsum(g.memory[order])])
    cnt, byt = cut_traffic(spec, g, order)
    ell = jnp.arange(N)
    t = jnp.arange(1, N + 1)
    prev = jnp.full(N + 1, inf, dt).at[0].set(0)
    best = inf
    for s in range(K):
        p = seq[s]
        a = seq[s - 1] if s > 0 else p
        b = seq[s + 1] if s + 1 < D else p
        tin = _link(g, cnt, byt, a, p)[:N]  # by start l
        tout = _link(g, cnt, byt, p, b)[1:]  # by cut t
        Wp = W[:, p]
        c = (Wp[1:, None] - Wp[None, :N]) + tin[None, :] + tout[:, None]  # (t, l)
        ok = (ell[None, :] < t[:, None]) & (M[1:, None] - M[None, :N] <= g.cap[p])
        cand = jnp.where(ok, jnp.maximum(prev[None, :N], c), inf)
        prev = jnp.concatenate([inf[None], jnp.min(cand, axis=1)])
        best = jnp.minimum(best, prev[g.n])
    return best


def _stage_terms(spec: HeteroSpec, g: HeteroGraph, order, seq):
    """Per stage s, the separable parts of c_s(l, t) = F_s(t) + G_s(l) and the memory
    window: F (K, N) by cut t = 1..N, G (K, N) by start l = 0..N-1, first (K, N) int32
    the smallest start l whose segment l..t-1 fits the stage's device."""
    N, D, K = spec.N, spec.D, spec.K
    dt = g.times.dtype
    W = jnp.concatenate([jnp.zeros((1, D), dt), jnp.cumsum(g.times[order], axis=0)])
    M = jnp.concatenate([jnp.zeros((1,), dt), jnp.cumsum(g.memory[order])])
    cnt, byt = cut_traffic(spec, g, order)
    F, G, first = [], [], []
    for s in range(K):
        p = seq[s]
        a = seq[s - 1] if s > 0 else p
        b = seq[s + 1] if s + 1 < D else p
        Wp = W[:, p]
        F.append(Wp[1:] + _link(g, cnt, byt, p, b)[1:])
        G.append(_link(g, cnt, byt, a, p)[:N] - Wp[:N])
        first.append(jnp.searchsorted(M[:N], M[1:] - g.cap[p], side="left"))
    return jnp.stack(F), jnp.stack(G), jnp.stack(first).astype(jnp.int32)


#: Bisection steps over the bit patterns of non-negative float32 (0 .. +inf).
_BISECT = 31


def slice_bisect(spec: HeteroSpec, g: HeteroGraph, order: jnp.ndarray, seq: jnp.ndarray
                 ) -> jnp.ndarray:
    """`slice_one` by bisection on the answer: the smallest float32 X such that some
    split has every stage cost F_s(t) + G_s(l) <= X. A feasibility test walks the
    stages: cut t is reachable after stage s when some reachable l in t's memory
    window has G_s(l) <= X - F_s(t), a range minimum (sparse table, O(N log N)); 31
    tests over the float32 bit patterns give the answer to the last bit, in
    O(31 K N log N) instead of O(K N^2). Sums are split as F + G, not as the
    reference's (W(t) - W(l)) + in + out: agreement to FLOAT32_RTOL, not bitwise."""
    N, K = spec.N, spec.K
    dt = g.times.dtype
    inf = jnp.asarray(jnp.inf, dt)
    F, G, first = _stage_terms(spec, g, order, seq)
    t = jnp.arange(1, N + 1, dtype=jnp.int32)
    lo = jnp.maximum(first, 0)  # (K, N) window [lo, t - 1]
    length = t[None, :] - lo
    J = max(N - 1, 1).bit_length()
    lev = 31 - lax.clz(jnp.maximum(length, 1))  # floor(log2(length))
    b = t[None, :] - (1 << lev)  # second probe: ends at t - 1

    def window_min(s, Gm):
        if not spec.window:  # every start l < t fits: a prefix minimum
            return lax.cummin(Gm)
        table = [Gm]
        for j in range(J):
            prev = table[-1]
            sh = jnp.concatenate([prev[1 << j:], jnp.full(min(1 << j, N), inf, dt)])
            table.append(jnp.minimum(prev, sh))
        tab = jnp.stack(table).reshape(-1)  # ((J+1) N,)
        return jnp.minimum(tab[lev[s] * N + lo[s]], tab[lev[s] * N + b[s]])

    def feasible(X):
        reach = jnp.zeros(N + 1, bool).at[0].set(True)
        ok_n = jnp.asarray(False)
        for s in range(K):
            m = window_min(s, jnp.where(reach[:N], G[s], inf))
            r = (length[s] > 0) & jnp.isfinite(m) & (m + F[s] <= X)
            reach = jnp.concatenate([jnp.zeros(1, bool), r])
            ok_n = ok_n | reach[g.n]
        return ok_n

    def step(_, lh):
        lo_b, hi_b = lh
        mid = lo_b + (hi_b - lo_b) // 2
        ok = feasible(lax.bitcast_convert_type(mid, dt))
        return jnp.where(ok, lo_b, mid + 1), jnp.where(ok, mid, hi_b)

    # bisection on the bit patterns of non-negative floats (ordered as integers):
    # 31 steps cover float32's, 63 float64's
    wide = jnp.dtype(dt) == jnp.float64
    it = jnp.int64 if wide else jnp.int32
    hi0 = lax.bitcast_convert_type(inf, it)
    _, hi = lax.fori_loop(0, 63 if wide else _BISECT, step, (it(0), hi0))
    return lax.bitcast_convert_type(hi, dt)


def bottleneck_one(spec: HeteroSpec, g: HeteroGraph, x: jnp.ndarray) -> jnp.ndarray:
    """() bottleneck of one (width,) candidate row."""
    keys = priority_keys(x[:spec.N], g.n)
    order = kahn_blocked(spec, g, keys)
    return slice_bisect(spec, g, order, device_order(x[spec.N:spec.N + spec.D]))


def score(spec: HeteroSpec, g: HeteroGraph, X: jnp.ndarray) -> jnp.ndarray:
    """(P,) bottlenecks of (P, width) rows (pure; jit at the caller), LANES rows at a
    time (`lax.map` over equal chunks; rows padded to fill the last)."""
    one = jax.vmap(bottleneck_one, in_axes=(None, None, 0))
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
class HeteroFitness:
    """The search fitness of this objective (`search.programs.Fitness`): the pipeline
    bottleneck on unequal devices of rows of N node priorities then D device keys;
    `data` is the search's `SearchData`, `data.g` a `HeteroGraph`."""

    spec: HeteroSpec

    def __call__(self, data, X: jnp.ndarray) -> jnp.ndarray:
        return score(self.spec, data.g, X)


def candidate_rows(inst, spec: HeteroSpec, X) -> np.ndarray:
    """(P, width) rows from (P, n) node priorities or (P, n + d) priorities and device
    keys (no device keys: the cluster's order)."""
    X = np.atleast_2d(np.asarray(X, np.float32))
    n, d = inst.n, inst.num_devices
    if X.shape[1] not in (n, n + d):
        raise JaxplaceError(f"has shape {X.shape}, expected (P, {n}) or (P, {n + d})",
                            field="X")
    out = np.zeros((X.shape[0], spec.width), np.float32)
    out[:, :n] = X[:, :n]
    out[:, spec.N:] = X[:, n:] if X.shape[1] == n + d else -np.arange(d, dtype=np.float32)
    return out


def evaluate(inst, k: int, X, *, dtype=jnp.float32, chunk: int = 256,
             spec: HeteroSpec | None = None) -> np.ndarray:
    """(P,) float64 bottlenecks of (P, n) or (P, n + d) rows (host helper): calls of
    `chunk` rows, so that populations of any size share one compiled shape. A
    float64 `dtype` runs under x64 (scoped to the call), never truncated to float32."""
    with jax.enable_x64(jnp.dtype(dtype) == jnp.float64):
        return _evaluate(inst, k, X, dtype, chunk, spec)


def _evaluate(inst, k: int, X, dtype, chunk: int, spec) -> np.ndarray:
    spec, g = hetero_graph(inst, k, spec, dtype=dtype)
    R = candidate_rows(inst, spec, X)
    P = R.shape[0]
    out = []
    for i in range(0, P, chunk):
        rows = R[i:i + chunk]
        block = np.zeros((chunk if P > chunk else len(rows), spec.width), np.float32)
        block[:len(rows)] = rows
        out.append(np.asarray(score_jit(spec, g, jnp.asarray(block, dtype)))[:len(rows)])
    return np.concatenate(out).astype(np.float64)


__all__ = ["FLOAT32_RTOL", "HeteroFitness", "HeteroGraph", "HeteroSpec", "bottleneck_one",
           "candidate_rows", "cut_traffic", "device_order", "evaluate", "hetero_graph",
           "make_spec", "score", "score_jit", "slice_one"]
