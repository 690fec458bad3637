"""Bulk (numpy CSR) builders of the block MIPs (Archer et al., ICML 2024).

One builder covers the exact MIP and the three-superblock relaxations: `nb` blocks
numbered in DAG order, binary y[v, b] = "v is in block b or earlier" for
b = 0..nb-2 (y[v, -1] = 0 and y[v, nb-1] = 1 are constants), x[v, b] =
y[v, b] - y[v, b-1] substituted away, and continuous c[t, b] in [0, 1] = "tensor t
crosses the boundary of block b" per TENSOR (hyperedge): it is paid at most once
leaving its producer's block and at most once entering each consumer block.

Rows, one builder function per family (all built from index arrays, no per-variable
Python loops), in this order:
    block_b = sum_v work(v) x[v,b] + sum_t size(t)/B c[t,b] + o_b <= div_b * z  (_cost_rows)
    o_b >= (sum_v param(v) x[v,b] - scale_b M) / B,  o_b >= 0   (overflow, _memory_rows)
    sum_v param(v) x[v,b] <= scale_b C                           (capacity, _memory_rows)
    y[v,b-1] <= y[v,b]                                           (monotone, _order_rows)
    y[u,b] >= y[v,b]             for (u,v) in E          (acyclic quotient, _order_rows)
    c[t,b] >= x[v,b] - x[u,b]    per (tensor t of u, consumer v)  (enters, _crossing_rows)
    c[t,b] >= x[u,b] - x[v,b]    per (tensor t of u, consumer v)  (leaves, _crossing_rows)
    sum_b coef_b work(block b) >= rhs                                         (_work_rows)
    y[v,b] = y[w,b]              for v, w in one `color_class`           (_colocation_rows)
    sum_v y[v,b-1] + n count(b) >= n          (empty blocks come last, _symmetry_rows)

Contiguity (the acyclic rows) applies to `units.ordering_edges` (the forward edges of
training graphs, NeurIPS 2020 model).

CPU blocks (`BlockSpec.cpu_blocks`, the NeurIPS 2020 model: a CPU block costs the sum of its
nodes' `cpu_latency` and pays no transfers; nodes unsupported on accelerators only on
CPUs): the nb = k + cpus blocks in DAG order each get a binary type t_b (1: CPU), with
sum_b t_b = cpus, and continuous xc[v,b] = x[v,b] t_b ("v on CPU block b"), linearized
exactly for binary x and t; xa = x - xc is "v on accelerator block b":
    xc[v,b] <= x[v,b],  xc[v,b] <= t_b,  x[v,b] - xc[v,b] <= 1 - t_b      (_cpu_rows)
    x[v,b] - xc[v,b] <= 0             for v unsupported on accelerators  (_cpu_rows)
    sum_v cpu(v) xc[v,b] <= div_b * z                          (CPU cost, _cost_rows)
and xa replaces x in the accelerator cost, memory rows and on the block's own side of
the crossing rows (c[t,b] >= xa[v,b] - x[u,b]: a tensor entering or leaving a CPU
block costs that block nothing; the accelerator at the other end still pays it).

The two c rows hold for every assignment, acyclic or not; they are the tight form of
the textbook rows `c >= y[u,b-1] + x[v,b] - 1` and `c >= x[u,b] - y[v,b]`: on every acyclic
partition they give the same value, and in the LP they are never weaker:
x[v,b] - x[u,b] = (y[u,b-1] + x[v,b] - 1) + (1 - y[u,b]).
Costs are divided by a scale (the simple bound) for numerics; bounds are scaled back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.bounds._numeric_range import check_coefficients
from jaxplace.highs import INF, SolveResult, solve_arrays
from jaxplace.objectives.throughput.cost import throughput_lower_bound
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

__all__ = ["INF", "BlockModel", "BlockSpec", "SolveResult", "build_block_model",
           "dag_numbering", "solve_arrays", "solve_model", "start_vector"]


@dataclass
class BlockModel:
    """A loaded-ready MIP: rowwise CSR arrays and the column layout.

    Columns: z (index 0), y (n, nb-1) from `y0`, c (Tc, ncb) from `c0` (Tc tensors with
    at least one consumer, ncb costed blocks), o (ncb,) from `o0` when overflow is on,
    with CPU blocks t (nb,) from `t0` and xc (n, nb) from `xc0` (else both -1).
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
    t0: int = -1  # CPU-type columns (nb,), -1 without CPU blocks
    xc0: int = -1  # xc columns (n, nb), -1 without CPU blocks
    k: int = 0  # accelerators (block ids of `assignment`: 0..k-1, CPUs k..)
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
            pos = np.zeros(n, dtype=np.int64)
        else:
            y = np.asarray(col_value)[self.y0:self.y0 + n * (nb - 1)].reshape(n, nb - 1)
            pos = (nb - 1 - (y > 0.5).sum(axis=1)).astype(np.int64)
        if self.t0 < 0:
            return pos
        # positions -> block ids: accelerator positions 0..k-1, CPU positions k..
        cpu = np.asarray(col_value)[self.t0:self.t0 + nb] > 0.5
        block = np.empty(nb, dtype=np.int64)
        block[~cpu] = np.arange(int((~cpu).sum()))
        block[cpu] = self.k + np.arange(int(cpu.sum()))
        return block[pos]


