"""Population-minor ("lanes") Kahn + SliceGraph: the fast path behind `evaluate`.

Same numbers as the NumPy reference (`objectives.throughput.reference.slice_order`), and, on plain
graphs, as the simple vmapped version (`kahn.kahn_one` + `slicing.slice_one`, kept as
a test oracle). Laid out for wide SIMD: every per-position array is (N, P), the
population being the minor axis, so each step is a few elementwise passes over P
lanes.

Positions are placement units (`jaxplace.units`; nodes for plain graphs).

1. Kahn over the unit DAG (`kahn_lanes`): the ready unit of highest priority, ties
   to the smaller index: a max over N of order-preserving integers of the
   priorities (`sortable`), then the smallest index holding it (no sort).
2. Transfer events (`events_lanes`), all computed before the DP: in suffix form, the
   segment-cost column is c_r(l) = sum_{i >= l} Dl_r[i] where Dl_r collects point
   deltas of the columns <= r. Per member tensor (producer and consumer units,
   at least two distinct units) with sorted member positions q_0 < ... < q_m: each
   member q_i adds +s at q_i (static: folded into the unit's `plus` with its work),
   -s at q_{i-1} (i >= 1), and the last member also -s at q_0. This is the column
   event list of `reference._column_events` (consumers may precede the producer in
   training graphs). q_{i-1} comes from a short scan that tracks the last member
   position seen per tensor; only (D, P) gathers per step.
3. The DP scan over r: add the unit's `plus` at Dl[r] and scatter-add column r's
   (2D, P) deltas into Dl (in place); one blocked suffix sum over the window gives
   c_r (partial sums are themselves segment costs, so float32 does not lose
   precision to cancellation); then parameters (prefix differences, as the
   reference), unsupported units (last unsupported position), and the DP:
   Q[j][c][t] over j accelerators and c CPUs, min_l max(Q[.][l], cost(l, r)) as a
   fused max + reduce (on order-preserving integer keys of the costs, `ordered`),
   in `DP_SCANS` scans over r: the first steps look at a short
   static window, the rest at the L positions from max(0, r - L + 1), L = N for the
   full DP, or the window L < N (blocks of at most L units, see `slice_lanes`);
   positions past r are masked.

Memory per candidate is O(N (K C + D)): the DP table, the event slab, never (N, N).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxplace.decoder.kahn import EMITTED
from jaxplace.decoder.layout import DeviceGraph, Spec

#: DP_SCANS = 0 only: the DP scan over r split into this many scans with growing
#: static windows (then a sliding one), the older layout with more scans.
WINDOW_BLOCKS = 4
#: Block length of the blocked suffix sum (sequential within, recursive across).
SUM_BLOCK = 16
#: DP scans, i.e. copies of the DP body in a compiled program: DP_SCANS - 1 growing
#: windows, then one clamped at 0 (0: WINDOW_BLOCKS growing scans and a sliding one).
#: Every layout gives the same costs to the bit (the extra positions are masked,
#: their zero transfer rows add exactly). On a quiet 2-core CPU (jp.search, cold,
#: measured A/B against 0): 2 compiles a search program in ~18%
#: less time at +2% per step; 1 in ~22% less at +19% per step (the early steps then
#: scan the whole window).
DP_SCANS = 2


def table_rows(spec: Spec) -> int:
    """Rows of the DP table: K (accelerators only) or (K+1)(C+1)."""
    return spec.K if spec.C == 0 else (spec.K + 1) * (spec.C + 1)


def bytes_per_candidate(spec: Spec, itemsize: int) -> int:
    """Estimated device bytes one candidate needs in the lanes decoder."""
    N, T, D, S = spec.N, spec.T, spec.D, spec.S
    E = 2 * D + 1
    floats = table_rows(spec) * (N + 1) + 4 * (N + 1) + N * E + 4 * N
    ints = N * E + 3 * N * D + 6 * N + 4 * (T + 1) + 2 * S
    return floats * itemsize + ints * 4


#: Masked-out value in Kahn's argmax (below every priority's sortable integer).
MASKED = -(1 << 31)


def sortable(x: jnp.ndarray, n) -> jnp.ndarray:
    """Order-preserving int32 (int64 for 64-bit x) of (N, P) priorities; -0.0 and +0.0
    map to the same value; rows >= n (padding) map to MASKED + 1, below every real row.

    Integer x (e.g. host-computed keys) is returned as is, padding set the same way.
    """
    N = x.shape[0]
    pad = jnp.arange(N)[:, None] >= n
    if jnp.issubdtype(x.dtype, jnp.floating):
        it = jnp.int64 if x.dtype == jnp.float64 else jnp.int32
        bits = lax.bitcast_convert_type(x + 0, it)  # + 0 turns -0.0 into +0.0
        mag = jnp.asarray(jnp.iinfo(it).max, it)
        x = bits ^ ((bits >> (jnp.iinfo(it).bits - 1)) & mag)
    lowest = jnp.asarray(jnp.iinfo(x.dtype).min, x.dtype)
    return jnp.where(pad, lowest + 1, x)


def kahn_lanes(spec: Spec, g: DeviceGraph, prio: jnp.ndarray) -> jnp.ndarray:
    """Topological orders of a population (over units).

    Args:
        prio: (N, P) integer priorities from `sortable` (higher first, ties to the
            smaller index, padding lowest).

    Returns:
        (N, P) int32: order[r, p] is the r-th unit emitted for candidate p.
    """
    N, P = prio.shape
    lane = jnp.arange(P, dtype=jnp.int32)
    indeg0 = jnp.broadcast_to(g.indeg[:, None], (N, P))
    masked = jnp.asarray(jnp.iinfo(prio.dtype).min, prio.dtype)

    iota = jnp.arange(N, dtype=jnp.int32)[:, None]

    def step(indeg, _):
        # max, then the smallest index holding it (ties to the smaller unit); two
        # plain reductions are faster on XLA:CPU than one variadic argmax
        v = jnp.where(indeg == 0, prio, masked)
        u = jnp.min(jnp.where(v == jnp.max(v, axis=0), iota, N), axis=0)
        succ = g.succ[u]  # (P, S), padded with N (dropped)
        indeg = indeg.at[succ, lane[:, None]].add(-1, mode="drop")
        indeg = indeg.at[u, lane].set(EMITTED)
        return indeg, u

    _, order = lax.scan(step, indeg0, None, length=N)
    return order


def _take(table: jnp.ndarray, idx: jnp.ndarray) -> jnp.ndarray:
    """table[idx[..., p], p] for a (R, P) table and (..., P) indices."""
    shape = idx.shape
    out = jnp.take_along_axis(table, idx.reshape(-1, shape[-1]), axis=0,
                              mode="promise_in_bounds")
    return out.reshape(shape)


def events_lanes(spec: Spec, g: DeviceGraph, order: jnp.ndarray) -> dict:
    """Point events of every column r: Dl[r] += pl[r], and -s[r] at ip[r] and at id[r]
    ((N, D, P) each; index N is a dump row: no event)."""
    N, P = order.shape
    T, D = spec.T, spec.D
    lane = jnp.arange(P, dtype=jnp.int32)
    iota = jnp.arange(N, dtype=jnp.int32)
    pos = jnp.zeros((N, P), jnp.int32).at[order, lane[None, :]].set(
        jnp.broadcast_to(iota[:, None], (N, P)))
    ts_all = jnp.transpose(g.in_t[order], (0, 2, 1))  # (N, D, P) slot tensors
    prod_pos = pos[g.t_prod]  # (T+1, P)
    init = jnp.where(g.t_init[:, None] > 0, prod_pos, -1)

    def step(last, xs):
        r, ts = xs
        prev = jnp.take_along_axis(last, ts, axis=0, mode="promise_in_bounds")
        last = last.at[ts, lane[None, :]].set(r, mode="promise_in_bounds")
        return last, prev

    # the final carry holds the last member position of every tensor (every member
    # but a t_init producer has a slot, and such a producer comes first)
    t_last, prev = lax.scan(step, init, (iota, ts_all))  # (T+1, P), (N, D, P)
    valid = ts_all < T
    if spec.NX:  # units: a consumer may come before the producer
        mpos = jnp.broadcast_to(pos[:, None, :], (N, D, P)).reshape(N * D, P)
        t_first = jnp.minimum(jax.ops.segment_min(mpos, g.in_t.reshape(-1),
                                                  num_segments=T + 1), prod_pos)
    else:  # plain DAG: the producer is the first member
        t_first = prod_pos
    done = valid & (_take(t_last, ts_all) == iota[:, None, None])
    idx_prev = jnp.where(valid & (prev >= 0), prev, N)
    idx_done = jnp.where(done, _take(t_first, ts_all), N)
    # no concatenation here: XLA:CPU copies big concatenations slowly; the step
    # joins the small (D, P) slices instead
    return {"ip": idx_prev, "id": idx_done, "s": g.t_size[ts_all], "pl": g.plus[order]}


def suffix_sum(x: jnp.ndarray, block: int = SUM_BLOCK) -> jnp.ndarray:
    """Inclusive suffix sums along axis 0 of (H, P): sequential within blocks of
    `block` rows, recursively across blocks (XLA:CPU's cumsum is far slower)."""
    H = x.shape[0]
    if H <= block:
        rows = [x[H - 1]]
        for i in range(H - 2, -1, -1):
            rows.append(rows[-1] + x[i])
        return jnp.stack(rows[::-1])
    nb = -(-H // block)
    xp = jnp.pad(x, ((0, nb * block - H), (0, 0))).reshape((nb, block) + x.shape[1:])
    cols = [xp[:, block - 1]]
    for i in range(block - 2, -1, -1):
        cols.append(cols[-1] + xp[:, i])
    within = jnp.stack(cols[::-1], axis=1)  # (nb, block, P)
    suf = suffix_sum(within[:, 0], block)  # (nb, P) inclusive over blocks
    off = jnp.concatenate([suf[1:], jnp.zeros_like(suf[:1])])
    return (within + off[:, None]).reshape((nb * block,) + x.shape[1:])[:H]


def _windows(L: int, N: int) -> list[tuple[int, int, int | None]]:
    """(start, end, length) step ranges, one DP scan each. Legacy (DP_SCANS = 0):
    steps r < L look at l < end (static windows growing block by block, length
    None); steps r >= L look at the L positions l in (r - L, r]. With DP_SCANS = s:
    s - 1 growing ranges, then one range to N whose steps look at the L positions
    from max(0, r - L + 1) (length -L; None when L = N: all positions)."""
    if DP_SCANS:
        nb = max(1, min(DP_SCANS, L // 24))
        width = -(-L // nb)
        out = [(lo, lo + width, None) for lo in range(0, (nb - 1) * width, width)]
        out.append(((nb - 1) * width, N, None if L == N else -L))
        return out
    nb = max(1, min(WINDOW_BLOCKS, L // 24))  # small graphs: one window, fast compile
    width = -(-L // nb)
    out = [(lo, min(lo + width, L), None) for lo in range(0, L, width)]
    if L < N:
        out.append((L, N, L))
    return out


def _minmax(Qs: jnp.ndarray, seg: jnp.ndarray) -> jnp.ndarray:
    """min over l of max(Qs[..., l, :], seg[l, :])."""
    return jnp.min(jnp.maximum(Qs, seg), axis=-2)


def ordered(x: jnp.ndarray) -> jnp.ndarray:
    """Order-preserving integers of floats (int32 for float32, int64 for float64),
    -0.0 and +0.0 both mapped to 0; its own inverse on the integers (`unordered`).

    The DP table holds these: integer max and min are single instructions on XLA:CPU,
    float ones carry NaN handling (on the suite's K = 8 and 16 buckets the decoder
    scored 14-29% faster with integer keys, K = 4 unchanged). Exact for every non-NaN
    value, infinities included; a NaN (+NaN) sorts above +inf, so it never wins a min
    (floats propagated it).
    """
    it = jnp.int64 if x.dtype == jnp.float64 else jnp.int32
    return _flip(lax.bitcast_convert_type(x + 0, it))  # + 0 turns -0.0 into +0.0


def unordered(k: jnp.ndarray, dtype) -> jnp.ndarray:
    """The floats of `ordered` integers."""
    return lax.bitcast_convert_type(_flip(k), dtype)


def _flip(bits: jnp.ndarray) -> jnp.ndarray:
    """Negative floats' bits with all but the sign flipped (an involution): sign and
    magnitude become two's-complement order."""
    return bits ^ ((bits >> (jnp.iinfo(bits.dtype).bits - 1)) & jnp.iinfo(bits.dtype).max)


def _segments(spec: Spec, g: DeviceGraph, cr: dict, x: dict, r, win, base, ell, lane):
    """(H, P) costs of the blocks [l, r] for the window's l (updates cr in place):
    transfers and work from the event slab, overflow and capacity from parameter
    prefix sums, +inf for blocks holding an unsupported unit."""
    zero = jnp.zeros((), jnp.int32)
    inf = jnp.asarray(jnp.inf, g.work.dtype)
    Dl = cr["Dl"]
    Dl = lax.dynamic_update_slice(Dl, (Dl[r] + x["pl"])[None], (r, zero))
    ei = jnp.concatenate([x["ip"], x["id"]])
    Dl = Dl.at[ei, lane[None, :]].add(-jnp.concatenate([x["s"], x["s"]]),
                                     mode="promise_in_bounds")
    cr["Dl"] = Dl
    seg = suffix_sum(win(Dl, base))
    if spec.use_param:
        pp = cr["PP"][r] + x["pv"]
        cr["PP"] = lax.dynamic_update_slice(cr["PP"], pp[None], (r + 1, zero))
        pw = pp[None] - win(cr["PP"], base)
        seg = seg + jnp.maximum(pw - g.memory, 0) * g.inv_bw
        seg = jnp.where(pw > g.capacity, inf, seg)
    if spec.use_bad:
        lb = jnp.where(x["bv"] > 0, r, cr["lb"])
        cr["lb"] = lb
        seg = jnp.where(ell <= lb[None, :], inf, seg)
    return seg


def _cpu_column(spec: Spec, Q, seg, cpu, first, cfirst, win, base, dtype):
    """(R, P) new DP column with CPU blocks: Q[c][j] over c CPUs and j accelerators,
    the last block on an accelerator (seg) or on a CPU (cpu); all `ordered` keys of
    `dtype` costs."""
    K, C = spec.K, spec.C
    P = seg.shape[-1]
    N = Q.shape[1] - 1
    inf = jnp.full((1, P), ordered(jnp.asarray(jnp.inf, dtype)), seg.dtype)
    Qv = Q.reshape(C + 1, K + 1, N + 1, P)
    a0 = first  # c = 0, j = 1
    if K > 1:
        a0 = jnp.concatenate([a0, _minmax(win(Qv, base, (0, slice(1, K))), seg)])
    a = _minmax(win(Qv, base, (slice(1, None), slice(0, K))), seg)  # (C, K, P)
    b = jnp.concatenate([cfirst, _minmax(win(Qv, base, (0, slice(1, None))),
                                         cpu)])[None]  # (1, K+1, P)
    if C > 1:
        b = jnp.concatenate([b, _minmax(win(Qv, base, (slice(1, C),)), cpu)])  # (C, K+1, P)
    x0 = jnp.concatenate([inf, a0])[None]  # c = 0
    xc = jnp.concatenate([b[:, :1], jnp.minimum(a, b[:, 1:])], axis=1)
    col = jnp.concatenate([x0, xc])  # (C+1, K+1, P)
    return lax.cummin(lax.cummin(col, axis=1), axis=0).reshape(table_rows(spec), P)


def slice_lanes(spec: Spec, g: DeviceGraph, order: jnp.ndarray,
                window: int | None = None) -> jnp.ndarray:
    """(P,) optimal bottleneck costs of the (N, P) unit orders.

    With `window` = L < N, blocks hold at most L units (a restricted DP): the result
    is >= the true optimum, and equal to it whenever it is below the cost any block
    of L+1 units must have (`evaluate` checks this and recomputes the other lanes
    with the full window).
    """
    N, P = order.shape
    K, C = spec.K, spec.C
    L = N if window is None else max(1, min(int(window), N))
    R = table_rows(spec)
    dt = g.work.dtype
    inf = jnp.asarray(jnp.inf, dt)
    lane = jnp.arange(P, dtype=jnp.int32)
    iota = jnp.arange(N, dtype=jnp.int32)
    xs = events_lanes(spec, g, order)
    key_inf = ordered(inf)
    # the DP table holds `ordered` keys of the costs (see `ordered`)
    carry = {"Dl": jnp.zeros((N + 1, P), dt),
             "Q": jnp.full((R, N + 1, P), key_inf).at[:, 0, :].set(ordered(jnp.zeros((), dt)))}
    if spec.use_param:
        xs["pv"] = g.param[order]
        carry["PP"] = jnp.zeros((N + 1, P), dt)
    if spec.use_bad:
        xs["bv"] = g.bad[order]
        carry["lb"] = jnp.full((P,), -1, jnp.int32)
    if C:
        xs["cv"] = g.cpu[order]
        carry["CP"] = jnp.zeros((N + 1, P), dt)
    zero = jnp.zeros((), jnp.int32)

    for lo, hi, length in _windows(L, N):
        clamped = length is not None and length < 0  # DP_SCANS: base = max(0, .)
        length = None if length is None else abs(length)
        H = hi if length is None else length

        def win(A, base, rows=None, H=H, length=length):
            """A[rows][base:base+H] (rows: leading index tuple or None)."""
            if rows is not None:
                A = A[rows]
            if length is None:
                return A[..., :H, :]
            starts = (zero,) * (A.ndim - 2) + (base, zero)
            return lax.dynamic_slice(A, starts, A.shape[:-2] + (H, P))

        def step(cr, r, H=H, length=length, win=win, clamped=clamped):
            cr = dict(cr)
            # per-step slices read in place (slicing xs per window would copy them)
            x = {key: lax.dynamic_index_in_dim(v, r, 0, False) for key, v in xs.items()}
            if length is None:
                base = zero
            elif clamped:
                base = jnp.maximum(r - (length - 1), 0)
            else:
                base = r - (length - 1)
            ell = base + iota[:H, None]  # (H, 1) segment start l
            live = ell <= r
            seg = ordered(_segments(spec, g, cr, x, r, win, base, ell, lane))
            if length is None or clamped:
                seg = jnp.where(live, seg, key_inf)  # (H, P)
                first = seg[:1]  # one block from l = 0 (Q[0][0] = 0 there only)
                if clamped:  # l = 0 is in the window only while base = 0
                    first = jnp.where(base == 0, first, key_inf)
            else:
                first = jnp.full((1, P), key_inf)  # l = 0 is outside the window
            Q = cr["Q"]
            if C == 0:
                col = first
                if K > 1:
                    col = jnp.concatenate([col, _minmax(win(Q, base, slice(0, K - 1)), seg)])
                col = lax.cummin(col, axis=0)  # (K, P)
            else:
                cp = cr["CP"][r] + x["cv"]
                cr["CP"] = lax.dynamic_update_slice(cr["CP"], cp[None], (r + 1, zero))
                cpu = ordered(cp[None] - win(cr["CP"], base))
                if length is None or clamped:
                    cpu = jnp.where(live, cpu, key_inf)
                    cfirst = cpu[:1]
                    if clamped:
                        cfirst = jnp.where(base == 0, cfirst, key_inf)
                else:
                    cfirst = jnp.full((1, P), key_inf)
                col = _cpu_column(spec, Q, seg, cpu, first, cfirst, win, base, dt)
            cr["Q"] = lax.dynamic_update_slice(Q, col[:, None, :], (zero, r + 1, zero))
            return cr, None

        carry, _ = lax.scan(step, carry, iota[lo:hi])

    Q = carry["Q"]
    j = jnp.minimum(g.k, K)
    row = j - 1 if C == 0 else jnp.minimum(g.cpus, C) * (K + 1) + j
    # the real units end at g.n (padding units follow; with a restricted window they
    # would lengthen the last block)
    return unordered(lax.dynamic_index_in_dim(lax.dynamic_index_in_dim(Q, row, 0, False),
                                              g.n, 0, False), dt)


def score_prio(spec: Spec, g: DeviceGraph, prio: jnp.ndarray,
               window: int | None = None) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, N) unit priorities (float or integer keys)."""
    return score_prio_orders(spec, g, prio, window)[0]


def score_prio_orders(spec: Spec, g: DeviceGraph, prio: jnp.ndarray,
                      window: int | None = None) -> tuple[jnp.ndarray, jnp.ndarray]:
    """((P,) costs, (N, P) int32 Kahn orders of units) for (P, N) unit priorities."""
    order = kahn_lanes(spec, g, sortable(prio.T, g.n))
    return slice_lanes(spec, g, order, window), order


def score_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, N) int32 Kahn keys (over units)."""
    return score_prio(spec, g, keys)
