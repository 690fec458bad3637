"""Population-minor ("lanes") Kahn + SliceGraph: the fast path behind `evaluate`.

Same algorithm and numbers as `kahn.kahn_one` + `slicing.slice_one` (the simple,
vmapped version, kept as the test oracle), laid out for wide SIMD:

- every per-node array is (N, P): the population is the minor axis, so each step of
  Kahn and of the DP is a handful of elementwise operations over P lanes, and the
  only per-lane irregular work (which node comes next, its tensors) is small (P,),
  (D, P) or (S, P) gathers and scatters;
- Kahn picks the ready node with the largest integer key: a max over N, then a
  per-lane lookup of the node holding that key (keys are a permutation);
- the segment-cost column c(., r) is updated by masked range additions, one fused
  pass over (N, P) per step;
- the DP inner loop min_l max(Q[j-1][l], c(l, r)) only looks at l < W(r), where the
  window W grows block by block (static shapes: the scan over r is split into
  `WINDOW_BLOCKS` scans of increasing window), which skips about half of the
  l > r work a full-width scan would do.

Memory per candidate is O(N K): the DP table (K, N+1), the column, the Kahn state
and the tensor bookkeeping (T+1), never (N, N).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxplace.decoder._layout import DeviceGraph, Spec
from jaxplace.decoder.kahn import EMITTED, NOT_READY

#: The DP scan over r is split into this many scans with growing static windows.
WINDOW_BLOCKS = 4


def bytes_per_candidate(spec: Spec, itemsize: int) -> int:
    """Estimated device bytes one candidate needs in the lanes decoder."""
    N, K, T, D, S = spec.N, spec.K, spec.T, spec.D, spec.S
    floats = K * (N + 1) * 2 + 6 * N + D * N  # Q, its per-step candidate slab, columns
    ints = 6 * N + 3 * (T + 1) + N * D + 2 * S
    return floats * itemsize + ints * 4


def kahn_lanes(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """Topological orders of a population.

    Args:
        keys: (N, P) int32 Kahn keys (a permutation of 0..N-1 per lane, higher first).

    Returns:
        (N, P) int32: order[r, p] is the r-th node emitted for candidate p.
    """
    N, P = keys.shape
    lane = jnp.arange(P, dtype=jnp.int32)
    iota = jnp.arange(N, dtype=jnp.int32)
    node_of_key = jnp.zeros((N, P), jnp.int32).at[keys, lane[None, :]].set(
        jnp.broadcast_to(iota[:, None], (N, P)))
    indeg0 = jnp.broadcast_to(g.indeg[:, None], (N, P))

    def step(indeg, _):
        kmax = jnp.max(jnp.where(indeg == 0, keys, NOT_READY), axis=0)  # (P,)
        u = node_of_key[kmax, lane]  # (P,)
        succ = g.succ[u]  # (P, S), padded with N (dropped)
        indeg = indeg.at[succ, lane[:, None]].add(-1, mode="drop")
        indeg = indeg.at[u, lane].set(EMITTED)
        return indeg, u

    _, order = lax.scan(step, indeg0, None, length=N)
    return order


def _windows(N: int) -> list[tuple[int, int]]:
    """(start, end) step ranges; steps r in [start, end) look at l < end."""
    nb = max(1, min(WINDOW_BLOCKS, N // 8))
    width = -(-N // nb)
    return [(lo, min(lo + width, N)) for lo in range(0, N, width)]


def slice_lanes(spec: Spec, g: DeviceGraph, order: jnp.ndarray) -> jnp.ndarray:
    """(P,) optimal bottleneck costs of the (N, P) orders (see `slicing.slice_one`)."""
    N, P = order.shape
    K, D = spec.K, spec.D
    dt = g.work.dtype
    inf = jnp.asarray(jnp.inf, dt)
    lane = jnp.arange(P, dtype=jnp.int32)
    iota = jnp.arange(N, dtype=jnp.int32)
    pos = jnp.zeros((N, P), jnp.int32).at[order, lane[None, :]].set(
        jnp.broadcast_to(iota[:, None], (N, P)))
    t_pos = pos[g.t_prod]  # (T+1, P)
    t_last = jax.ops.segment_max(
        jnp.broadcast_to(pos[:, None, :], (N, D, P)).reshape(N * D, P),
        g.in_t.reshape(-1), num_segments=spec.T + 1)
    t_last = jnp.maximum(t_last, -1)  # (T+1, P)
    # per step, per lane: the node, its tensors and their sizes
    ts_all = jnp.transpose(g.in_t[order], (0, 2, 1))  # (N, D, P)
    wv_all = g.work[order] + g.out_size[order]  # (N, P)
    pv_all = g.param[order]  # (N, P)

    Q = jnp.full((K, N + 1, P), inf, dt).at[:, 0, :].set(0)
    c = jnp.zeros((N, P), dt)
    pc = jnp.zeros((N, P), dt)
    last_seen = t_pos

    for lo, hi in _windows(N):
        ell = iota[:hi, None]  # (hi, 1) segment start l

        def step(carry, xs, hi=hi, ell=ell):
            c, pc, last_seen, Q = carry
            r, ts, wv, pv = xs  # (), (D, P), (P,), (P,)
            s = g.t_size[ts]  # (D, P)
            a = jnp.take_along_axis(last_seen, ts, axis=0)  # (D, P)
            tp = jnp.take_along_axis(t_pos, ts, axis=0)
            tl = jnp.take_along_axis(t_last, ts, axis=0)
            sub = jnp.where(tl == r, s, 0)
            # materialize the (D, P) event data: otherwise XLA may fuse these gathers
            # into the (hi, P) loop below and redo them for every l
            s, a, tp, sub = lax.optimization_barrier((s, a, tp, sub))
            live = ell <= r
            add = wv[None, :]
            dec = jnp.zeros((), dt)
            for d in range(D):
                add = add + jnp.where(ell > a[d][None, :], s[d][None, :], 0)
                dec = dec + jnp.where(ell <= tp[d][None, :], sub[d][None, :], 0)
            cw = c[:hi] + jnp.where(live, add, 0) - dec
            c = c.at[:hi].set(cw)
            last_seen = last_seen.at[ts, lane[None, :]].set(r)
            seg = cw
            if spec.use_param:
                pw = pc[:hi] + jnp.where(live, pv[None, :], 0)
                pc = pc.at[:hi].set(pw)
                seg = seg + jnp.maximum(pw - g.memory, 0) * g.inv_bw
                seg = jnp.where(pw > g.capacity, inf, seg)
            seg = jnp.where(live, seg, inf)  # (hi, P)
            if K > 1:
                m = jnp.min(jnp.maximum(Q[:K - 1, :hi], seg[None]), axis=1)  # (K-1, P)
                col = lax.cummin(jnp.concatenate([seg[:1], m]), axis=0)  # (K, P)
            else:
                col = seg[:1]
            zero = jnp.zeros((), jnp.int32)
            Q = lax.dynamic_update_slice(Q, col[:, None, :], (zero, r + 1, zero))
            return (c, pc, last_seen, Q), None

        xs = (jnp.arange(lo, hi, dtype=jnp.int32), ts_all[lo:hi], wv_all[lo:hi],
              pv_all[lo:hi])
        (c, pc, last_seen, Q), _ = lax.scan(step, (c, pc, last_seen, Q), xs)

    row = jnp.minimum(g.k, K) - 1
    return Q[row, N]


def score_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, N) int32 Kahn keys."""
    return slice_lanes(spec, g, kahn_lanes(spec, g, keys.T))
