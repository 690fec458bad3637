"""Bulk (numpy CSR) builders of the block MIPs of ../shared/docs/mtpp.md section 3.

One builder covers the exact MIP and the three-superblock relaxations: `nb` blocks
numbered in DAG order, binary y[v, b] = "v is in block b or earlier" for
b = 0..nb-2 (y[v, -1] = 0 and y[v, nb-1] = 1 are constants), x[v, b] =
y[v, b] - y[v, b-1] substituted away, and continuous c[t, b] in [0, 1] = "tensor t
crosses the boundary of block b" per TENSOR (hyperedge): it is paid at most once
leaving its producer's block and at most once entering each consumer block.

Rows (all built from index arrays, no per-variable Python loops):
    block_b = sum_v work(v) x[v,b] + sum_t size(t)/B c[t,b] + o_b <= div_b * z
    o_b >= (sum_v param(v) x[v,b] - scale_b M) / B,  o_b >= 0      (overflow)
    sum_v param(v) x[v,b] <= scale_b C                                (capacity)
    y[v,b-1] <= y[v,b]                                                (monotone)
    y[u,b] >= y[v,b]               for (u,v) in E                     (acyclic quotient)
    c[t,b] >= x[v,b] - x[u,b]      for each (tensor t of u, consumer v) (enters b)
    c[t,b] >= x[u,b] - x[v,b]      for each (tensor t of u, consumer v) (leaves b)
    y[v,b] = y[w,b]                for v, w in one colocation class (`color_class`)

Contiguity (the acyclic rows) applies to `units.ordering_edges` (the forward edges of
training graphs, NeurIPS 2020 model); CPU blocks are not modelled (see `certify`).

The two c rows hold for every assignment, acyclic or not; they are the tight form of
mtpp.md's `c >= y[u,b-1] + x[v,b] - 1` and `c >= x[u,b] - y[v,b]`: on every acyclic
partition they give the same value, and in the LP they are never weaker:
x[v,b] - x[u,b] = (y[u,b-1] + x[v,b] - 1) + (1 - y[u,b]).
Costs are divided by a scale (the simple bound) for numerics; bounds are scaled back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.bounds._highs import INF, SolveResult, solve_arrays
from jaxplace.cost import simple_lower_bound
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

__all__ = ["INF", "BlockModel", "SolveResult", "build_block_model", "dag_numbering",
           "solve_arrays", "solve_model", "start_vector"]


@dataclass
class BlockModel:
    """A loaded-ready MIP: rowwise CSR arrays and the column layout.

    Columns: z (index 0), y (n, nb-1) from `y0`, c (Tc, ncb) from `c0` (Tc tensors with
    at least one consumer, ncb costed blocks), o (ncb,) from `o0` when overflow is on.
    """

    nb: int
    n: int
    scale: float  # objective unit: a bound in model units times scale is a bound in time
    cost: np.ndarray  # (ncol,) float64
    col_lo: np.ndarray  # (ncol,) float64
    col_hi: np.ndarray  # (ncol,) float64
    row_lo: np.ndarray  # (nrow,) float64
    row_hi: np.ndarray  # (nrow,) float64
    start: np.ndarray  # (nrow+1,) int32 CSR row pointers
    index: np.ndarray  # (nnz,) int32 column indices
    value: np.ndarray  # (nnz,) float64
    integrality: np.ndarray  # (ncol,) int32, 1 for y
    y0: int
    c0: int
    o0: int  # -1 when no overflow columns
    costed: np.ndarray  # (ncb,) int64 blocks with a cost row
    tensors: np.ndarray  # (Tc,) int64 tensor ids owning the c columns
    build_time: float = 0.0
    stats: dict = field(default_factory=dict)

    @property
    def ncol(self) -> int:
        return len(self.cost)

    @property
    def nrow(self) -> int:
        return len(self.row_lo)

    @property
    def nnz(self) -> int:
        return len(self.value)

    def arrays(self) -> dict:
        """Plain arrays (picklable) for a solve in another process."""
        return dict(cost=self.cost, col_lo=self.col_lo, col_hi=self.col_hi,
                    row_lo=self.row_lo, row_hi=self.row_hi, start=self.start,
                    index=self.index, value=self.value, integrality=self.integrality)

    def assignment(self, col_value: np.ndarray) -> np.ndarray:
        """(n,) int64 block per node from a (near-)integral solution."""
        nb, n = self.nb, self.n
        if nb == 1:
            return np.zeros(n, dtype=np.int64)
        y = np.asarray(col_value)[self.y0:self.y0 + n * (nb - 1)].reshape(n, nb - 1)
        return (nb - 1 - (y > 0.5).sum(axis=1)).astype(np.int64)


class _Rows:
    """Accumulates triplets (row, col, val) and per-row constants and bounds."""

    def __init__(self):
        self.r, self.c, self.v = [], [], []
        self.lo, self.hi = [], []
        self.const = []  # (rows, value) pairs moved to the bounds
        self.count = 0

    def new(self, m: int, lo, hi) -> np.ndarray:
        rows = np.arange(self.count, self.count + m, dtype=np.int64)
        self.count += m
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (m,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (m,)))
        return rows

    def add(self, rows, cols, vals):
        rows, cols = np.broadcast_arrays(np.asarray(rows, np.int64), np.asarray(cols, np.int64))
        vals = np.broadcast_to(np.asarray(vals, np.float64), rows.shape)
        self.r.append(rows.ravel())
        self.c.append(cols.ravel())
        self.v.append(vals.ravel())

    def add_const(self, rows, vals):
        rows = np.asarray(rows, np.int64)
        self.const.append((rows.ravel(), np.broadcast_to(np.asarray(vals, np.float64),
                                                          rows.shape).ravel()))

    def finish(self, ncol: int):
        r = np.concatenate(self.r) if self.r else np.zeros(0, np.int64)
        c = np.concatenate(self.c) if self.c else np.zeros(0, np.int64)
        v = np.concatenate(self.v) if self.v else np.zeros(0)
        key = r * ncol + c
        uniq, inv = np.unique(key, return_inverse=True)  # sorted by (row, col)
        val = np.bincount(inv, weights=v, minlength=len(uniq))
        keep = val != 0.0
        uniq, val = uniq[keep], val[keep]
        rr, cc = uniq // ncol, uniq % ncol
        start = np.zeros(self.count + 1, dtype=np.int64)
        np.cumsum(np.bincount(rr, minlength=self.count), out=start[1:])
        const = np.zeros(self.count)
        for rows, vals in self.const:
            np.add.at(const, rows, vals)
        lo = np.concatenate(self.lo) - const if self.lo else np.zeros(0)
        hi = np.concatenate(self.hi) - const if self.hi else np.zeros(0)
        return start, cc, val, lo, hi


def build_block_model(
    problem: Problem,
    nb: int,
    *,
    div: np.ndarray,
    mem_scale: np.ndarray,
    dag: bool = True,
    io: bool = True,
    z_lb: float = 0.0,
    work_rows: list[tuple[np.ndarray, float]] = (),
    empty: tuple[int, ...] = (),
    empty_last: bool = False,
    relax: bool = False,
    scale: float | None = None,
) -> BlockModel:
    """Build min z over `nb` blocks in DAG order.

    Args:
        problem: the instance (work, tensors, bandwidth, memory, capacity).
        nb: number of (super)blocks.
        div: (nb,) z multiplier of each block's cost row (block_b <= div_b z); inf: no
            cost row (the block keeps its variables but is free).
        mem_scale: (nb,) how many real blocks each block stands for: its overflow
            budget is mem_scale_b * M and its capacity mem_scale_b * C.
        dag: keep the acyclic-quotient rows y[u,b] >= y[v,b].
        io: keep the tensor terms in the cost rows.
        z_lb: a known lower bound on the objective (time units): z's lower bound.
        work_rows: (coef (nb,), rhs) pairs: sum_b coef_b work(block b) >= rhs.
        empty: blocks forced empty.
        empty_last: symmetry breaking: a non-empty block follows no empty block.
        relax: all columns continuous (the LP relaxation).
        scale: objective unit (default: the simple bound).
    """
    t0 = time.perf_counter()
    g, B = problem.graph, problem.bandwidth
    n = g.num_nodes
    div = np.asarray(div, dtype=np.float64)
    mem_scale = np.asarray(mem_scale, dtype=np.float64)
    if scale is None:
        scale = simple_lower_bound(problem)
    if not scale > 0:
        scale = max(float(g.tensor_size.max(initial=0.0)) / B, 1.0)
    work = g.work / scale
    costed = np.flatnonzero(np.isfinite(div))
    ncb = len(costed)
    cpos = np.full(nb, -1, dtype=np.int64)
    cpos[costed] = np.arange(ncb)

    # tensors with consumers, and their (tensor, consumer) pairs
    ncons = np.diff(g.tensor_ptr)
    tens = np.flatnonzero(ncons > 0) if io else np.zeros(0, dtype=np.int64)
    tpos = np.full(g.num_tensors, -1, dtype=np.int64)
    tpos[tens] = np.arange(len(tens))
    t_of = np.repeat(np.arange(g.num_tensors), ncons)
    pair_t = t_of if io else np.zeros(0, dtype=np.int64)
    pair_u = g.tensor_producer[pair_t]
    pair_v = g.tensor_consumers if io else np.zeros(0, dtype=np.int64)
    pair_c = tpos[pair_t]
    # contiguity applies to the ordering edges (forward ones in training graphs); a
    # (tensor, consumer) pair off them may point backwards, so it needs all its rows
    oe = ordering_edges(g)
    pair_ordered = np.isin(pair_u * n + pair_v, oe[:, 0] * n + oe[:, 1])

    overflow = problem.memory is not None and g.size_param.max() > 0
    capacity = problem.capacity is not None
    ny = n * (nb - 1)
    y0, c0 = 1, 1 + ny
    o0 = c0 + len(tens) * ncb
    ncol = o0 + (ncb if overflow else 0)
    if not overflow:
        o0 = -1

    def ycol(v, b):
        return y0 + np.asarray(v) * (nb - 1) + np.asarray(b)

    def ccol(tc, b):
        return c0 + np.asarray(tc) * ncb + cpos[np.asarray(b)]

    R = _Rows()

    def add_y(rows, v, b, coef):
        """coef * y[v, b] into rows (b is a scalar block index in -1..nb-1)."""
        if b < 0:
            return
        if b >= nb - 1:
            R.add_const(rows, np.broadcast_to(coef, np.shape(rows)))
            return
        R.add(rows, ycol(v, b), coef)

    def add_x(rows, v, b, coef):
        add_y(rows, v, b, coef)
        add_y(rows, v, b - 1, -np.asarray(coef))

    # block cost rows: work + io + o - div z <= 0
    for b in costed:
        (row,) = R.new(1, -INF, 0.0)
        add_x(np.full(n, row), np.arange(n), b, work)
        if len(tens):
            R.add(row, ccol(np.arange(len(tens)), b), g.tensor_size[tens] / B / scale)
        if overflow:
            R.add(row, o0 + cpos[b], 1.0)
        R.add(row, 0, -div[b])

    # overflow and capacity
    if overflow or capacity:
        pmax = float(g.size_param.max())
        pnorm = g.size_param / pmax if pmax > 0 else g.size_param
        for b in range(nb):
            if overflow and cpos[b] >= 0:
                # (param_b - s M)/B <= o_b, in model units: param/pmax * pmax/(B scale)
                f = pmax / (B * scale)
                (row,) = R.new(1, -INF, mem_scale[b] * problem.memory / (B * scale))
                add_x(np.full(n, row), np.arange(n), b, pnorm * f)
                R.add(row, o0 + cpos[b], -1.0)
            if capacity and pmax > 0:
                (row,) = R.new(1, -INF, mem_scale[b] * problem.capacity / pmax)
                add_x(np.full(n, row), np.arange(n), b, pnorm)

    # monotone y[v,b-1] - y[v,b] <= 0
    if nb >= 3:
        vv, bb = np.meshgrid(np.arange(n), np.arange(1, nb - 1), indexing="ij")
        rows = R.new(vv.size, -INF, 0.0)
        R.add(rows, ycol(vv.ravel(), bb.ravel() - 1), 1.0)
        R.add(rows, ycol(vv.ravel(), bb.ravel()), -1.0)

    # acyclic y[v,b] - y[u,b] <= 0
    if dag and nb >= 2 and len(oe):
        eu, ev = oe[:, 0], oe[:, 1]
        m = len(eu)
        for b in range(nb - 1):
            rows = R.new(m, -INF, 0.0)
            R.add(rows, ycol(ev, b), 1.0)
            R.add(rows, ycol(eu, b), -1.0)

    # tensor crossings, per (tensor, consumer) pair
    P = len(pair_t)
    if P and nb >= 2:
        for b in costed:
            # enters b: x[v,b] - x[u,b] - c[t,b] <= 0 (implied in block 0 for ordered pairs)
            # leaves b: x[u,b] - x[v,b] - c[t,b] <= 0 (implied in the last block)
            for sign, first, last in ((1.0, 1, nb - 1), (-1.0, 0, nb - 2)):
                sel = np.arange(P) if first <= b <= last else np.flatnonzero(~pair_ordered)
                if not len(sel):
                    continue
                rows = R.new(len(sel), -INF, 0.0)
                add_x(rows, pair_v[sel], b, np.full(len(sel), sign))
                add_x(rows, pair_u[sel], b, np.full(len(sel), -sign))
                R.add(rows, ccol(pair_c[sel], b), -1.0)

    # work rows: sum_b coef_b work(b) >= rhs
    for coef, rhs in work_rows:
        (row,) = R.new(1, rhs / scale, INF)
        for b in range(nb):
            if coef[b] != 0:
                add_x(np.full(n, row), np.arange(n), b, coef[b] * work)

    # colocation classes share a block: y[v,b] = y[first member,b]
    color = g.node_attrs.get("color_class")
    if color is not None and nb >= 2:
        color = np.asarray(color, dtype=np.int64)
        members = np.flatnonzero(color >= 0)
        _, first_idx, inv = np.unique(color[members], return_index=True,
                                      return_inverse=True)
        rep = members[first_idx][inv]
        keep = rep != members
        mv, mr = members[keep], rep[keep]
        for b in range(nb - 1):
            rows = R.new(len(mv), 0.0, 0.0)
            R.add(rows, ycol(mv, b), 1.0)
            R.add(rows, ycol(mr, b), -1.0)

    # symmetry: block b non-empty => block b-1 non-empty, aggregated as
    # sum_v y[v,b-1] + n * count(b) >= n   (count(b) = 0 forces every node before b)
    if empty_last:
        for b in range(1, nb):
            (row,) = R.new(1, float(n), INF)
            add_y(np.full(n, row), np.arange(n), b - 1, np.ones(n))
            add_x(np.full(n, row), np.arange(n), b, np.full(n, float(n)))

    start, index, value, row_lo, row_hi = R.finish(ncol)

    cost = np.zeros(ncol)
    cost[0] = 1.0
    col_lo = np.zeros(ncol)
    col_hi = np.ones(ncol)
    col_lo[0] = max(z_lb / scale, 0.0)
    col_hi[0] = INF
    if overflow:
        col_hi[o0:] = INF
    integrality = np.zeros(ncol, dtype=np.int32)
    if not relax:
        integrality[y0:c0] = 1
    yl = col_lo[y0:c0].reshape(n, max(nb - 1, 0))
    yh = col_hi[y0:c0].reshape(n, max(nb - 1, 0))
    for b in empty:  # block b empty: y[:, b] = y[:, b-1]
        if b == 0 and nb > 1:
            yh[:, 0] = 0.0
        elif b == nb - 1 and nb > 1:
            yl[:, nb - 2] = 1.0
        elif 0 < b < nb - 1:
            raise ValueError("only the first or last block can be forced empty")
    model = BlockModel(nb=nb, n=n, scale=float(scale), cost=cost, col_lo=col_lo,
                       col_hi=col_hi, row_lo=row_lo, row_hi=row_hi,
                       start=start.astype(np.int32), index=index.astype(np.int32),
                       value=value, integrality=integrality, y0=y0, c0=c0, o0=o0,
                       costed=costed, tensors=tens)
    model.build_time = time.perf_counter() - t0
    return model


def start_vector(model: BlockModel, problem: Problem, assignment: np.ndarray,
                 cost: float) -> np.ndarray:
    """Full column vector of a partition (blocks already numbered in DAG order)."""
    g, B = problem.graph, problem.bandwidth
    nb, _n = model.nb, model.n
    a = np.asarray(assignment, dtype=np.int64)
    x = np.zeros(model.ncol)
    x[0] = cost / model.scale
    if nb > 1:
        x[model.y0:model.c0] = (a[:, None] <= np.arange(nb - 1)[None, :]).ravel()
    ncb = len(model.costed)
    cpos = np.full(nb, -1, dtype=np.int64)
    cpos[model.costed] = np.arange(ncb)
    if len(model.tensors):
        tpos = np.full(g.num_tensors, -1, dtype=np.int64)
        tpos[model.tensors] = np.arange(len(model.tensors))
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
        pb = a[g.tensor_producer[t_of]]
        cb = a[g.tensor_consumers]
        away = cb != pb
        cross = np.zeros((len(model.tensors), nb))
        tc = tpos[t_of[away]]
        cross[tc, pb[away]] = 1.0
        cross[tc, cb[away]] = 1.0
        x[model.c0:model.c0 + len(model.tensors) * ncb] = cross[:, model.costed].ravel()
    if model.o0 >= 0:
        param = np.bincount(a, weights=g.size_param, minlength=nb)
        over = np.maximum(0.0, param - problem.memory) / B / model.scale
        x[model.o0:model.o0 + ncb] = over[model.costed]
    return x


def dag_numbering(assignment: np.ndarray, block_order: np.ndarray) -> np.ndarray:
    """Renumber blocks: non-empty blocks in `block_order` first (0, 1, ...), empty last."""
    a = np.asarray(assignment, dtype=np.int64)
    k = len(block_order)
    used = np.zeros(k, dtype=bool)
    used[a] = True
    order = [b for b in block_order if used[b]] + [b for b in block_order if not used[b]]
    new = np.empty(k, dtype=np.int64)
    new[np.asarray(order, dtype=np.int64)] = np.arange(k)
    return new[a]


def solve_model(model: BlockModel, *, relax: bool = False, **kwargs) -> SolveResult:
    """solve_arrays on a BlockModel (scale and z floor taken from it)."""
    return solve_arrays(model.arrays(), relax=relax, scale=model.scale,
                        z_floor=float(model.col_lo[0]) * model.scale, **kwargs)
