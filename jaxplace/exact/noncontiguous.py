"""Non-contiguous splits: the throughput IP of Tarnawski, Phanishayee, Devanur, Mahajan
and Nina Paravecino, "Efficient Algorithms for Device Placement of DNN Graph Operators"
(NeurIPS 2020, section 5.1.3, Appendix C and section 5.2), solved with HiGHS.

Their IP without the contiguity rows. Every placement unit (a colour class, or a node
without one; the units are NOT merged along paths as in `jaxplace.units`, since
without contiguity a path may leave a class and come back) goes to exactly one block:
accelerators 0..k-1 and CPU blocks k..k+cpus-1. Binary x[u, b]; per tensor group (the
tensors touching the same set E of units, sizes summed) and accelerator b a continuous
c[g, b] >= |x[e, b] - x[p, b]| for e in E (p: the producer's unit), which is 1 exactly
when b holds some but not all of E, i.e. the tensor enters or leaves b: paid once
leaving its producer's block and once entering each other block, as
`objectives.throughput.cost.evaluate_partition` (and their `comm_in` / `comm_out`) count it.

    minimize z
    sum_b x[u, b] = 1                                           every unit, one block
    sum_u work(u) x[u, b] + sum_g s_g c[g, b] + o_b <= z        accelerator b
    sum_u cpu_latency(u) x[u, b] <= z                           CPU b (no transfers)
    sum_u param(u) x[u, b] <= C   /   o_b >= (param_b - M) / B  capacity / overflow
    x[u, b] = 0 for accelerators b when u holds an unsupported node

Optional symmetry rows (identical accelerators, identical CPUs; `symmetry=True`):
within each group the non-empty blocks are ordered by their smallest unit,
x[u, b] <= sum_{w < u} x[w, b-1], written with prefix-sum columns. Off by default:
HiGHS, which detects the symmetry itself, proved BERT-3 inference optimal in 4 s
without them and not in 30 s with them. The MIP starts from the best contiguous split (the DP over
ideals when it finishes within a share of the time, else the DFS linearization sliced
once), with that split's cost as the objective cutoff. The result's schedule is its
virtual-device pipeline (`pieces.virtual_pieces`).

    from jaxplace.exact.noncontiguous import solve_noncontiguous
    res = solve_noncontiguous(problem, time_limit=120)
    res.cost, res.assignment, res.bound, res.gap, res.pieces
    jp.search(problem, method="noncontiguous", time_limit=120)   # as a Result
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from jaxplace.bounds.crosscheck import REFUTE_RTOL, witness_plans
from jaxplace.errors import JaxplaceError
from jaxplace.exact.dp import solve_ideals
from jaxplace.exact.pieces import VirtualPieces, virtual_pieces
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.partition import Partition
from jaxplace.problem import Problem

#: Seconds the IP gets when no time limit is given.
DEFAULT_TIME_LIMIT = 60.0
#: Share of the time limit the DP over ideals may take to find the warm start.
WARM_SHARE = 0.25
#: Coefficients of this magnitude or less are left out (HiGHS would ignore them). Every
#: such coefficient is a cost (work, CPU latency, tensor size, parameters) in a row
#: bounded above, so leaving it out relaxes the model: its dual bound stays a valid
#: lower bound, and the split it returns is costed exactly by evaluate_partition.
SMALL_COEFFICIENT = 1e-9


@dataclass(frozen=True, eq=False)
class PlacementUnits:
    """Colocation classes (no path merging). Arrays are (U,) unless said otherwise."""

    unit_of: np.ndarray  # (n,) int64 unit of every node, numbered by smallest member
    work: np.ndarray  # float64 accelerator work
    cpu: np.ndarray  # float64 CPU latency
    param: np.ndarray  # float64 parameters
    bad: np.ndarray  # bool: holds a node unsupported on accelerators

    @property
    def num_units(self) -> int:
        return len(self.work)


def placement_units(problem: Problem) -> PlacementUnits:
    """The units a non-contiguous split places: colour classes and single nodes."""
    g, n = problem.graph, problem.n
    color = g.node_attrs.get("color_class")
    key = np.arange(n) if color is None else np.where(
        np.asarray(color) >= 0, np.asarray(color, dtype=np.int64), -1 - np.arange(n))
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    unit_of = rank[inv.ravel()]
    U = len(first)
    sums = [np.bincount(unit_of, weights=w, minlength=U)
            for w in (g.work, problem.cpu_latency, g.size_param)]
    bad = np.bincount(unit_of, weights=~problem.supported, minlength=U) > 0
    return PlacementUnits(unit_of, *sums, bad)


def noncontiguous_lower_bound(problem: Problem, units: PlacementUnits | None = None
                              ) -> float:
    """max(max_u m_u, sum_u m_u / (k + cpus)) with m_u = min(accelerator work (inf if
    unsupported), CPU latency (inf without CPUs)) over `placement_units`: every unit
    costs at least m_u wherever it goes (no transfers, no contiguity)."""
    u = placement_units(problem) if units is None else units
    acc = np.where(u.bad, np.inf, u.work)
    cpu = u.cpu if problem.cpus else np.full(u.num_units, np.inf)
    m = np.minimum(acc, cpu)
    return float(max(m.max(), m.sum() / problem.num_blocks))


def _tensor_groups(problem: Problem, unit_of: np.ndarray):
    """(ptr (G+1,), ends, size (G,)): per group the units its tensors touch (producer's
    unit first), for tensors touching two units or more with a positive size, tensors
    with the same unit set summed; size is divided by the bandwidth."""
    g = problem.graph
    groups: dict[tuple, float] = {}
    for t in range(g.num_tensors):
        s = float(g.tensor_size[t])
        if s <= 0:
            continue
        p = int(unit_of[g.tensor_producer[t]])
        cons = set(unit_of[g.consumers(t)].tolist()) - {p}
        if cons:
            k = (p, *sorted(cons))
            groups[k] = groups.get(k, 0.0) + s / problem.bandwidth
    ptr = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in groups], out=ptr[1:])
    ends = np.asarray([u for k in groups for u in k], dtype=np.int64)
    return ptr, ends, np.asarray(list(groups.values()), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class NoncontiguousModel:
    """The IP as rowwise CSR arrays and its column layout.

    Columns: z (0), x (U, nb) from `x0`, c (G, k) from `c0`, o (k,) from `o0` (-1: no
    overflow), prefix sums s (U, nb) from `s0` (-1: no symmetry rows).
    """

    units: PlacementUnits
    k: int
    nb: int
    scale: float  # time per model unit
    z_lb: float  # a valid lower bound (time units), z's column bound
    group_ptr: np.ndarray
    group_ends: np.ndarray
    group_size: np.ndarray
    x0: int
    c0: int
    o0: int
    s0: int
    arrays: dict
    build_time: float = 0.0

    @property
    def ncol(self) -> int:
        return len(self.arrays["cost"])

    @property
    def size(self) -> tuple[int, int, int]:
        a = self.arrays
        return len(a["cost"]), len(a["row_lo"]), len(a["value"])

    def assignment(self, col_value) -> np.ndarray:
        """(n,) int64 block of every node from a (near-)integral solution."""
        U = self.units.num_units
        x = np.asarray(col_value)[self.x0:self.x0 + U * self.nb].reshape(U, self.nb)
        return np.argmax(x, axis=1).astype(np.int64)[self.units.unit_of]


class _Rows:
    """Triplets and row bounds, assembled into rowwise CSR at the end."""

    def __init__(self):
        self.r, self.c, self.v, self.lo, self.hi = [], [], [], [], []
        self.count = 0

    def new(self, m: int, lo, hi) -> np.ndarray:
        rows = np.arange(self.count, self.count + m, dtype=np.int64)
        self.count += m
        self.lo.append(np.broadcast_to(np.asarray(lo, np.float64), (m,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, np.float64), (m,)))
        return rows

    def add(self, rows, cols, vals) -> None:
        rows, cols, vals = np.broadcast_arrays(np.asarray(rows, np.int64),
                                               np.asarray(cols, np.int64),
                                               np.asarray(vals, np.float64))
        self.r.append(rows.ravel())
        self.c.append(cols.ravel())
        self.v.append(vals.ravel())

    def csr(self):
        r, c, v = (np.concatenate(x) for x in (self.r, self.c, self.v))
        keep = np.abs(v) > SMALL_COEFFICIENT
        r, c, v = r[keep], c[keep], v[keep]
        order = np.lexsort((c, r))
        start = np.zeros(self.count + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=self.count), out=start[1:])
        return (start.astype(np.int32), c[order].astype(np.int32), v[order],
                np.concatenate(self.lo), np.concatenate(self.hi))


def _block_rows(R: _Rows, m: NoncontiguousModel, problem: Problem, u: PlacementUnits,
                x) -> None:
    """Assignment, cost, capacity and overflow rows."""
    U, nb, K = u.num_units, m.nb, m.k
    rows = R.new(U, 1.0, 1.0)
    R.add(np.repeat(rows, nb), x(np.repeat(np.arange(U), nb), np.tile(np.arange(nb), U)),
          1.0)
    G = len(m.group_size)
    for b in range(nb):
        (row,) = R.new(1, -np.inf, 0.0)
        R.add(row, x(np.arange(U), b), (u.work if b < K else u.cpu) / m.scale)
        R.add(row, 0, -1.0)
        if b < K and G:
            R.add(row, m.c0 + np.arange(G) * K + b, m.group_size / m.scale)
        if b < K and m.o0 >= 0:
            R.add(row, m.o0 + b, 1.0)
    pmax = float(u.param.max(initial=0.0))
    if pmax <= 0:
        return
    for b in range(K):
        if problem.capacity is not None:
            (row,) = R.new(1, -np.inf, problem.capacity_limit / pmax)
            R.add(row, x(np.arange(U), b), u.param / pmax)
        if m.o0 >= 0:  # (param_b - M) / B <= o_b, in model units
            f = pmax / (problem.bandwidth * m.scale)
            (row,) = R.new(1, -np.inf, problem.memory / (problem.bandwidth * m.scale))
            R.add(row, x(np.arange(U), b), u.param / pmax * f)
            R.add(row, m.o0 + b, -1.0)


def _crossing_rows(R: _Rows, m: NoncontiguousModel, x) -> None:
    """c[g, b] >= x[e, b] - x[p, b] and >= x[p, b] - x[e, b] for every end e != p."""
    G, K = len(m.group_size), m.k
    if not G:
        return
    lens = np.diff(m.group_ptr)
    gid = np.repeat(np.arange(G), lens - 1)
    p = np.repeat(m.group_ends[m.group_ptr[:-1]], lens - 1)
    mask = np.ones(len(m.group_ends), dtype=bool)
    mask[m.group_ptr[:-1]] = False
    e = m.group_ends[mask]
    for b in range(K):
        for sign in (1.0, -1.0):
            rows = R.new(len(e), -np.inf, 0.0)
            R.add(rows, x(e, b), sign)
            R.add(rows, x(p, b), -sign)
            R.add(rows, m.c0 + gid * K + b, -1.0)


def _symmetry_rows(R: _Rows, m: NoncontiguousModel, x) -> None:
    """s[u, b] = sum_{w <= u} x[w, b]; x[u, b] <= s[u-1, b-1] within each device group."""
    U, nb = m.units.num_units, m.nb
    s = lambda uu, bb: m.s0 + np.asarray(uu) * nb + np.asarray(bb)  # noqa: E731
    for b in range(nb):
        rows = R.new(U, 0.0, 0.0)  # s[u,b] - s[u-1,b] - x[u,b] = 0
        R.add(rows, s(np.arange(U), b), 1.0)
        R.add(rows[1:], s(np.arange(U - 1), b), -1.0)
        R.add(rows, x(np.arange(U), b), -1.0)
    for lo, hi in ((0, m.k), (m.k, nb)):
        for b in range(lo + 1, hi):
            rows = R.new(U, -np.inf, 0.0)  # x[u,b] - s[u-1,b-1] <= 0
            R.add(rows, x(np.arange(U), b), 1.0)
            R.add(rows[1:], s(np.arange(U - 1), b - 1), -1.0)


def build_model(problem: Problem, *, symmetry: bool = False) -> NoncontiguousModel:
    """The IP of the module doc for `problem` (throughput objective only).

    Raises:
        JaxplaceError: a unit holds an unsupported node and there is no CPU block, or a
            coefficient is outside the range HiGHS loads.
    """
    t0 = time.perf_counter()
    problem.objective_impl.require("noncontiguous")
    u = placement_units(problem)
    if u.bad.any() and not problem.cpus:
        v = int(np.flatnonzero(~problem.supported)[0])
        raise JaxplaceError(f"node {problem.graph.label(v)} is not supported on an "
                            "accelerator and there is no CPU block", field="cpus")
    U, K, nb = u.num_units, problem.k, problem.num_blocks
    lb = noncontiguous_lower_bound(problem, u)
    scale = lb if lb > 0 else max(float(problem.graph.tensor_size.max(initial=0.0))
                                  / problem.bandwidth, 1.0)
    ptr, ends, size = _tensor_groups(problem, u.unit_of)
    G = len(size)
    overflow = problem.memory is not None and u.param.max() > 0
    x0 = 1
    c0 = x0 + U * nb
    o0 = c0 + G * K
    s0 = o0 + (K if overflow else 0)
    ncol = s0 + (U * nb if symmetry else 0)
    m = NoncontiguousModel(u, K, nb, scale, lb, ptr, ends, size, x0, c0,
                           o0 if overflow else -1, s0 if symmetry else -1, {})
    x = lambda uu, bb: x0 + np.asarray(uu) * nb + np.asarray(bb)  # noqa: E731
    R = _Rows()
    _block_rows(R, m, problem, u, x)
    _crossing_rows(R, m, x)
    if symmetry:
        _symmetry_rows(R, m, x)
    start, index, value, row_lo, row_hi = R.csr()
    cost = np.zeros(ncol)
    cost[0] = 1.0
    col_lo, col_hi = np.zeros(ncol), np.ones(ncol)
    col_lo[0], col_hi[0] = lb / scale, np.inf
    if overflow:
        col_hi[o0:o0 + K] = np.inf
    if symmetry:
        col_hi[s0:] = np.inf
    xhi = col_hi[x0:c0].reshape(U, nb)
    xhi[u.bad, :K] = 0.0
    integrality = np.zeros(ncol, dtype=np.int32)
    integrality[x0:c0] = 1
    m.arrays.update(cost=cost, col_lo=col_lo, col_hi=col_hi, row_lo=row_lo, row_hi=row_hi,
                    start=start, index=index, value=value, integrality=integrality)
    object.__setattr__(m, "build_time", time.perf_counter() - t0)
    return m


def canonical_blocks(problem: Problem, assignment, unit_of: np.ndarray | None = None
                     ) -> np.ndarray:
    """The same split with accelerators (and CPUs) renamed in order of their smallest
    unit, empty blocks last (the labelling the symmetry rows allow)."""
    a = np.asarray(assignment, dtype=np.int64)
    unit_of = placement_units(problem).unit_of if unit_of is None else unit_of
    K, nb = problem.k, problem.num_blocks
    first = np.full(nb, np.iinfo(np.int64).max)
    np.minimum.at(first, a, unit_of)
    new = np.empty(nb, dtype=np.int64)
    for lo, hi in ((0, K), (K, nb)):
        blocks = np.arange(lo, hi)
        new[blocks[np.argsort(first[lo:hi], kind="stable")]] = blocks
    return new[a]


def start_vector(m: NoncontiguousModel, problem: Problem, assignment, cost: float
                 ) -> np.ndarray:
    """The full column vector of a split (blocks as the model labels them)."""
    u, nb, K = m.units, m.nb, m.k
    U = u.num_units
    a = np.asarray(assignment, dtype=np.int64)
    ua = np.zeros(U, dtype=np.int64)
    ua[u.unit_of] = a
    col = np.zeros(m.ncol)
    col[0] = cost / m.scale
    X = np.zeros((U, nb))
    X[np.arange(U), ua] = 1.0
    col[m.x0:m.c0] = X.ravel()
    if len(m.group_size):
        gid = np.repeat(np.arange(len(m.group_size)), np.diff(m.group_ptr))
        hit = np.zeros((len(m.group_size), nb))
        np.add.at(hit, (gid, ua[m.group_ends]), 1.0)
        lens = np.diff(m.group_ptr)[:, None]
        cross = (hit > 0) & (hit < lens)
        col[m.c0:m.c0 + len(m.group_size) * K] = cross[:, :K].ravel()
    if m.o0 >= 0:
        param = np.bincount(ua, weights=u.param, minlength=nb)[:K]
        col[m.o0:m.o0 + K] = np.maximum(0.0, param - problem.memory) / (
            problem.bandwidth * m.scale)
    if m.s0 >= 0:
        col[m.s0:m.s0 + U * nb] = np.cumsum(X, axis=0).ravel()
    return col


@dataclass
class NoncontiguousResult:
    """The outcome of `solve_noncontiguous`.

    Attributes:
        cost: max load of `assignment` (evaluate_partition(contiguous=False)).
        assignment: (n,) int64 block of every node: accelerators 0..k-1 numbered by
            their first virtual piece, CPUs from k on likewise.
        bound: a valid lower bound on the non-contiguous optimum (the MIP's dual bound,
            at least the simple bound, at most `cost`).
        gap: (cost - bound) / cost (0 when equal; "Optimal" stops within `mip_rel_gap`).
        status: the HiGHS model status ("Optimal", "Time limit reached", ...).
        pieces: the virtual-device pipeline of `assignment`.
        start_cost: cost of the contiguous warm start; start_source: where it came
            from ("ideals", "dfs", "given", ...).
        time: wall seconds in all; times: per phase ("start", "build", "solve",
            "pieces"); nodes: branch-and-bound nodes; size: (columns, rows, non-zeros).
        history: [(seconds into the solve, incumbent, bound)].
    """

    cost: float
    assignment: np.ndarray
    bound: float
    gap: float
    status: str
    pieces: VirtualPieces
    start_cost: float
    start_source: str
    time: float
    times: dict = field(default_factory=dict)
    nodes: int = 0
    size: tuple = (0, 0, 0)
    history: list = field(default_factory=list)

    @property
    def proven(self) -> bool:
        """Optimal within the solve's mip_rel_gap."""
        return self.status == "Optimal" or self.gap == 0.0