@dataclass(frozen=True)
class BlockSpec:
    """What a block model stands for (the min z over `nb` blocks in DAG order).

    Attributes:
        nb: number of (super)blocks.
        div: (nb,) z multiplier of each block's cost row (block_b <= div_b z); inf: no
            cost row (the block keeps its variables but is free).
        mem_scale: (nb,) how many real blocks each block stands for: its overflow
            budget is mem_scale_b * M and its capacity mem_scale_b * C.
        dag: keep the acyclic-quotient rows y[u,b] >= y[v,b].
        io: keep the tensor terms in the cost rows.
        z_lb: a known lower bound on the objective (time units): z's lower bound.
        work_rows: (coef (nb,), rhs) pairs: sum_b coef_b work(block b) >= rhs.
        empty: blocks forced empty (only the first or the last).
        empty_last: symmetry breaking: a non-empty block follows no empty block.
        cpu_blocks: CPU blocks: nb = k + cpus blocks, each an accelerator or a CPU (see the
            module doc); every block must be costed (div finite).
    """

    nb: int
    div: np.ndarray
    mem_scale: np.ndarray
    dag: bool = True
    io: bool = True
    z_lb: float = 0.0
    work_rows: tuple[tuple[np.ndarray, float], ...] = ()
    empty: tuple[int, ...] = ()
    empty_last: bool = False
    cpu_blocks: bool = False


@dataclass(frozen=True)
class _Layout:
    """Column layout of a block model and the data its row families share."""

    n: int
    nb: int
    scale: float  # objective unit (time per model unit)
    work: np.ndarray  # (n,) float64 work / scale
    costed: np.ndarray  # (ncb,) int64 blocks with a cost row
    cpos: np.ndarray  # (nb,) int64 position of each block among `costed`, -1 if none
    tens: np.ndarray  # (Tc,) int64 tensors with consumers (none without io)
    overflow: bool  # memory is set and some node has parameters: o columns exist
    y0: int
    c0: int
    o0: int  # -1 when no overflow columns
    ncol: int
    t0: int = -1  # CPU-type columns (nb,), -1 without CPU blocks
    xc0: int = -1  # xc columns (n, nb)
    cpu: np.ndarray | None = None  # (n,) float64 cpu_latency / scale

    def ycol(self, v, b):
        """Column of y[v, b] (b in 0..nb-2)."""
        return self.y0 + np.asarray(v) * (self.nb - 1) + np.asarray(b)

    def ccol(self, tc, b):
        """Column of c[tc, b] (tc: position in `tens`, b: a costed block)."""
        return self.c0 + np.asarray(tc) * len(self.costed) + self.cpos[np.asarray(b)]

    def xccol(self, v, b):
        """Column of xc[v, b]."""
        return self.xc0 + np.asarray(v) * self.nb + np.asarray(b)


