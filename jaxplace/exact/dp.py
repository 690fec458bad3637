"""Exact contiguous splits by dynamic programming over ideals (Tarnawski, Phanishayee,
Devanur, Mahajan and Nina Paravecino, "Efficient Algorithms for Device Placement of DNN
Graph Operators", NeurIPS 2020, section 5.1.1).

dp[J][a][c] is the smallest max-load of a split of the ideal J into pieces on at most a
accelerators and c CPUs; a piece is J \\ I for an ideal I subset of J:

    dp[J][a][c] = min_I min( max(dp[I][a-1][c], acc(J \\ I)), max(dp[I][a][c-1], cpu(J \\ I)) )

with acc = +inf over the hard capacity or on a node unsupported on accelerators, and
cpu = summed `cpu_latency` (no transfers). The ideals are those of the atom DAG
(`atoms`): colocation classes and training graphs (each forward piece takes its
backward nodes along) are handled by the placement units, so every chain of ideals is
exactly a partition that `objectives.throughput.cost.evaluate_partition` accepts, and conversely.
Backward units without a forward node (orphans, free to go anywhere) are left out of
the ideals and handled by a per-piece relaxation (`orphans`): the DP then runs over the
forward part's ideals, as Tarnawski et al.'s does.

What makes it fast (pull form: J takes the min over its candidate I's at once):
- an upper bound U (a known partition's cost, by default the default search's) prunes:
  a piece costs at least its work (accelerator) or its CPU latency, so the candidate
  I's of J lie in one window of the ideals sorted by work (by CPU latency for CPU
  pieces), a slice of column-major tables; pieces costing more than U are dropped;
- a state (I, a, c) is kept only if dp <= U and what is left, V \\ I, can still fit the
  remaining devices: sum over the atoms left of min(work, CPU latency) <= devices * U;
- I subset of J is tested as "I holds none of J's ready atoms" (a few slices);
- piece costs come from per-ideal sums and the tensors cut by J only (`lattice`);
- the min over I and over all (a, c) states is one NumPy reduction per J.
Memory is O(N (A + T + states)) for N ideals, A atoms and T tensor groups.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.exact.atoms import Atoms, build_atoms
from jaxplace.exact.lattice import (
    DEFAULT_MAX_IDEALS,
    Lattice,
    build_lattice,
    count_ideals,
    enumerate_ideals,
)
from jaxplace.exact.orphans import OrphanTables, repair, split_orphans
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.problem import Problem

#: Relative slack on the upper bound used for pruning (float64 rounding of cost sums).
PRUNE_RTOL = 1e-9


@dataclass
class IdealsResult:
    """The outcome of `solve_ideals`.

    Attributes:
        cost: the optimum over contiguous splits (checked with evaluate_partition); inf
            when no split costs at most `upper_bound` (then OPT > upper_bound) or none
            is feasible.
        assignment: (n,) int64 block per node of an optimal split (accelerators 0..k-1
            in pipeline order, CPUs k..), or None.
        status: "optimal", "above upper bound", "infeasible", "time limit" or "gap"
            (orphan relaxation not tight: `assignment` is the best split found, `cost`
            its cost, `lower_bound` the relaxation's value; see `orphans`).
        finished: the DP ran to the end (the cost is proven).
        upper_bound: the bound that pruned the DP (inf: none).
        num_ideals, num_atoms, num_units: sizes; pieces: (I, J) pairs whose cost was
            computed; times: seconds per phase ("atoms", "ideals", "bound", "tables",
            "dp", "total").
        lower_bound: a proven lower bound on OPT: `cost` when optimal, the pruning bound
            when "above upper bound", inf when infeasible, the relaxation's value on a
            "gap", nan when unfinished.
        num_orphans: orphan backward atoms handled by the relaxation (0: none, or the
            full DP was used).
    """

    cost: float
    assignment: np.ndarray | None
    status: str
    finished: bool
    upper_bound: float
    num_ideals: int
    num_atoms: int
    num_units: int
    pieces: int = 0
    times: dict = field(default_factory=dict)
    lower_bound: float = math.nan
    num_orphans: int = 0


@dataclass(frozen=True)
class _Config:
    K: int  # accelerators usable
    C: int  # CPUs usable
    ub: float  # pruning bound, slack included (inf: none)
    cap: float  # capacity limit (inf: none)
    memory: float | None  # overflow budget M in size units
    bandwidth: float
    total_easy: float  # sum over atoms of min(work, cpu latency)
    total_bad: int  # unsupported nodes
    total_forced: float  # CPU latency of the atoms holding unsupported nodes
    total_sup: float  # work of the other atoms
    max_ratio: float  # max work / cpu latency over those (what a CPU unit of time saves)
    deadline: float
    orphans: OrphanTables | None = None  # the orphan relaxation's extra piece costs


class _Tables:
    """The DP's mutable arrays (owned by one `_run` call)."""

    def __init__(self, N: int, K: int, C: int):
        shape = (N, K + 1, C + 1)
        self.dp = np.full(shape, np.inf)  # (N, K+1, C+1) float64 value
        self.use = np.full(shape, np.inf)  # dp where the state is still useful
        self.parent = np.zeros(shape, dtype=np.int32)  # I of the last piece
        self.cpu_piece = np.zeros(shape, dtype=bool)  # last piece on a CPU
        self.alive_acc = np.zeros(N, dtype=bool)  # some useful state with a < K
        self.alive_cpu = np.zeros(N, dtype=bool)  # some useful state with c < C
        self.pieces = 0


def _acc_costs(lat: Lattice, cfg: _Config, t: _Tables, j: int):
    """Candidate I's of J = j for an accelerator piece and acc(J \\ I); pruned."""
    lo = int(np.searchsorted(lat.work, lat.work[j] - cfg.ub, "left"))
    m = t.alive_acc[lo:j].copy()
    if cfg.cap < math.inf:
        m &= lat.param[lo:j] >= lat.param[j] - cfg.cap
    if cfg.total_bad:
        m &= lat.bad[lo:j] == lat.bad[j]
    for r in lat.ready_of(j):
        m &= ~lat.member_t[r, lo:j]
    idx = lo + np.flatnonzero(m)
    if not len(idx):
        return idx, idx.astype(np.float64)
    f = lat.work[j] - lat.work[idx] + lat.cut[idx]
    tj = lat.cut_of(j)
    if len(tj):
        cI = lat.count_t[np.ix_(tj, idx)]  # (F, B)
        cJ = lat.count_t[tj, j][:, None]
        f += lat.size[tj] @ ((cI != cJ).astype(np.float64) - (cI > 0))
    if cfg.memory is not None:
        f += np.maximum(0.0, lat.param[j] - lat.param[idx] - cfg.memory) / cfg.bandwidth
    if cfg.orphans is not None:
        f += cfg.orphans.extra(j, idx)
    keep = f <= cfg.ub
    return idx[keep], f[keep]


def _cpu_costs(lat: Lattice, cfg: _Config, t: _Tables, j: int, sorted_cpu: np.ndarray):
    """Candidate I's of J = j for a CPU piece and cpu(J \\ I); pruned."""
    lo = int(np.searchsorted(sorted_cpu, lat.cpu[j] - cfg.ub, "left"))
    hi = int(np.searchsorted(sorted_cpu, lat.cpu[j], "right"))
    idx = lat.cpu_order[lo:hi]
    idx = idx[(idx < j) & t.alive_cpu[idx]]
    if len(idx):
        m = np.ones(len(idx), dtype=bool)
        for r in lat.ready_of(j):
            m &= ~lat.member_t[r, idx]
        idx = idx[m]
    f = lat.cpu[j] - lat.cpu[idx]
    keep = f <= cfg.ub
    return idx[keep], f[keep]


def _relax(t: _Tables, j: int, idx: np.ndarray, f: np.ndarray, cpu: bool) -> None:
    """dp[j] from the pieces J \\ I for I in idx costing f (one kind of device)."""
    if not len(idx):
        return
    t.pieces += len(idx)
    src = t.use[idx, :, :-1] if cpu else t.use[idx, :-1, :]  # (B, .., ..)
    shape = src.shape[1:]
    cand = np.maximum(src.reshape(len(idx), -1), f[:, None])  # (B, S)
    arg = cand.argmin(axis=0)
    best = cand[arg, np.arange(cand.shape[1])].reshape(shape)
    dst = (slice(None), slice(1, None)) if cpu else (slice(1, None), slice(None))
    cur = t.dp[j][dst]
    better = best < cur
    cur[better] = best[better]
    t.parent[j][dst][better] = idx[arg.reshape(shape)[better]]
    t.cpu_piece[j][dst][better] = cpu


def _static_ok(lat: Lattice, cfg: _Config) -> np.ndarray:
    """(N, K+1, C+1) bool: can the atoms outside ideal j still fit the devices left,
    each holding at most U of work or CPU latency? (A CPU budget b takes at most
    b * max(work / cpu) work off the accelerators; unsupported nodes need a CPU.)"""
    K, C, ub = cfg.K, cfg.C, cfg.ub
    acc = (K - np.arange(K + 1, dtype=np.float64))[None, :, None]
    cpu = (C - np.arange(C + 1, dtype=np.float64))[None, None, :]
    ok = np.ones((lat.num_ideals, K + 1, C + 1), dtype=bool)
    ok[:, :, C] &= (cfg.total_bad == lat.bad)[:, None]
    if not math.isfinite(ub):
        return ok
    col = (slice(None), None, None)
    with np.errstate(invalid="ignore"):
        rest = cfg.total_easy - lat.easy
        ok &= rest[col] <= (acc + cpu) * ub + 1e-12
        budget = cpu * ub - (cfg.total_forced - lat.forced)[col]
        ok &= budget >= -1e-12
        spare = np.where(budget > 0, budget * cfg.max_ratio, 0.0)
        ok &= (cfg.total_sup - lat.sup_work)[col] - spare <= acc * ub + 1e-12
    return ok


def _finalize(cfg: _Config, t: _Tables, j: int, static_ok: np.ndarray) -> None:
    """Mark the useful states of ideal j: dp <= U and `_static_ok`."""
    v = t.dp[j]
    ok = (v <= cfg.ub) & static_ok[j]
    t.use[j] = np.where(ok, v, np.inf)
    t.alive_acc[j] = ok[:cfg.K].any()
    t.alive_cpu[j] = ok[:, :cfg.C].any()


def _run(lat: Lattice, cfg: _Config) -> tuple[_Tables, bool]:
    """Fill the DP in canonical order; returns (tables, finished before the deadline)."""
    N = lat.num_ideals
    t = _Tables(N, cfg.K, cfg.C)
    static_ok = _static_ok(lat, cfg)
    sorted_cpu = lat.cpu[lat.cpu_order]
    t.dp[0] = 0.0
    _finalize(cfg, t, 0, static_ok)
    for j in range(1, N):
        if j % 256 == 0 and time.perf_counter() > cfg.deadline:
            return t, False
        if cfg.K:
            _relax(t, j, *_acc_costs(lat, cfg, t, j), cpu=False)
        if cfg.C:
            _relax(t, j, *_cpu_costs(lat, cfg, t, j, sorted_cpu), cpu=True)
        _finalize(cfg, t, j, static_ok)
    return t, True


def _pieces(t: _Tables, N: int, K: int, C: int) -> list[tuple[int, int, bool]]:
    """(I, J, on CPU) of every piece of the optimal chain, in pipeline order."""
    j, a, c = N - 1, K, C
    pieces = []
    while j != 0:
        i, on_cpu = int(t.parent[j, a, c]), bool(t.cpu_piece[j, a, c])
        pieces.append((i, j, on_cpu))
        j, a, c = (i, a, c - 1) if on_cpu else (i, a - 1, c)
    return pieces[::-1]


def _assignment(problem: Problem, atoms: Atoms, lat: Lattice, t: _Tables,
                K: int, C: int) -> np.ndarray:
    """Walk the parents back from the full ideal; blocks numbered in pipeline order."""
    block = np.empty(atoms.num_atoms, dtype=np.int64)
    n_acc = n_cpu = 0
    for i, j, on_cpu in _pieces(t, lat.num_ideals, K, C):
        piece = np.flatnonzero(lat.member_t[:, j] & ~lat.member_t[:, i])
        if on_cpu:
            block[piece], n_cpu = problem.k + n_cpu, n_cpu + 1
        else:
            block[piece], n_acc = n_acc, n_acc + 1
    return block[atoms.atom_of]


def _default_upper_bound(problem: Problem, upper_bound, partition, search: bool) -> float:
    """The pruning bound: the smaller of `upper_bound` and the given partition's cost,
    else the default search's cost (when `search`), else inf."""
    ub = math.inf if upper_bound is None else float(upper_bound)
    if partition is not None:
        a = getattr(partition, "assignment", partition)
        ub = min(ub, evaluate_partition(problem, a).bottleneck)
    elif upper_bound is None and search:
        from jaxplace.search import search as run_search

        ub = float(run_search(problem, progress=False).cost)
    if math.isnan(ub):
        raise JaxplaceError("must be a number", field="upper_bound")
    return ub


def _easy_per_atom(atoms: Atoms, cpus: int) -> np.ndarray:
    """(A,) the cheapest an atom can cost anywhere: work on an accelerator (inf when it
    holds an unsupported node), or CPU latency (inf without CPUs)."""
    acc = np.where(atoms.bad > 0, np.inf, atoms.work)
    return np.minimum(acc, atoms.cpu if cpus else np.inf)


def _max_ratio(atoms: Atoms) -> float:
    """max work / CPU latency over the supported atoms with work (inf if one has no CPU
    latency; 0 if none has work)."""
    w = np.where(atoms.bad > 0, 0.0, atoms.work)
    has = w > 0
    if not has.any():
        return 0.0
    c = atoms.cpu[has]
    return math.inf if (c <= 0).any() else float((w[has] / c).max())


#: How `solve_ideals` treats orphan backward atoms (see `orphans`).
ORPHAN_MODES = ("auto", "relax", "full")


#: Work limit of `count_problem_ideals` (sum over levels of ideals x (atoms + edges),
#: see `enumerate_ideals`): about 0.3 s on one core; a deterministic count, so the
#: planner's decision does not depend on the machine's load.
COUNT_MAX_WORK = 3e7


def least_forward_atoms(problem: Problem) -> int:
    """A lower bound on the forward atoms `count_problem_ideals` counts over, in
    O(n): a placement unit with work that holds a forward node is never merged into
    another (`atoms`), so it is an atom of its own, and a forward one."""
    g = problem.graph
    units = g.units
    unit_of = np.asarray(units.unit_of)
    busy = np.bincount(unit_of, weights=g.work, minlength=units.num_units) > 0
    bwd = g.node_attrs.get("is_backward")
    fwd = np.ones(units.num_units, bool)
    if bwd is not None:
        fwd[:] = False
        fwd[unit_of[~np.asarray(bwd, dtype=bool)]] = True
    return int((busy & fwd).sum())


def count_problem_ideals(problem: Problem, max_ideals: int = DEFAULT_MAX_IDEALS,
                         merge: bool = True, max_work: float | None = COUNT_MAX_WORK,
                         deadline: float | None = None) -> int | None:
    """The number of ideals `solve_ideals` enumerates first (those of the forward
    atoms when the problem has orphan backward atoms), or None when above `max_ideals`
    or when counting them would cost more than `max_work` or pass `deadline` (a
    perf_counter time; give one only under a user's time limit, see
    `enumerate_ideals`). A cheap fact: costs at most about `max_ideals` x atoms bytes
    and `max_work`."""
    if max_work is not None:
        # every level of the enumeration holds an ideal, so counting over A atoms
        # costs at least A^2 (`enumerate_ideals`): refuse before building the atoms
        least = least_forward_atoms(problem)
        if least * (least + 1) > max_work:
            return None
    atoms = build_atoms(problem, merge=merge)
    split = split_orphans(problem, atoms)
    try:
        return count_ideals(atoms if split is None else split.forward, max_ideals,
                            max_work, deadline)
    except JaxplaceError as exc:
        if exc.field != "max_ideals":
            raise
        return None


def solve_ideals(problem: Problem, upper_bound: float | None = None, *, partition=None,
                 search: bool = True, max_ideals: int = DEFAULT_MAX_IDEALS,
                 time_limit: float | None = None, merge: bool = True,
                 orphans: str = "auto") -> IdealsResult:
    """The optimal contiguous split of `problem` by the DP over ideals.

    Optimal over the partitions `objectives.throughput.cost.evaluate_partition` accepts (acyclic
    quotient on the forward graph, one piece per device, colocation, capacity,
    unsupported nodes on CPUs); non-contiguous splits are not considered.

    Args:
        problem: the instance (CPU blocks, colocation and training graphs included).
        upper_bound: prune with this bound (a split costing more is never built). If
            OPT exceeds it, the result says "above upper bound" and cost is inf.
        partition: a known split (assignment, `Partition`, ...): its cost bounds too.
        search: without `upper_bound` or `partition`, run `jaxplace.search.search`
            first for a bound (False: no pruning bound).
        max_ideals: refuse graphs with more ideals (JaxplaceError with the count).
        time_limit: seconds for the DP phase; stopping early gives status "time limit".
        merge: merge cost-free satellite units first (exact; see `atoms`).
        orphans: backward atoms with no forward node (no ordering edge at all):
            "auto" runs the DP over the forward atoms' ideals with the orphan relaxation
            (`jaxplace.exact.orphans`), proving optimality when its repaired split meets
            its value, else falls back to the full DP when forward ideals x 2^orphans
            fits `max_ideals` (else status "gap"); "relax" stops after the relaxation;
            "full" enumerates the ideals with the orphans as isolated atoms.
    """
    # its optimum is the identical-device model's: on another objective it would be a
    # false proof
    problem.objective_impl.require("identical_devices", field="problem")
    if orphans not in ORPHAN_MODES:
        raise JaxplaceError(f"must be one of {', '.join(ORPHAN_MODES)}, got {orphans!r}",
                            field="orphans")
    times, t0 = {}, time.perf_counter()
    atoms = build_atoms(problem, merge=merge)
    split = None if orphans == "full" else split_orphans(problem, atoms)
    times["atoms"] = time.perf_counter() - t0
    ideals = enumerate_ideals(atoms if split is None else split.forward, max_ideals)
    times["ideals"] = time.perf_counter() - t0 - times["atoms"]
    t1 = time.perf_counter()
    ub = _default_upper_bound(problem, upper_bound, partition, search)
    known = None
    if partition is not None:
        known = evaluate_partition(problem, getattr(partition, "assignment", partition))
    times["bound"] = time.perf_counter() - t1
    deadline = math.inf if time_limit is None else time.perf_counter() + time_limit
    if split is None:
        out = _solve(problem, atoms, ideals, ub, deadline, times)
    else:
        out = _solve(problem, atoms, ideals, ub, deadline, times, split, known)
        m, N = len(split.orphans), out.num_ideals
        if (out.status == "gap" and orphans == "auto" and m < 60
                and N * 2 ** m <= max_ideals):
            times_full: dict = {}
            full = _solve(problem, atoms, enumerate_ideals(atoms, max_ideals),
                          min(ub, out.cost), deadline, times_full)
            full.times = times | {f"full {k}": v for k, v in times_full.items()}
            if full.status == "above upper bound" and out.cost <= ub:
                # nothing below the repaired split, which is within the bound
                full.cost, full.assignment, full.status = out.cost, out.assignment, "optimal"
                full.lower_bound = out.cost
            out = full
    times["total"] = time.perf_counter() - t0
    out.times = times | out.times
    return out


def _solve(problem: Problem, atoms: Atoms, ideals: np.ndarray, ub: float, deadline: float,
           times: dict, split=None, known=None) -> IdealsResult:
    """The DP over `ideals` (of `atoms`, or of `split.forward` with the relaxation)."""
    t1 = time.perf_counter()
    dag = atoms if split is None else split.forward
    lat = build_lattice(dag, ideals, _easy_per_atom(dag, problem.cpus))
    tabs = None if split is None else OrphanTables(split, lat.member_t)
    times["tables"] = time.perf_counter() - t1
    A = dag.num_atoms
    K, C = min(problem.k, A), min(problem.cpus, A)
    slack = ub * (1 + PRUNE_RTOL) + 1e-12 if math.isfinite(ub) else math.inf
    cfg = _Config(K, C, slack, problem.capacity_limit, problem.memory, problem.bandwidth,
                  float(lat.easy[-1]), int(lat.bad[-1]), float(lat.forced[-1]),
                  float(lat.sup_work[-1]), _max_ratio(dag), deadline, tabs)
    t1 = time.perf_counter()
    tables, finished = _run(lat, cfg)
    times["dp"] = time.perf_counter() - t1
    out = IdealsResult(math.inf, None, "time limit", finished, ub, lat.num_ideals,
                       atoms.num_atoms, problem.graph.units.num_units, tables.pieces, times,
                       num_orphans=0 if split is None else len(split.orphans))
    if finished and split is None:
        _conclude(problem, atoms, lat, tables, out, K, C)
    elif finished:
        _conclude_relaxed(problem, tabs, lat, tables, out, K, C, known)
    return out


def _conclude(problem: Problem, atoms: Atoms, lat: Lattice, t: _Tables,
              out: IdealsResult, K: int, C: int) -> None:
    """Fill `out` from a finished DP, checking the split with evaluate_partition."""
    value = float(t.dp[-1, K, C])
    if not math.isfinite(value):
        out.status = "above upper bound" if math.isfinite(out.upper_bound) else "infeasible"
        out.lower_bound = out.upper_bound if math.isfinite(out.upper_bound) else math.inf
        return
    a = _assignment(problem, atoms, lat, t, K, C)
    cost = evaluate_partition(problem, a).bottleneck
    if not np.isclose(cost, value, rtol=1e-7, atol=1e-9):
        raise RuntimeError(f"DP value {value!r} differs from the split's cost {cost!r}")
    out.cost, out.assignment, out.status, out.lower_bound = cost, a, "optimal", cost


def _conclude_relaxed(problem: Problem, tabs: OrphanTables, lat: Lattice, t: _Tables,
                      out: IdealsResult, K: int, C: int, known) -> None:
    """Fill `out` from the finished relaxed DP: its value bounds OPT from below, the
    repaired split (or the known one) from above; optimal when they meet."""
    value = float(t.dp[-1, K, C])
    split = tabs.split
    if not problem.cpus and split.bad_orphans:  # an orphan that only a CPU may hold
        value = math.inf
    if not math.isfinite(value):
        out.status = "above upper bound" if math.isfinite(out.upper_bound) else "infeasible"
        out.lower_bound = out.upper_bound if math.isfinite(out.upper_bound) else math.inf
        return
    a = repair(problem, tabs, _pieces(t, lat.num_ideals, K, C), lat.member_t, problem.k)
    cost = evaluate_partition(problem, a).bottleneck
    if known is not None and known.bottleneck < cost:
        a, cost = known.assignment, known.bottleneck
    if cost < value * (1 - 1e-7) - 1e-9:
        raise RuntimeError(f"relaxed DP value {value!r} exceeds a split's cost {cost!r}")
    out.lower_bound = min(value, cost)
    out.cost, out.assignment = cost, a
    out.status = "optimal" if cost <= value * (1 + PRUNE_RTOL) + 1e-12 else "gap"