def contiguous_start(problem: Problem, time_limit: float | None = None):
    """(assignment, cost, source) of a good contiguous split: the DP over ideals (its
    optimum) when it finishes within `time_limit`, else the DFS linearization sliced
    once (NumPy reference)."""
    from jaxplace.search.baselines import dfs_order, order_to_priorities

    part = decode_reference(problem, order_to_priorities(dfs_order(problem.graph)))
    best = (np.asarray(part.assignment, np.int64), float(part.cost), "dfs")
    if time_limit is None or time_limit > 0:
        try:
            res = solve_ideals(problem, partition=part, search=False, time_limit=time_limit)
        except JaxplaceError:  # too many ideals
            return best
        if res.assignment is not None and res.cost < best[1]:
            best = (np.asarray(res.assignment, np.int64), float(res.cost), "ideals")
    return best


class _Solve:
    """One HiGHS run of the model: cancellation, incumbents reported as they come."""

    def __init__(self, m: NoncontiguousModel, cancel, on_incumbent, throttle: float = 0.5):
        self.m, self.cancel, self.on_incumbent = m, cancel, on_incumbent
        self.throttle, self.last, self.history = throttle, -np.inf, []
        self.t0 = time.perf_counter()

    def _record(self, e, force: bool) -> None:
        d, now = e.data_out, time.perf_counter() - self.t0
        if not force and now - self.last < self.throttle:
            return
        self.last = now
        inc = d.mip_primal_bound * self.m.scale if np.isfinite(d.mip_primal_bound) \
            else np.inf
        bnd = max(d.mip_dual_bound * self.m.scale, self.m.z_lb) if np.isfinite(
            d.mip_dual_bound) else self.m.z_lb
        self.history.append((now, float(inc), float(bnd)))

    def on_solution(self, e) -> None:
        self._record(e, True)
        if self.on_incumbent is not None:
            sol = np.asarray(e.data_out.mip_solution)
            if len(sol) == self.m.ncol:
                self.on_incumbent(self.m.assignment(sol))

    def on_tick(self, e) -> None:
        self._record(e, False)
        if self.cancel is not None and self.cancel.is_set():
            e.interrupt()

    def run(self, *, start, time_limit, threads, mip_rel_gap, cutoff, seed,
            heuristic_effort=None):
        import highspy

        from jaxplace.highs import SCHEDULER, load_arrays, new_highs, read_mip

        m = self.m
        threads = max(1, int(threads))
        SCHEDULER.use(threads)
        h = new_highs(relax=False, time_limit=time_limit, threads=threads,
                      mip_rel_gap=mip_rel_gap, objective_bound=cutoff, scale=m.scale,
                      seed=seed)
        if heuristic_effort is not None and h.setOptionValue(
                "mip_heuristic_effort", float(heuristic_effort)) != highspy.HighsStatus.kOk:
            raise JaxplaceError(f"HiGHS rejected {heuristic_effort!r}",
                                field="heuristic_effort")
        load_arrays(h, m.arrays, m.arrays["integrality"])
        if start is not None:
            h.setSolution(m.ncol, np.arange(m.ncol, dtype=np.int32), start)
        h.cbMipImprovingSolution += self.on_solution
        h.cbMipInterrupt += self.on_tick
        self.t0 = time.perf_counter()
        try:
            h.run()
        finally:
            h.cbMipImprovingSolution -= self.on_solution
            h.cbMipInterrupt -= self.on_tick
        status = h.modelStatusToString(h.getModelStatus())
        bound, primal, _, nodes, col = read_mip(h, scale=m.scale, z_floor=m.z_lb,
                                                objective_bound=cutoff)
        self.history.append((time.perf_counter() - self.t0, float(primal), float(bound)))
        return status, bound, nodes, col