class _Rows:
    """Accumulates triplets (row, col, val) and per-row constants and bounds."""

    def __init__(self, lay: _Layout):
        self.lay = lay
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

    def add_y(self, rows, v, b, coef):
        """coef * y[v, b] into rows (b is a scalar block index in -1..nb-1; y[v, -1] = 0
        and y[v, nb-1] = 1 are constants)."""
        nb = self.lay.nb
        if b < 0:
            return
        if b >= nb - 1:
            self.add_const(rows, np.broadcast_to(coef, np.shape(rows)))
            return
        self.add(rows, self.lay.ycol(v, b), coef)

    def add_x(self, rows, v, b, coef):
        """coef * x[v, b] = coef * (y[v, b] - y[v, b-1]) into rows."""
        self.add_y(rows, v, b, coef)
        self.add_y(rows, v, b - 1, -np.asarray(coef))

    def add_xa(self, rows, v, b, coef):
        """coef * "v on accelerator block b": x[v, b] - xc[v, b] with CPU blocks, else
        x[v, b]."""
        self.add_x(rows, v, b, coef)
        if self.lay.xc0 >= 0:
            self.add(rows, self.lay.xccol(v, b), -np.asarray(coef))

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


def _objective_scale(problem: Problem, scale: float | None) -> float:
    if scale is None:
        scale = throughput_lower_bound(problem)
    if not 0 < scale < float("inf"):  # inf: a node fits no device (CPU-only, no CPU)
        g = problem.graph
        scale = max(float(g.tensor_size.max(initial=0.0)) / problem.bandwidth, 1.0)
    return float(scale)


def _layout(problem: Problem, spec: BlockSpec, scale: float) -> _Layout:
    g, nb, n = problem.graph, spec.nb, problem.graph.num_nodes
    costed = np.flatnonzero(np.isfinite(np.asarray(spec.div, dtype=np.float64)))
    cpos = np.full(nb, -1, dtype=np.int64)
    cpos[costed] = np.arange(len(costed))
    ncons = np.diff(g.tensor_ptr)
    tens = np.flatnonzero(ncons > 0) if spec.io else np.zeros(0, dtype=np.int64)
    overflow = problem.memory is not None and g.size_param.max() > 0
    y0 = 1
    c0 = y0 + n * (nb - 1)
    o0 = c0 + len(tens) * len(costed)
    ncol = o0 + (len(costed) if overflow else 0)
    t0 = xc0 = -1
    cpu = None
    if spec.cpu_blocks:
        if len(costed) != nb:
            raise ValueError("CPU blocks need every block costed")
        t0, xc0 = ncol, ncol + nb
        ncol = xc0 + n * nb
        cpu = problem.cpu_latency / scale
    return _Layout(n=n, nb=nb, scale=scale, work=g.work / scale, costed=costed, cpos=cpos,
                   tens=tens, overflow=overflow, y0=y0, c0=c0, o0=o0 if overflow else -1,
                   ncol=ncol, t0=t0, xc0=xc0, cpu=cpu)


@dataclass(frozen=True)
class _Pairs:
    """The (tensor, consumer) pairs of the tensors with consumers, each (P,) int64."""

    u: np.ndarray  # producer
    v: np.ndarray  # consumer
    c: np.ndarray  # position of the tensor in the layout's `tens`
    ordered: np.ndarray  # (P,) bool: (u, v) is an ordering edge


def _tensor_pairs(problem: Problem, lay: _Layout, oe: np.ndarray) -> _Pairs:
    g, n = problem.graph, lay.n
    if not len(lay.tens):
        e = np.zeros(0, dtype=np.int64)
        return _Pairs(e, e, e, np.zeros(0, dtype=bool))
    tpos = np.full(g.num_tensors, -1, dtype=np.int64)
    tpos[lay.tens] = np.arange(len(lay.tens))
    t = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
    u, v = g.tensor_producer[t], g.tensor_consumers
    # contiguity applies to the ordering edges (forward ones in training graphs); a
    # (tensor, consumer) pair off them may point backwards, so it needs all its rows
    ordered = np.isin(u * n + v, oe[:, 0] * n + oe[:, 1])
    return _Pairs(u=u, v=v, c=tpos[t], ordered=ordered)


