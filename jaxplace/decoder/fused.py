"""Fused decoder: Kahn with priorities and the SliceGraph DP in one Pallas kernel.

`impl="fused"` of `evaluate` / `Evaluator` / `score`. Each program instance of the
kernel takes a block of `block` candidates (lanes) from their priorities to their
bottleneck costs without leaving the kernel: no (N, P) order, event slab or DP table
goes through device memory between XLA ops, which is what bounds the "lanes" path on
a GPU.

One loop over positions r does everything online, so the per-candidate state is a
few (N,) and (T,) vectors and the (K, N) DP table (registers and shared memory on a
GPU):

- Kahn step: the ready unit of highest priority, ties to the smaller index (the
  integer priorities of `lanes.sortable`); the successors' in-degrees drop.
- Transfer events of the emitted unit's member tensors (see _lanes.py for the suffix
  form): the previous member's position comes from a per-tensor `last` vector; the
  tensor is complete when its count of emitted members reaches its static member
  count (no look-ahead at later positions is needed); its first member is the
  producer (plain graphs, `t_init`) or the smallest member position seen.
- The segment-cost column c(l) = cost of the block [l, r] is kept directly (range
  additions; as `slicing.slice_one`), with overflow, capacity and unsupported units.
- The DP over a table R of rows Q[0..K-1] (Q[0] = 0 at t = 0 only):
  m_i = min_l max(R_i[l], c(l)), and the new column is Q[j][r+1] = min_{i<j} m_i, so
  one masked (K, K) reduction gives every row, Q[0] included (+inf), and the answer
  min_{i < min(k, K)} m_i at r = n-1.

Every gather from a register vector is a one-hot compare and reduction, every row
of the graph is a load from a kernel input (`ref[index_vector]`), and all kernel
shapes are powers of two (`fused_spec` pads the Spec): what Pallas's Triton backend
lowers. Off a GPU the kernel runs in Pallas's interpret mode (slow: tests and small
populations only).

Not handled: CPU blocks (`problem.cpus`), which the lanes decoder scores.
Windows: the fused kernel always runs the full DP (no block windows).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxplace.decoder.kahn import EMITTED
from jaxplace.decoder.layout import DeviceGraph, Spec, pow2
from jaxplace.decoder._lanes import sortable
from jaxplace.errors import JaxplaceError

#: Candidates per program instance on a GPU (untuned: no GPU was lent when written).
GPU_BLOCK = 1
#: Candidates per program instance in interpret mode (amortizes the interpreter).
INTERPRET_BLOCK = 16
#: Warps per program instance on a GPU (Triton backend).
NUM_WARPS = 4
#: Position of a member not seen yet (larger than every position).
NONE_SEEN = 1 << 30


def check(spec: Spec) -> None:
    """Raise when the fused kernel cannot score the graphs of `spec`."""
    if spec.C:
        raise JaxplaceError("the fused decoder has no CPU blocks (problem.cpus > 0): "
                            "use impl='lanes'", field="impl")


def fused_spec(spec: Spec) -> Spec:
    """`spec` with every kernel dimension a power of two (units N, tensors T+1,
    slot and successor widths, DP rows K)."""
    N = pow2(spec.N)
    NX = max(pow2(spec.NX), N) if spec.NX else 0
    return Spec(N, pow2(spec.T + 1) - 1, pow2(spec.D), pow2(spec.S), pow2(spec.K),
                spec.use_param, spec.C, NX, spec.use_bad)


def is_fused_spec(spec: Spec) -> bool:
    return spec == fused_spec(spec)


def on_gpu() -> bool:
    return jax.default_backend() == "gpu"


def _kernel(spec: Spec, B: int, prio_ref, ints_ref, flts_ref, indeg_ref, succ_ref,
            in_t_ref, plus_ref, param_ref, bad_ref, t_size_ref, t_prod_ref, t_init_ref,
            t_members_ref, n_succ_ref, n_slots_ref, out_ref):
    N, T1, K = spec.N, spec.T + 1, spec.K
    dt = plus_ref.dtype
    inf = jnp.asarray(jnp.inf, dt)
    n, k = ints_ref[0], ints_ref[1]
    memory, capacity, inv_bw = flts_ref[0], flts_ref[1], flts_ref[2]
    prio = prio_ref[...]  # (N, B) sortable integers, padding lowest
    masked = jnp.asarray(jnp.iinfo(prio.dtype).min, prio.dtype)
    iota = lax.broadcasted_iota(jnp.int32, (N, B), 0)  # unit index / segment start l
    iota_t = lax.broadcasted_iota(jnp.int32, (T1, B), 0)
    row = lax.broadcasted_iota(jnp.int32, (K, B), 0)
    col = lax.broadcasted_iota(jnp.int32, (K, N, B), 1)
    ii = lax.broadcasted_iota(jnp.int32, (K, K, B), 0)
    jj = lax.broadcasted_iota(jnp.int32, (K, K, B), 1)
    kk = jnp.minimum(k, K)

    def pick(vec, iota_v, idx):
        """vec[idx[b], b] for a register (M, B) vector and (B,) indices."""
        return jnp.sum(jnp.where(iota_v == idx[None, :], vec, 0), axis=0)

    def step(r, carry):
        indeg, pos, last, first, cnt, c, pc, lb, R, ans = carry
        # Kahn: highest priority among ready units, then the smallest index
        v = jnp.where(indeg == 0, prio, masked)
        top = jnp.max(v, axis=0)
        u = jnp.min(jnp.where(v == top[None, :], iota, N), axis=0)  # (B,)
        def drop(s, indeg):
            w = succ_ref[u, s]  # (B,), padded with N (matches nothing)
            return indeg - (iota == w[None, :]).astype(jnp.int32)

        # successors and slots are stored first in their rows: loop over the block's
        # largest count for its emitted units, not the padded width
        indeg = lax.fori_loop(0, jnp.max(n_succ_ref[u]), drop, indeg)
        indeg = jnp.where(iota == u[None, :], EMITTED, indeg)
        pos = jnp.where(iota == u[None, :], r, pos)
        live = iota <= r
        # block costs c(l) of [l, r]: the unit's work and member sizes enter every
        # live block; then each member tensor's exits (suffix-form events)
        c = c + jnp.where(live, plus_ref[u][None, :], 0)

        def member(d, state):
            c, last, first, cnt = state
            t = in_t_ref[u, d]  # (B,), padded with the dummy tensor T
            valid = t < spec.T
            size = t_size_ref[t]
            init = t_init_ref[t] > 0
            prod = pick(pos, iota, t_prod_ref[t])
            seen_last = pick(last, iota_t, t)
            prev = jnp.where(seen_last >= 0, seen_last, jnp.where(init, prod, -1))
            tfirst = jnp.minimum(jnp.minimum(pick(first, iota_t, t), r),
                                 jnp.where(init, prod, NONE_SEEN))
            done = valid & (pick(cnt, iota_t, t) + 1 == t_members_ref[t])
            exits = (jnp.where(valid & (prev >= 0) & (iota <= prev[None, :]), size[None, :], 0)
                     + jnp.where(done[None, :] & (iota <= tfirst[None, :]), size[None, :], 0))
            c = c - exits
            hit = (iota_t == t[None, :]) & valid[None, :]
            last = jnp.where(hit, r, last)
            first = jnp.minimum(first, jnp.where(hit, r, NONE_SEEN))
            cnt = cnt + hit.astype(jnp.int32)
            return c, last, first, cnt

        c, last, first, cnt = lax.fori_loop(0, jnp.max(n_slots_ref[u]), member,
                                            (c, last, first, cnt))
        seg = c
        if spec.use_param:
            pc = pc + jnp.where(live, param_ref[u][None, :], 0)
            seg = seg + jnp.maximum(pc - memory, 0) * inv_bw
            seg = jnp.where(pc > capacity, inf, seg)
        if spec.use_bad:
            lb = jnp.where(bad_ref[u] > 0, r, lb)
            seg = jnp.where(iota <= lb[None, :], inf, seg)
        seg = jnp.where(live, seg, inf)
        # DP: m_i = min_l max(Q[i][l], c(l)); Q[j][r+1] = min_{i<j} m_i
        m = jnp.min(jnp.maximum(R, seg[None]), axis=1)  # (K, B)
        new = jnp.min(jnp.where(ii < jj, m[:, None, :], inf), axis=0)  # (K, B) rows j
        R = jnp.where(col == r + 1, new[:, None, :], R)
        ans = jnp.min(jnp.where(row < kk, m, inf), axis=0)
        return indeg, pos, last, first, cnt, c, pc, lb, R, ans

    zeros = jnp.zeros((N, B), dt)
    R0 = jnp.where(col == 0, jnp.asarray(0, dt), inf)  # Q[j][0] = 0
    carry = (jnp.broadcast_to(indeg_ref[...][:, None], (N, B)),
             jnp.zeros((N, B), jnp.int32),
             jnp.full((T1, B), -1, jnp.int32), jnp.full((T1, B), NONE_SEEN, jnp.int32),
             jnp.zeros((T1, B), jnp.int32), zeros, zeros,
             jnp.full((B,), -1, jnp.int32), R0, jnp.full((B,), inf, dt))
    carry = lax.fori_loop(0, n, step, carry)
    out_ref[...] = carry[-1][None, :]


def member_counts(spec: Spec, g: DeviceGraph) -> jnp.ndarray:
    """(T+1,) int32 members of each tensor with an event slot (the dummy: many)."""
    return jax.ops.segment_sum(jnp.ones(g.in_t.size, jnp.int32), g.in_t.reshape(-1),
                               num_segments=spec.T + 1)


def score_prio(spec: Spec, g: DeviceGraph, prio: jnp.ndarray, *,
               block: int | None = None, interpret: bool | None = None) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, N) unit priorities (float or integer keys).

    P is padded to a multiple of `block` with copies of the last row. `spec` must be a
    `fused_spec` (powers of two) on a GPU; interpret mode takes any Spec.
    """
    check(spec)
    if interpret is None:
        interpret = not on_gpu()
    if block is None:
        block = INTERPRET_BLOCK if interpret else GPU_BLOCK
    if not interpret and not is_fused_spec(spec):
        raise JaxplaceError("the fused GPU kernel needs a power-of-two Spec "
                            "(fused_spec)", field="spec")
    P = prio.shape[0]
    B = pow2(min(block, pow2(P)))
    Pp = -(-P // B) * B
    keys = sortable(prio.T, g.n)  # (N, P)
    if Pp != P:
        keys = jnp.concatenate([keys, jnp.broadcast_to(keys[:, -1:], (spec.N, Pp - P))],
                               axis=1)
    dt = g.work.dtype
    ints = jnp.stack([g.n, g.k]).astype(jnp.int32)
    flts = jnp.stack([g.memory, g.capacity, g.inv_bw, jnp.zeros((), dt)]).astype(dt)
    graph_in = (ints, flts, g.indeg, g.succ, g.in_t, g.plus, g.param, g.bad, g.t_size,
                g.t_prod, g.t_init, member_counts(spec, g),
                jnp.sum(g.succ < spec.N, axis=1, dtype=jnp.int32),
                jnp.sum(g.in_t < spec.T, axis=1, dtype=jnp.int32))

    def whole(a):
        return pl.BlockSpec(a.shape, lambda i, nd=a.ndim: (0,) * nd)

    params = {}
    if not interpret:
        from jax.experimental.pallas import triton as plt

        params["compiler_params"] = plt.CompilerParams(num_warps=NUM_WARPS)
    out = pl.pallas_call(
        partial(_kernel, spec, B),
        grid=(Pp // B,),
        in_specs=[pl.BlockSpec((spec.N, B), lambda i: (0, i))] + [whole(a) for a in graph_in],
        out_specs=pl.BlockSpec((1, B), lambda i: (i, 0)),
        out_shape=jax.ShapeDtypeStruct((Pp // B, B), dt),
        interpret=interpret, name="jaxplace_fused_decoder", **params,
    )(keys, *graph_in)
    return out.reshape(-1)[:P]


__all__ = ["GPU_BLOCK", "INTERPRET_BLOCK", "check", "fused_spec", "is_fused_spec",
           "on_gpu", "score_prio"]