@dataclass(frozen=True)
class SolveOptions:
    """Settings of `solve_noncontiguous`.

    Attributes:
        time_limit: seconds in all (warm start included); None: DEFAULT_TIME_LIMIT.
        threads: HiGHS threads.
        mip_rel_gap: HiGHS stops within this relative gap.
        symmetry: add the symmetry-breaking rows.
        warm: "ideals" (DP over ideals, else DFS), "dfs", or "none" (no warm start).
        max_states: ideals per run kept by `virtual_pieces`.
        seed: HiGHS random seed.
        heuristic_effort: HiGHS's mip_heuristic_effort (None: its default, 0.05); 0.3
            reached Table 1's BERT-12 value in 600 s, 0.05 did not.
    """

    time_limit: float | None = None
    threads: int = 1
    mip_rel_gap: float = 1e-4
    symmetry: bool = False
    warm: str = "ideals"
    max_states: int = 256
    seed: int = 0
    heuristic_effort: float | None = 0.3


def _warm_start(problem: Problem, start, opts: SolveOptions, limit: float):
    """(assignment or None, cost, source) of the MIP start."""
    if start is not None:
        a = evaluate_partition(problem, start, contiguous=False)
        return a.assignment, a.bottleneck, "given"
    if opts.warm == "none":
        return None, math.inf, "none"
    if opts.warm not in ("ideals", "dfs"):
        raise JaxplaceError(f"must be ideals, dfs or none, got {opts.warm!r}", field="warm")
    return contiguous_start(problem, WARM_SHARE * limit if opts.warm == "ideals" else 0)