def _cost_rows(R: _Rows, lay: _Layout, problem: Problem, div: np.ndarray) -> None:
    """Block cost rows: work + io + overflow - div_b z <= 0, one per costed block."""
    g, n = problem.graph, lay.n
    io_coef = g.tensor_size[lay.tens] / problem.bandwidth / lay.scale
    for b in lay.costed:
        (row,) = R.new(1, -INF, 0.0)
        R.add_xa(np.full(n, row), np.arange(n), b, lay.work)
        if len(lay.tens):
            R.add(row, lay.ccol(np.arange(len(lay.tens)), b), io_coef)
        if lay.overflow:
            R.add(row, lay.o0 + lay.cpos[b], 1.0)
        R.add(row, 0, -div[b])
        if lay.xc0 >= 0:  # the same block as a CPU: sum of cpu latency, no transfers
            (row,) = R.new(1, -INF, 0.0)
            R.add(np.full(n, row), lay.xccol(np.arange(n), b), lay.cpu)
            R.add(row, 0, -div[b])


def _memory_rows(R: _Rows, lay: _Layout, problem: Problem, mem_scale: np.ndarray) -> None:
    """Overflow o_b >= (param_b - s_b M) / B and capacity param_b <= s_b C."""
    g, n, B, scale = problem.graph, lay.n, problem.bandwidth, lay.scale
    capacity = problem.capacity is not None
    pmax = float(g.size_param.max())
    if not (lay.overflow or capacity) or pmax <= 0:
        return
    pnorm = g.size_param / pmax
    for b in range(lay.nb):
        if lay.overflow and lay.cpos[b] >= 0:
            # (param_b - s M)/B <= o_b, in model units: param/pmax * pmax/(B scale)
            f = pmax / (B * scale)
            (row,) = R.new(1, -INF, mem_scale[b] * problem.memory / (B * scale))
            R.add_xa(np.full(n, row), np.arange(n), b, pnorm * f)
            R.add(row, lay.o0 + lay.cpos[b], -1.0)
        if capacity:
            (row,) = R.new(1, -INF, mem_scale[b] * problem.capacity / pmax)
            R.add_xa(np.full(n, row), np.arange(n), b, pnorm)


def _order_rows(R: _Rows, lay: _Layout, oe: np.ndarray, dag: bool) -> None:
    """Monotone y[v,b-1] <= y[v,b]; acyclic quotient y[v,b] <= y[u,b] for (u,v) in oe."""
    n, nb = lay.n, lay.nb
    if nb >= 3:
        vv, bb = np.meshgrid(np.arange(n), np.arange(1, nb - 1), indexing="ij")
        rows = R.new(vv.size, -INF, 0.0)
        R.add(rows, lay.ycol(vv.ravel(), bb.ravel() - 1), 1.0)
        R.add(rows, lay.ycol(vv.ravel(), bb.ravel()), -1.0)
    if dag and nb >= 2 and len(oe):
        eu, ev = oe[:, 0], oe[:, 1]
        for b in range(nb - 1):
            rows = R.new(len(eu), -INF, 0.0)
            R.add(rows, lay.ycol(ev, b), 1.0)
            R.add(rows, lay.ycol(eu, b), -1.0)


def _crossing_rows(R: _Rows, lay: _Layout, pairs: _Pairs) -> None:
    """c[t,b] >= x[v,b] - x[u,b] (enters b) and c[t,b] >= x[u,b] - x[v,b] (leaves b)."""
    P, nb = len(pairs.u), lay.nb
    if not P or nb < 2:
        return
    for b in lay.costed:
        # enters b is implied in block 0 for ordered pairs, leaves b in the last block
        for sign, first, last in ((1.0, 1, nb - 1), (-1.0, 0, nb - 2)):
            sel = np.arange(P) if first <= b <= last else np.flatnonzero(~pairs.ordered)
            if not len(sel):
                continue
            rows = R.new(len(sel), -INF, 0.0)
            inside, outside = (pairs.v, pairs.u) if sign > 0 else (pairs.u, pairs.v)
            R.add_xa(rows, inside[sel], b, np.ones(len(sel)))
            R.add_x(rows, outside[sel], b, -np.ones(len(sel)))
            R.add(rows, lay.ccol(pairs.c[sel], b), -1.0)


