"""SliceGraph in JAX for one candidate: optimal split of an order into <= k blocks.

Q[j][t] = min(Q[j-1][t], min_{l<t} max(Q[j-1][l], c(l+1, t))) with the segment-cost
column c(., r) streamed over r by range additions (segment costs without O(n^2)
memory; Archer et al., ICML 2024). Memory is O(N K)
per candidate: the column, the DP table and the tensor bookkeeping, never (N, N).

This is the simple per-candidate version (vmapped by the caller); `_lanes.py` holds the
population-minor fast version, tested against this one and the NumPy reference.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxplace.decoder.kahn import positions
from jaxplace.decoder.layout import DeviceGraph, Spec

#: Choice entry meaning "use fewer blocks" (Q[j][t] = Q[j-1][t]).
FEWER = -1


def tensor_last_use(spec: Spec, g: DeviceGraph, pos: jnp.ndarray) -> jnp.ndarray:
    """(T+1,) int32 position of the last consumer of each tensor (-1: none)."""
    last = jax.ops.segment_max(jnp.broadcast_to(pos[:, None], g.in_t.shape).reshape(-1),
                               g.in_t.reshape(-1), num_segments=spec.T + 1)
    return jnp.maximum(last, -1)


def slice_one(spec: Spec, g: DeviceGraph, order: jnp.ndarray, with_choice: bool = False):
    """Bottleneck cost (and, with `with_choice`, the DP choice table) of one order.

    Args:
        order: (N,) int32 topological order (padded nodes last).

    Returns:
        cost: () float, the optimal bottleneck over <= k blocks (+inf if infeasible).
        choice: (K, N+1) int32 when `with_choice`: choice[j-1, t] is the start of the
            last block of the best split of the first t nodes into <= j blocks, or
            FEWER when fewer blocks are as good (ties: fewer blocks, earliest cut).
    """
    N, K = spec.N, spec.K
    dt = g.work.dtype
    inf = jnp.asarray(jnp.inf, dt)
    pos = positions(order)
    t_pos = pos[g.t_prod]  # (T+1,)
    t_last = tensor_last_use(spec, g, pos)  # (T+1,)
    ell = jnp.arange(N, dtype=jnp.int32)  # segment start l

    Q0 = jnp.full((K, N + 1), inf, dt).at[:, 0].set(0)
    ch0 = jnp.full((K, N + 1), FEWER, jnp.int32)
    carry0 = (jnp.zeros(N, dt), jnp.zeros(N, dt), jnp.full(spec.T + 1, -1, jnp.int32)
              .at[jnp.arange(spec.T + 1)].set(t_pos), Q0, ch0)

    def step(carry, r):
        c, pc, last_seen, Q, ch = carry
        v = order[r]
        live = ell <= r
        c = c + jnp.where(live, g.work[v] + g.out_size[v], 0)
        ts = g.in_t[v]  # (D,)
        s = g.t_size[ts]  # (D,)
        a = last_seen[ts] + 1  # segments starting after producer and earlier consumers
        enter = (ell[:, None] >= a[None, :]) & live[:, None]
        c = c + jnp.sum(jnp.where(enter, s[None, :], 0), axis=1)
        done = (ell[:, None] <= t_pos[ts][None, :]) & (t_last[ts] == r)[None, :]
        c = c - jnp.sum(jnp.where(done, s[None, :], 0), axis=1)
        last_seen = last_seen.at[ts].set(r)
        seg = c
        if spec.use_param:
            pc = pc + jnp.where(live, g.param[v], 0)
            seg = seg + jnp.maximum(pc - g.memory, 0) * g.inv_bw
            seg = jnp.where(pc > g.capacity, inf, seg)
        seg = jnp.where(live, seg, inf)
        # m[j-2] = min_l max(Q[j-1][l], c(l, r)), j = 2..K
        cand = jnp.maximum(Q[:-1, :N], seg[None, :])  # (K-1, N)
        m = jnp.min(cand, axis=1)
        col = lax.cummin(jnp.concatenate([seg[:1], m]))  # Q[1..K][r+1]
        Q = Q.at[:, r + 1].set(col)
        if with_choice:
            lbest = jnp.argmin(cand, axis=1).astype(jnp.int32)
            take = m < col[:-1]  # strictly better than Q[j-1][r+1]
            chcol = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.where(take, lbest, FEWER)])
            ch = ch.at[:, r + 1].set(chcol)
        return (c, pc, last_seen, Q, ch), None

    (_, _, _, Q, ch), _ = lax.scan(step, carry0, jnp.arange(N, dtype=jnp.int32))
    cost = Q[jnp.minimum(g.k, K) - 1, N]
    return (cost, ch) if with_choice else cost