def solve_noncontiguous(problem: Problem, start=None, options: SolveOptions | None = None,
                        *, cancel=None, on_incumbent: Callable | None = None,
                        **kw) -> NoncontiguousResult:
    """The best non-contiguous split found by the IP within the time limit.

    Args:
        problem: the instance (throughput objective; CPU blocks, colocation, training).
        start: a split (assignment, or an object with `.assignment`) to start from;
            default: the best contiguous split (see `SolveOptions.warm`).
        options: `SolveOptions`; keywords override its fields (time_limit=120, ...).
        cancel: a threading.Event; once set, HiGHS stops at its next callback.
        on_incumbent: called with each improving (n,) assignment HiGHS finds.
    """
    opts = options or SolveOptions()
    if kw:
        opts = SolveOptions(**{**opts.__dict__, **kw})
    t0 = time.perf_counter()
    limit = DEFAULT_TIME_LIMIT if opts.time_limit is None else float(opts.time_limit)
    times = {}
    a0, c0, source = _warm_start(problem, start, opts, limit)
    times["start"] = time.perf_counter() - t0
    m = build_model(problem, symmetry=opts.symmetry)
    times["build"] = m.build_time
    sv = cutoff = None
    if a0 is not None and math.isfinite(c0):
        a0 = canonical_blocks(problem, a0, m.units.unit_of) if opts.symmetry else a0
        sv = start_vector(m, problem, a0, c0)
        cutoff = c0 * (1 + 1e-7) + 1e-12
    left = max(limit - (time.perf_counter() - t0), 1e-3)
    t1 = time.perf_counter()
    run = _Solve(m, cancel, on_incumbent)
    status, bound, nodes, col = run.run(start=sv, time_limit=left, threads=opts.threads,
                                        mip_rel_gap=opts.mip_rel_gap, cutoff=cutoff,
                                        seed=opts.seed,
                                        heuristic_effort=opts.heuristic_effort)
    best, cost = a0, c0
    if col is not None:
        a = m.assignment(col)
        c = evaluate_partition(problem, a, contiguous=False).bottleneck
        if c < cost:
            best, cost = a, c
    times["solve"] = time.perf_counter() - t1
    if best is None:
        raise JaxplaceError(f"no feasible split found ({status})", field="problem")
    bound = float(min(max(bound, m.z_lb), cost))
    if bound > m.z_lb * (1 + REFUTE_RTOL):
        # not on the solver's word alone: a contiguous plan is a split too
        plans = [(name, c) for name, _, c in witness_plans(problem)]
        name, c = min(plans, key=lambda t: t[1], default=("", math.inf))
        if bound > c * (1 + REFUTE_RTOL) + 1e-12:
            status = f"refuted: {status}; bound {bound:.10g} above the {name} ({c:.10g})"
            bound = float(m.z_lb)
    t1 = time.perf_counter()
    pieces = virtual_pieces(problem, best, max_states=opts.max_states)
    new = pipeline_numbering(problem, pieces)
    times["pieces"] = time.perf_counter() - t1
    times["total"] = time.perf_counter() - t0
    gap = 0.0 if cost == bound or cost <= 0 else (cost - bound) / cost
    return NoncontiguousResult(cost=float(cost), assignment=new[best], bound=bound,
                               gap=float(gap), status=status, pieces=pieces.renumbered(new),
                               start_cost=float(c0), start_source=source,
                               time=times["total"], times=times, nodes=nodes, size=m.size,
                               history=run.history)