def _cpu_rows(R: _Rows, lay: _Layout, problem: Problem) -> None:
    """xc[v,b] = x[v,b] t_b (linearized), unsupported nodes on CPU blocks only, and
    exactly `cpus` CPU blocks (see the module doc)."""
    if lay.xc0 < 0:
        return
    n, nb = lay.n, lay.nb
    v = np.arange(n)
    bad = np.flatnonzero(~problem.supported)
    for b in range(nb):
        rows = R.new(n, -INF, 0.0)  # xc - x <= 0
        R.add(rows, lay.xccol(v, b), 1.0)
        R.add_x(rows, v, b, -np.ones(n))
        rows = R.new(n, -INF, 0.0)  # xc - t <= 0
        R.add(rows, lay.xccol(v, b), 1.0)
        R.add(rows, lay.t0 + b, -1.0)
        rows = R.new(n, -INF, 1.0)  # x - xc + t <= 1
        R.add_xa(rows, v, b, np.ones(n))
        R.add(rows, lay.t0 + b, 1.0)
        if len(bad):
            rows = R.new(len(bad), -INF, 0.0)  # x - xc <= 0
            R.add_xa(rows, bad, b, np.ones(len(bad)))
    (row,) = R.new(1, float(problem.cpus), float(problem.cpus))
    R.add(np.full(nb, row), lay.t0 + np.arange(nb), 1.0)


def _work_rows(R: _Rows, lay: _Layout, work_rows) -> None:
    """sum_b coef_b work(block b) >= rhs, one row per (coef, rhs)."""
    n = lay.n
    for coef, rhs in work_rows:
        (row,) = R.new(1, rhs / lay.scale, INF)
        for b in range(lay.nb):
            if coef[b] != 0:
                R.add_x(np.full(n, row), np.arange(n), b, coef[b] * lay.work)


def _colocation_rows(R: _Rows, lay: _Layout, problem: Problem) -> None:
    """Colocation classes share a block: y[v,b] = y[first member,b]."""
    color = problem.graph.node_attrs.get("color_class")
    if color is None or lay.nb < 2:
        return
    color = np.asarray(color, dtype=np.int64)
    members = np.flatnonzero(color >= 0)
    _, first_idx, inv = np.unique(color[members], return_index=True, return_inverse=True)
    rep = members[first_idx][inv]
    keep = rep != members
    mv, mr = members[keep], rep[keep]
    for b in range(lay.nb - 1):
        rows = R.new(len(mv), 0.0, 0.0)
        R.add(rows, lay.ycol(mv, b), 1.0)
        R.add(rows, lay.ycol(mr, b), -1.0)


def _symmetry_rows(R: _Rows, lay: _Layout) -> None:
    """Block b non-empty => block b-1 non-empty, aggregated as
    sum_v y[v,b-1] + n * count(b) >= n   (count(b) = 0 forces every node before b)."""
    n = lay.n
    for b in range(1, lay.nb):
        (row,) = R.new(1, float(n), INF)
        R.add_y(np.full(n, row), np.arange(n), b - 1, np.ones(n))
        R.add_x(np.full(n, row), np.arange(n), b, np.full(n, float(n)))


def _columns(lay: _Layout, spec: BlockSpec, relax: bool):
    """(cost, col_lo, col_hi, integrality) of min z, with the forced-empty blocks."""
    n, nb, ncol = lay.n, lay.nb, lay.ncol
    cost = np.zeros(ncol)
    cost[0] = 1.0
    col_lo = np.zeros(ncol)
    col_hi = np.ones(ncol)
    col_lo[0] = max(spec.z_lb / lay.scale, 0.0)
    col_hi[0] = INF
    if lay.overflow:
        col_hi[lay.o0:] = INF
    integrality = np.zeros(ncol, dtype=np.int32)
    if not relax:
        integrality[lay.y0:lay.c0] = 1
        if lay.t0 >= 0:
            integrality[lay.t0:lay.t0 + nb] = 1
    yl = col_lo[lay.y0:lay.c0].reshape(n, max(nb - 1, 0))
    yh = col_hi[lay.y0:lay.c0].reshape(n, max(nb - 1, 0))
    for b in spec.empty:  # block b empty: y[:, b] = y[:, b-1]
        if b == 0 and nb > 1:
            yh[:, 0] = 0.0
        elif b == nb - 1 and nb > 1:
            yl[:, nb - 2] = 1.0
        elif 0 < b < nb - 1:
            raise ValueError("only the first or last block can be forced empty")
    return cost, col_lo, col_hi, integrality


