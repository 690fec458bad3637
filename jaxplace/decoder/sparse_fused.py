"""Sparse fused decoder: the fused kernel's Kahn + SliceGraph doing only the work it needs.

`impl="sparse"` of `evaluate` / `Evaluator` / `score`. The same semantics and one loop
over positions r as `fused.py` (read that first), with the work per position cut down:

- The DP and the segment-cost column visit only the starts l <= r. Both are held as
  NB static column blocks of CB columns; a block past r is skipped by a `lax.cond`
  (r is the same for every lane of a program instance, so the branch is uniform),
  and the new DP column is written into its own block alone, not the whole (K, N)
  table. Per position that is about 2 K (r + CB) element operations for the DP
  instead of 4 K N.
- Kahn's ready set is a bitmask over ranks: the candidate's units sorted once, before
  the kernel, by (priority descending, index ascending) (XLA's sort), so the next
  unit is the lowest set bit (a reduction over N / 32 words and a count of leading
  zeros) instead of a max and an argmin over N.
- The integer state (in-degrees, positions, each tensor's last/first member and
  member count) is either registers picked one-hot as in `fused.py`
  (`indexed=False`), or a per-lane scratch area in device memory, read and written
  at computed addresses (`indexed=True`): O(1) per access instead of O(N) or O(T).
  Pallas's Triton lowering has no indexed scratch memory, so the area is a kernel
  output used as scratch; each lane touches only its own addresses, which keeps the
  accesses coherent when a lane is owned by one thread (`INDEXED_WARPS` warps, at
  least as many lanes as threads of one warp, is the safe layout).
- Optional bound per candidate (`tau`): every position r gives a lower bound on the
  candidate's cost, min over l <= r of max(Q[kk-1][l], w(l, r)), where Q[kk-1] is the
  DP row with the most blocks still allowed before the block holding r, and w(l, r)
  the part of the cost of the block [l, r] that can only grow when the block grows
  (work, parameter overflow, capacity, unsupported units; transfers are left out).
  A lane whose bound exceeds tau (by a relative margin, `TAU_MARGIN`, for float32
  rounding) at some r is above tau and returns +inf; an instance stops once all its
  lanes are. A lane that is not flagged runs to the end and keeps its exact cost, so
  every candidate under tau gets its exact cost and no returned cost is below the
  true one; the flag depends only on the lane, never on its neighbours.

`work_per_candidate` counts the element operations of a candidate for the fused and
the sparse kernel (what `jaxplace bench decode --work` prints).

Not handled: CPU blocks, as `fused.py`. Off a GPU the kernel runs in Pallas's
interpret mode (slow: tests and small populations only).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl

from jaxplace.decoder.fused import NONE_SEEN, check, is_fused_spec, member_counts, on_gpu
from jaxplace.decoder.layout import DeviceGraph, Spec, pow2
from jaxplace.decoder._lanes import sortable
from jaxplace.errors import JaxplaceError

#: Columns of one static DP block (the unit of the l <= r skip): at least this many,
#: and at most MAX_BLOCKS blocks (each block is a copy of the step's code in the kernel).
COLUMN_BLOCK = 32
MAX_BLOCKS = 16
#: Candidates per program instance on a GPU: registers (untuned) and indexed state
#: (one lane per thread of one warp).
GPU_BLOCK = 1
INDEXED_GPU_BLOCK = 32
#: Candidates per program instance in interpret mode.
INTERPRET_BLOCK = 16
NUM_WARPS = 4
INDEXED_WARPS = 1
#: Relative margin of the tau test: the bound and the cost are float32 sums taken in
#: different orders, so a bound within this of tau does not flag its lane.
TAU_MARGIN = 1e-4
#: Bits of one ready-set word.
WORD = 32


def _layout(spec: Spec, column_block: int | None = None) -> dict:
    """Static sizes: rank words W, rank width NR, column blocks NB of CB columns and
    the scratch offsets of the indexed state (in lanes)."""
    N, T1 = spec.N, spec.T + 1
    W = max(N // WORD, 1) if N % WORD == 0 else N // WORD + 1
    if column_block is None:
        column_block = max(COLUMN_BLOCK, N // MAX_BLOCKS)
    CB = min(pow2(column_block), N)
    NB = -(-N // CB)
    off = {"indeg": 0, "pos": 2 * N, "last": 3 * N, "first": 3 * N + T1,
           "cnt": 3 * N + 2 * T1}
    return dict(W=W, NR=W * WORD, CB=CB, NB=NB, off=off, SW=pow2(3 * N + 3 * T1))


class _Registers:
    """Integer state in registers, (M, B) per field, read and written one-hot."""

    def __init__(self, sizes: dict, B: int):
        self.iota = {m: lax.broadcasted_iota(jnp.int32, (m, B), 0)
                     for m in set(sizes.values())}
        self.sizes = sizes

    def init(self, values: dict) -> dict:
        """values: name -> (M, B) array."""
        return dict(values)

    def get(self, st, name, idx):
        a = st[name]
        return jnp.sum(jnp.where(self.iota[a.shape[0]] == idx[None, :], a, 0), axis=0)

    def put(self, st, name, idx, val, mask=None):
        a = st[name]
        hit = self.iota[a.shape[0]] == idx[None, :]
        if mask is not None:
            hit = hit & mask[None, :]
        return {**st, name: jnp.where(hit, val[None, :] if val.ndim else val, a)}


class _Memory:
    """Integer state in a per-lane scratch area: addresses (offset + index) * B + lane."""

    def __init__(self, ref, off: dict, B: int):
        self.ref, self.off, self.B = ref, off, B
        self.lane = lax.broadcasted_iota(jnp.int32, (B,), 0)

    def _addr(self, name, idx):
        return (self.off[name] + idx) * self.B + self.lane

    def init(self, values: dict) -> dict:
        """values: name -> (size, fn(i) giving the scalar at index i)."""
        for name, (size, fn) in values.items():
            def body(i, _, name=name, fn=fn):
                self.ref[(self.off[name] + i) * self.B + self.lane] = jnp.broadcast_to(
                    fn(i), (self.B,))
                return 0
            lax.fori_loop(0, size, body, 0)
        return {}

    def get(self, st, name, idx):
        return self.ref[self._addr(name, idx)]

    def put(self, st, name, idx, val, mask=None):
        addr = self._addr(name, idx)
        if mask is not None:
            val = jnp.where(mask, val, self.ref[addr])
        self.ref[addr] = jnp.broadcast_to(val, addr.shape)
        return st


def _kernel(spec: Spec, B: int, indexed: bool, use_tau: bool, column_block: int,
            by_rank_ref, rank_ref, ready_ref, ints_ref, flts_ref, indeg_ref, succ_ref,
            in_t_ref, plus_ref,
            work_ref, param_ref, bad_ref, t_size_ref, t_prod_ref, t_init_ref,
            t_members_ref, n_succ_ref, n_slots_ref, out_ref, scratch_ref):
    N, T1, K = spec.N, spec.T + 1, spec.K
    lay = _layout(spec, column_block)
    W, CB, NB = lay["W"], lay["CB"], lay["NB"]
    dt = plus_ref.dtype
    inf = jnp.asarray(jnp.inf, dt)
    n, k = ints_ref[0], ints_ref[1]
    memory, capacity, inv_bw, tau = flts_ref[0], flts_ref[1], flts_ref[2], flts_ref[3]
    lane = lax.broadcasted_iota(jnp.int32, (B,), 0)
    iota_w = lax.broadcasted_iota(jnp.int32, (W, B), 0)
    colb = lax.broadcasted_iota(jnp.int32, (CB, B), 0)  # column within a block
    colk = lax.broadcasted_iota(jnp.int32, (K, CB, B), 1)
    row = lax.broadcasted_iota(jnp.int32, (K, B), 0)
    ii = lax.broadcasted_iota(jnp.int32, (K, K, B), 0)
    jj = lax.broadcasted_iota(jnp.int32, (K, K, B), 1)
    kk = jnp.minimum(k, K)
    state = (_Memory(scratch_ref, lay["off"], B) if indexed else
             _Registers({"indeg": N, "pos": N, "last": T1, "first": T1, "cnt": T1}, B))

    def lanes_of(a):  # (B,) of a scalar from an input row
        return jnp.broadcast_to(a, (B,))

    def step(r, carry):
        words, st, c, pc, cw, lb, R, best, ans, above = carry
        # Kahn: the lowest set bit of the ready set is the next unit's rank
        wi = jnp.min(jnp.where(words != 0, iota_w, W), axis=0)  # (B,)
        hit_w = iota_w == wi[None, :]
        word = jnp.sum(jnp.where(hit_w, words, 0), axis=0)
        low = word & (-word)
        rank = wi * WORD + (WORD - 1 - lax.clz(low))
        words = words ^ jnp.where(hit_w, low[None, :], 0).astype(words.dtype)
        u = by_rank_ref[rank * B + lane]  # (B,)

        def drop(s, carry):
            words, st = carry
            v = succ_ref[u, s]  # (B,), padded with N
            valid = v < N
            vv = jnp.where(valid, v, 0)
            left = state.get(st, "indeg", vv) - 1
            st = state.put(st, "indeg", vv, left, valid)
            rv = rank_ref[vv * B + lane]
            bit = jnp.where(valid & (left == 0), jnp.left_shift(1, rv & (WORD - 1)), 0)
            # int32 whatever the operands: under x64 an index read promotes `bit`, and
            # the loop's carry must keep its type
            words = words | jnp.where(iota_w == (rv >> 5)[None, :], bit[None, :],
                                      0).astype(words.dtype)
            return words, st

        words, st = lax.fori_loop(0, jnp.max(n_succ_ref[u]), drop, (words, st))
        st = state.put(st, "pos", u, lanes_of(r))

        # the unit's work and member sizes enter every block [l, r]; its monotone part
        # (work) enters the bound's column
        plus, wk = plus_ref[u], work_ref[u]
        live_to = r  # blocks holding some l <= r

        def per_block(fn, arrays, hi):
            """fn(b, *block arrays) on the blocks with a column <= hi (scalar)."""
            out = []
            for b in range(NB):
                args = tuple(a[b] for a in arrays)
                out.append(lax.cond(b * CB <= hi, partial(fn, b), lambda *a: a, *args))
            return tuple(tuple(o[i] for o in out) for i in range(len(arrays)))

        def enter(b, cb, cwb):
            live = colb + b * CB <= r
            return (cb + jnp.where(live, plus[None, :], 0),
                    cwb + jnp.where(live, wk[None, :], 0))

        c, cw = per_block(enter, (c, cw), live_to)

        def member(d, carry):
            c, st = carry
            t = in_t_ref[u, d]  # (B,), padded with the dummy tensor T
            valid = t < spec.T
            size = t_size_ref[t]
            init = t_init_ref[t] > 0
            prod = state.get(st, "pos", t_prod_ref[t])
            seen_last = state.get(st, "last", t)
            prev = jnp.where(seen_last >= 0, seen_last, jnp.where(init, prod, -1))
            tfirst = jnp.minimum(jnp.minimum(state.get(st, "first", t), r),
                                 jnp.where(init, prod, NONE_SEEN))
            cnt = state.get(st, "cnt", t)
            done = valid & (cnt + 1 == t_members_ref[t])
            a = jnp.where(valid & (prev >= 0), prev, -1)
            e = jnp.where(done, tfirst, -1)

            def exits(b, cb):
                l = colb + b * CB
                return (cb - jnp.where(l <= a[None, :], size[None, :], 0)
                        - jnp.where(l <= e[None, :], size[None, :], 0),)

            (c,) = per_block(exits, (c,), jnp.max(jnp.maximum(a, e)))
            st = state.put(st, "last", t, lanes_of(r), valid)
            st = state.put(st, "first", t, jnp.minimum(state.get(st, "first", t), r), valid)
            st = state.put(st, "cnt", t, cnt + 1, valid)
            return c, st

        c, st = lax.fori_loop(0, jnp.max(n_slots_ref[u]), member, (c, st))
        if spec.use_param:
            pr = param_ref[u]

            def grow(b, pcb):
                return (pcb + jnp.where(colb + b * CB <= r, pr[None, :], 0),)

            (pc,) = per_block(grow, (pc,), live_to)
        if spec.use_bad:
            lb = jnp.where(bad_ref[u] > 0, r, lb)

        def seg_of(b, cb, pcb):
            l = colb + b * CB
            seg = cb
            if spec.use_param:
                seg = seg + jnp.maximum(pcb - memory, 0) * inv_bw
                seg = jnp.where(pcb > capacity, inf, seg)
            if spec.use_bad:
                seg = jnp.where(l <= lb[None, :], inf, seg)
            return jnp.where(l <= r, seg, inf)

        # DP over the live blocks: m_i = min_l max(Q[i][l], c(l))
        def dp(b, Rb, cb, pcb, cwb, bestb):
            seg = seg_of(b, cb, pcb)
            m = jnp.min(jnp.maximum(Rb, seg[None]), axis=1)  # (K, B)
            if use_tau:
                low = jnp.min(jnp.maximum(bestb, seg_of(b, cwb, pcb)), axis=0)
            else:
                low = jnp.full((B,), inf, dt)
            return m, low

        ms, lows = [], []
        for b in range(NB):
            m, low_b = lax.cond(
                b * CB <= r, partial(dp, b),
                lambda *a: (jnp.full((K, B), inf, dt), jnp.full((B,), inf, dt)),
                R[b], c[b], pc[b], cw[b], best[b])
            ms.append(m)
            lows.append(low_b)
        m = ms[0]
        for x in ms[1:]:
            m = jnp.minimum(m, x)
        new = jnp.min(jnp.where(ii < jj, m[:, None, :], inf), axis=0)  # rows j at r+1
        ans = jnp.min(jnp.where(row < kk, m, inf), axis=0)
        # the new column r+1 goes into its block alone
        nb = (r + 1) // CB
        newb = jnp.sum(jnp.where(row == kk - 1, new, 0), axis=0)  # Q[kk-1][r+1]

        def write(b, Rb, bestb):
            at = r + 1 - b * CB
            return (jnp.where(colk == at, new[:, None, :], Rb),
                    jnp.where(colb == at, newb[None, :], bestb))

        R2, best2 = [], []
        for b in range(NB):
            Rb, bb = lax.cond(b == nb, partial(write, b), lambda *a: a, R[b], best[b])
            R2.append(Rb)
            best2.append(bb)
        if use_tau:
            low = lows[0]
            for x in lows[1:]:
                low = jnp.minimum(low, x)
            above = above | (low > tau * (1 + TAU_MARGIN))
        return (words, st, c, pc, cw, lb, tuple(R2), tuple(best2), ans, above)

    zeros = tuple(jnp.zeros((CB, B), dt) for _ in range(NB))
    R0 = tuple(jnp.where(colk + b * CB == 0, jnp.asarray(0, dt), inf) for b in range(NB))
    best0 = tuple(jnp.where(colb + b * CB == 0, jnp.asarray(0, dt), inf) for b in range(NB))
    if indexed:
        st0 = state.init({"indeg": (N, lambda i: indeg_ref[i]),
                          "pos": (N, lambda i: jnp.int32(0)),
                          "last": (T1, lambda i: jnp.int32(-1)),
                          "first": (T1, lambda i: jnp.int32(NONE_SEEN)),
                          "cnt": (T1, lambda i: jnp.int32(0))})
    else:
        st0 = state.init({"indeg": jnp.broadcast_to(indeg_ref[...][:, None], (N, B)),
                          "pos": jnp.zeros((N, B), jnp.int32),
                          "last": jnp.full((T1, B), -1, jnp.int32),
                          "first": jnp.full((T1, B), NONE_SEEN, jnp.int32),
                          "cnt": jnp.zeros((T1, B), jnp.int32)})
        scratch_ref[...] = jnp.zeros(scratch_ref.shape, jnp.int32)
    words0 = jnp.zeros((W, B), jnp.int32)  # (Triton stacks only two arrays)
    for w in range(W):
        words0 = jnp.where(iota_w == w, ready_ref[w * B + lane][None, :], words0)
    carry = (words0, st0, zeros, zeros, zeros, jnp.full((B,), -1, jnp.int32), R0, best0,
             jnp.full((B,), inf, dt), jnp.zeros((B,), bool))
    if use_tau:
        def cond(rc):
            r, carry = rc
            return (r < n) & (jnp.min(carry[-1].astype(jnp.int32)) == 0)

        def body(rc):
            r, carry = rc
            return r + 1, step(r, carry)

        _, carry = lax.while_loop(cond, body, (jnp.int32(0), carry))
        out = jnp.where(carry[-1], inf, carry[-2])
    else:
        carry = lax.fori_loop(0, n, step, carry)
        out = carry[-2]
    out_ref[...] = out[None, :]


def ranks(keys: jnp.ndarray, N: int, NR: int) -> tuple[jnp.ndarray, jnp.ndarray]:
    """(P, NR) unit at each rank and (P, N) rank of each unit, for (N, P) sortable
    keys: priority descending, ties to the smaller index (a stable sort of ~key)."""
    by_rank = jnp.argsort(~keys.T, axis=1, stable=True).astype(jnp.int32)  # (P, N)
    P = by_rank.shape[0]
    rank_of = jnp.zeros_like(by_rank).at[jnp.arange(P)[:, None], by_rank].set(
        jnp.broadcast_to(jnp.arange(N, dtype=jnp.int32), (P, N)))
    if NR > N:
        by_rank = jnp.concatenate([by_rank, jnp.zeros((P, NR - N), jnp.int32)], axis=1)
    return by_rank, rank_of


def ready_words(indeg: jnp.ndarray, by_rank: jnp.ndarray, N: int) -> jnp.ndarray:
    """(P, W) int32 bitmask over ranks of the units with no predecessor."""
    P, NR = by_rank.shape
    ready = (indeg[jnp.minimum(by_rank, N - 1)] == 0) & (jnp.arange(NR) < N)[None, :]
    bits = ready.reshape(P, NR // WORD, WORD).astype(jnp.uint32) << jnp.arange(
        WORD, dtype=jnp.uint32)
    return lax.bitcast_convert_type(jnp.sum(bits, axis=-1, dtype=jnp.uint32), jnp.int32)


def _lane_major(a: jnp.ndarray, B: int) -> jnp.ndarray:
    """(P, M) -> flat (P / B * M * B,): per block of B lanes, index * B + lane."""
    P, M = a.shape
    return a.reshape(P // B, B, M).transpose(0, 2, 1).reshape(-1)


def score_prio(spec: Spec, g: DeviceGraph, prio: jnp.ndarray, *, tau=None,
               indexed: bool = False, block: int | None = None,
               column_block: int | None = None,
               interpret: bool | None = None) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, N) unit priorities (float or integer keys).

    `tau` (a scalar, traced or not; None: no bound): lanes provably above it return
    +inf, the others their exact cost. `indexed`: integer state in scratch memory.
    `column_block`: columns of one static DP block (None: `_layout`'s choice).
    `spec` must be a `fused_spec` (powers of two) on a GPU.
    """
    check(spec)
    if interpret is None:
        interpret = not on_gpu()
    if block is None:
        block = INTERPRET_BLOCK if interpret else (INDEXED_GPU_BLOCK if indexed else GPU_BLOCK)
    if not interpret and not is_fused_spec(spec):
        raise JaxplaceError("the sparse GPU kernel needs a power-of-two Spec "
                            "(fused_spec)", field="spec")
    lay = _layout(spec, column_block)
    N, W, NR = spec.N, lay["W"], lay["NR"]
    P = prio.shape[0]
    B = pow2(min(block, pow2(P)))
    Pp = -(-P // B) * B
    keys = sortable(prio.T, g.n)  # (N, P)
    if Pp != P:
        keys = jnp.concatenate([keys, jnp.broadcast_to(keys[:, -1:], (N, Pp - P))], axis=1)
    by_rank, rank_of = ranks(keys, N, NR)
    words = ready_words(g.indeg, by_rank, N)
    dt = g.work.dtype
    ints = jnp.stack([g.n, g.k]).astype(jnp.int32)
    t = jnp.asarray(jnp.inf if tau is None else tau, dt)
    flts = jnp.stack([g.memory, g.capacity, g.inv_bw, t]).astype(dt)
    graph_in = (ints, flts, g.indeg, g.succ, g.in_t, g.plus, g.work, g.param, g.bad,
                g.t_size, g.t_prod, g.t_init, member_counts(spec, g),
                jnp.sum(g.succ < spec.N, axis=1, dtype=jnp.int32),
                jnp.sum(g.in_t < spec.T, axis=1, dtype=jnp.int32))

    def whole(a):
        return pl.BlockSpec(a.shape, lambda i, nd=a.ndim: (0,) * nd)

    def lanes_spec(m):
        return pl.BlockSpec((m * B,), lambda i: (i,))

    SW = lay["SW"] if indexed else 1
    params = {}
    if not interpret:
        from jax.experimental.pallas import triton as plt

        params["compiler_params"] = plt.CompilerParams(
            num_warps=INDEXED_WARPS if indexed else NUM_WARPS)
    out, _ = pl.pallas_call(
        partial(_kernel, spec, B, indexed, tau is not None, column_block),
        grid=(Pp // B,),
        in_specs=[lanes_spec(NR), lanes_spec(N), lanes_spec(W)]
        + [whole(a) for a in graph_in],
        out_specs=[pl.BlockSpec((1, B), lambda i: (i, 0)), lanes_spec(SW)],
        out_shape=[jax.ShapeDtypeStruct((Pp // B, B), dt),
                   jax.ShapeDtypeStruct((Pp * SW,), jnp.int32)],
        interpret=interpret, name="jaxplace_sparse_decoder", **params,
    )(_lane_major(by_rank, B), _lane_major(rank_of, B), _lane_major(words, B), *graph_in)
    return out.reshape(-1)[:P]


def work_per_candidate(spec: Spec, n: int, succ: float, slots: float,
                       column_block: int | None = None) -> dict:
    """Element operations of one candidate, fused vs sparse kernels, counted from their
    loop structure: `n` positions, `succ` successors and `slots` member tensors per
    unit on average; a (M,) register op counts M, a reduction M, an indexed access 1.

    Per position r (fused): Kahn 5N (masked max, argmin) + 3N per successor + 4N
    (emitted, position); per member tensor 2N + 10T + 6N (one-hot picks, updates,
    two range exits); 4K N for the DP (max, min over the whole table, full-table
    column write) and K^2 for the new column. Sparse: live columns L = r rounded up
    to the block; Kahn 6W + per successor (5N or 3 indexed) + W; per member
    (2N + 10T, or 10 indexed) + 4 L; the DP 2 K L + K^2 + 2 K CB (its block alone).
    """
    N, T1, K = spec.N, spec.T + 1, spec.K
    lay = _layout(spec, column_block)
    W, CB = lay["W"], lay["CB"]
    r = np.arange(n)
    L = (r // CB + 1) * CB  # live columns, by block
    fused = n * (5 * N + 3 * N * succ + 4 * N + 3 * N + slots * (8 * N + 10 * T1)
                 + 4 * K * N + K * K + 2 * N)
    base = 6 * W + 2 * L + K * K + 2 * K * CB + 2 * K * L + 2 * CB
    reg = float(np.sum(base + succ * (5 * N + W) + 2 * N + slots * (2 * N + 10 * T1 + 4 * L)))
    idx = float(np.sum(base + succ * (3 + W) + 1 + slots * (10 + 4 * L)))
    return dict(fused=float(fused), sparse=reg, sparse_indexed=idx)


__all__ = ["COLUMN_BLOCK", "GPU_BLOCK", "INDEXED_GPU_BLOCK", "INTERPRET_BLOCK",
           "TAU_MARGIN", "ranks", "ready_words", "score_prio", "work_per_candidate"]