def pipeline_numbering(problem: Problem, pieces: VirtualPieces) -> np.ndarray:
    """(nb,) new name of every block: accelerators 0.. in order of their first piece,
    CPUs from k on likewise, unused blocks after the used ones."""
    K, nb = problem.k, problem.num_blocks
    seen = list(dict.fromkeys(int(d) for d in pieces.device))
    new = np.empty(nb, dtype=np.int64)
    for lo, hi in ((0, K), (K, nb)):
        order = [b for b in seen if lo <= b < hi]
        order += [b for b in range(lo, hi) if b not in order]
        new[np.asarray(order, dtype=np.int64)] = np.arange(lo, hi)
    return new


def noncontiguous_search(req):
    """The "noncontiguous" search method: `solve_noncontiguous` as a search `Result`.

    The Result's `cost` and `partition.assignment` are the split's; `partition.order`
    lists the nodes piece by piece in pipeline order and `partition.cuts` starts the
    virtual pieces (so `partition.blocks` are the pieces, not the devices);
    `schedule` is the `VirtualPieces`; `priorities` put that order first (they do not
    decode to this split); `evaluations` counts branch-and-bound nodes; `lower_bound`
    is `noncontiguous_lower_bound`; `info` holds the IP's bound, gap and status, the
    warm start and the phase times. Method options (`jp.search(..., key=value)`):
    `start` (a split to start from) and the fields of `SolveOptions`.
    """
    from jaxplace.search.baselines import order_to_priorities
    from jaxplace.search.result import History, Result
    from jaxplace.search.stop import Progress

    problem = req.problem
    opts = dict(req.options)
    start = opts.pop("start", None)
    if start is None and req.seeds is not None and len(req.seeds):
        start = min((decode_reference(problem, x) for x in req.seeds), key=lambda p: p.cost)
    limit = req.stop.time_limit
    if limit is not None:
        limit = max(limit - (time.perf_counter() - req.start), 1e-3)
    topo = order_to_priorities(problem.graph.topo_order)

    def report(a):
        if req.observer is None:
            return
        c = evaluate_partition(problem, a, contiguous=False).bottleneck
        req.observer(Progress(0, c, topo, time.perf_counter() - req.start, "noncontiguous",
                              Partition(problem.graph.topo_order, (), a, c)))

    try:
        opts = SolveOptions(**{"time_limit": limit, "seed": req.seed, **opts})
    except TypeError as exc:
        raise JaxplaceError(f"unknown option: {exc}", field="options") from None
    t0 = time.perf_counter() - req.start
    r = solve_noncontiguous(problem, start, opts, cancel=req.stop.cancel,
                            on_incumbent=report)
    h = np.asarray(r.history, dtype=np.float64).reshape(-1, 3)
    history = History(np.zeros(len(h), np.int64), h[:, 0] + t0 + r.times["start"]
                      + r.times["build"], np.minimum.accumulate(h[:, 1]))
    part = Partition(r.pieces.order, r.pieces.cuts, r.assignment, r.cost)
    info = {"bound": r.bound, "gap": r.gap, "status": r.status, "nodes": r.nodes,
            "start_cost": r.start_cost, "start_source": r.start_source,
            "num_pieces": r.pieces.num_pieces, "pieces_minimal": r.pieces.minimal,
            "model_size": r.size, "times": r.times}
    return Result(cost=r.cost, partition=part, priorities=order_to_priorities(
                  r.pieces.order), evaluations=r.nodes,
                  wall_time=time.perf_counter() - req.start, history=history,
                  method="noncontiguous", lower_bound=noncontiguous_lower_bound(problem),
                  interrupted=r.status != "Optimal", info=info, schedule=r.pieces)


__all__ = ["DEFAULT_TIME_LIMIT", "NoncontiguousModel", "NoncontiguousResult",
           "PlacementUnits", "SolveOptions", "build_model", "canonical_blocks",
           "contiguous_start", "noncontiguous_lower_bound", "noncontiguous_search",
           "pipeline_numbering", "placement_units", "solve_noncontiguous", "start_vector"]