def build_block_model(problem: Problem, spec: BlockSpec, *, relax: bool = False,
                      scale: float | None = None) -> BlockModel:
    """Build min z over `spec.nb` blocks in DAG order, one family of rows at a time.

    Args:
        problem: the instance (work, tensors, bandwidth, memory, capacity).
        spec: the blocks, their cost multipliers and the optional row families.
        relax: all columns continuous (the LP relaxation).
        scale: objective unit (default: the simple bound).

    Raises:
        JaxplaceError: a coefficient outside the range HiGHS loads (see `_numeric_range`).
    """
    t0 = time.perf_counter()
    lay = _layout(problem, spec, _objective_scale(problem, scale))
    check_coefficients(problem, scale=lay.scale, io=spec.io, overflow=lay.overflow,
                       capacity=problem.capacity is not None, cpu=spec.cpu_blocks)
    oe = ordering_edges(problem.graph)
    R = _Rows(lay)
    _cost_rows(R, lay, problem, np.asarray(spec.div, dtype=np.float64))
    _memory_rows(R, lay, problem, np.asarray(spec.mem_scale, dtype=np.float64))
    _order_rows(R, lay, oe, spec.dag)
    _crossing_rows(R, lay, _tensor_pairs(problem, lay, oe))
    _work_rows(R, lay, spec.work_rows)
    _colocation_rows(R, lay, problem)
    _cpu_rows(R, lay, problem)
    if spec.empty_last:
        _symmetry_rows(R, lay)
    start, index, value, row_lo, row_hi = R.finish(lay.ncol)
    cost, col_lo, col_hi, integrality = _columns(lay, spec, relax)
    model = BlockModel(nb=lay.nb, n=lay.n, scale=lay.scale, cost=cost, col_lo=col_lo,
                       col_hi=col_hi, row_lo=row_lo, row_hi=row_hi,
                       start=start.astype(np.int32), index=index.astype(np.int32),
                       value=value, integrality=integrality, y0=lay.y0, c0=lay.c0,
                       o0=lay.o0, costed=lay.costed, tensors=lay.tens, t0=lay.t0,
                       xc0=lay.xc0, k=problem.k)
    model.build_time = time.perf_counter() - t0
    return model


def start_vector(model: BlockModel, problem: Problem, assignment: np.ndarray,
                 cost: float, cpu_blocks: np.ndarray | None = None) -> np.ndarray:
    """Full column vector of a partition (blocks already numbered in DAG order);
    `cpu_blocks`: (nb,) bool, which of them are CPUs (with CPU blocks)."""
    g, B = problem.graph, problem.bandwidth
    nb, n = model.nb, model.n
    a = np.asarray(assignment, dtype=np.int64)
    cpu = np.zeros(nb, dtype=bool) if cpu_blocks is None else np.asarray(cpu_blocks, bool)
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
        cross[:, cpu] = 0.0  # CPU blocks pay no transfers
        x[model.c0:model.c0 + len(model.tensors) * ncb] = cross[:, model.costed].ravel()
    if model.o0 >= 0:
        param = np.bincount(a[~cpu[a]], weights=g.size_param[~cpu[a]], minlength=nb)
        over = np.maximum(0.0, param - problem.memory) / B / model.scale
        x[model.o0:model.o0 + ncb] = over[model.costed]
    if model.t0 >= 0:
        x[model.t0:model.t0 + nb] = cpu
        xc = np.zeros((n, nb))
        on = cpu[a]
        xc[np.flatnonzero(on), a[on]] = 1.0
        x[model.xc0:model.xc0 + n * nb] = xc.ravel()
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
