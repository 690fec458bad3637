"""Block costs of a given partition, the acyclic-quotient check, and the simple bound
of throughput on identical accelerators (`throughput_lower_bound`).

f(S) = io_in(S) + work(S) + overflow(S) + io_out(S)  (MTPP, Archer et al., ICML 2024),
each tensor paid at most once leaving S and at most once entering S.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.api import simple_lower_bound
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges, sorted_unique, unique_pairs


@dataclass(frozen=True, eq=False)
class PartitionCost:
    """Per-block costs of a partition. Arrays are (k,) float64, indexed by block."""

    assignment: np.ndarray  # (n,) int64 block of every node
    work: np.ndarray  # (k,) sum of work
    param: np.ndarray  # (k,) sum of size_param
    io_in: np.ndarray  # (k,) incoming tensor sizes / B
    io_out: np.ndarray  # (k,) outgoing tensor sizes / B
    overflow: np.ndarray  # (k,) max(0, param - M) / B
    total: np.ndarray  # (k,) f(block); +inf where param exceeds the capacity
    block_order: np.ndarray  # (k,) blocks in a topological order of the quotient
    num_accel: int | None = None  # blocks 0..num_accel-1 are accelerators, the rest CPUs

    @property
    def device_types(self) -> list[str]:
        """"accel" or "cpu" per block."""
        k = len(self.total) if self.num_accel is None else self.num_accel
        return ["accel" if b < k else "cpu" for b in range(len(self.total))]

    @property
    def bottleneck(self) -> float:
        """max over blocks of f(block): the pipeline's time per sample."""
        return float(self.total.max())

    @property
    def cost(self) -> float:
        """The objective's value: the bottleneck."""
        return self.bottleneck

    @property
    def feasible(self) -> bool:
        return bool(np.isfinite(self.bottleneck))

    @property
    def num_blocks(self) -> int:
        """Blocks holding at least one node."""
        return int(len(np.unique(self.assignment)))

    def stage_ids(self) -> dict[int, int]:
        """Block -> its number in result files and stage tables: the non-empty
        accelerator blocks numbered 0.. in pipeline order, the CPU blocks from
        `num_accel` on, also in pipeline order."""
        k = len(self.total) if self.num_accel is None else self.num_accel
        used = [int(b) for b in self.block_order if np.any(self.assignment == b)]
        acc = [b for b in used if b < k]
        cpu = [b for b in used if b >= k]
        return {b: i for i, b in enumerate(acc)} | {b: k + i for i, b in enumerate(cpu)}


def check_assignment(problem: Problem, assignment) -> np.ndarray:
    """Validate a block index per node; returns it as (n,) int64."""
    n, k = problem.n, problem.num_blocks
    if hasattr(assignment, "assignment"):  # a Partition or a PartitionCost
        assignment = assignment.assignment
    a = np.asarray(assignment)
    if a.shape != (n,):
        raise JaxplaceError(f"has shape {a.shape}, expected ({n},)", field="assignment")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            raise JaxplaceError("must hold integer block indices", field="assignment")
    elif a.dtype.kind not in "iu":
        raise JaxplaceError(f"must hold integer block indices, got {a.dtype}",
                            field="assignment")
    a = a.astype(np.int64)
    bad = np.flatnonzero((a < 0) | (a >= k))
    if len(bad):
        i = int(bad[0])
        raise JaxplaceError(
            f"node {problem.graph.label(i)} is in block {a[i]}, outside 0..{k - 1}",
            field="assignment")
    return a


def check_placement(problem: Problem, a: np.ndarray) -> None:
    """Colocation classes share a block; unsupported nodes sit on CPU blocks."""
    g = problem.graph
    color = g.node_attrs.get("color_class")
    if color is not None:
        first = {}
        for v in np.flatnonzero(np.asarray(color) >= 0):
            c = int(color[v])
            u = first.setdefault(c, int(v))
            if a[u] != a[v]:
                raise JaxplaceError(
                    f"nodes {g.label(u)} and {g.label(int(v))} share color class {c} but "
                    f"are in blocks {a[u]} and {a[v]}", field="assignment")
    bad = np.flatnonzero(~problem.supported & (a < problem.k))
    if len(bad):
        v = int(bad[0])
        raise JaxplaceError(f"node {g.label(v)} is not supported on an accelerator but is "
                            f"in accelerator block {a[v]}", field="assignment")


def quotient_order(problem: Problem, a: np.ndarray) -> np.ndarray:
    """A topological order of the blocks; raises naming an edge on a quotient cycle.

    Only ordering edges count (for training graphs, the forward ones)."""
    g, k = problem.graph, problem.num_blocks
    edges = ordering_edges(g)
    bu, bv = a[edges[:, 0]], a[edges[:, 1]]
    cross = bu != bv
    qe = unique_pairs(bu[cross], bv[cross])
    indeg = np.bincount(qe[:, 1], minlength=k) if len(qe) else np.zeros(k, dtype=np.int64)
    succ = [[] for _ in range(k)]
    for x, y in qe:
        succ[x].append(int(y))
    ready = [b for b in range(k) if indeg[b] == 0]
    order = []
    while ready:
        b = ready.pop(0)
        order.append(b)
        for c in succ[b]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if len(order) < k:
        # Leftover blocks all have a leftover predecessor: walking back finds a cycle.
        left = np.ones(k, dtype=bool)
        left[order] = False
        pred = {}
        for x, y in qe:
            if left[x] and left[y]:
                pred.setdefault(int(y), int(x))
        y, seen = int(np.flatnonzero(left)[0]), set()
        while y not in seen:
            seen.add(y)
            y = pred[y]
        x = pred[y]
        u, v = edges[np.flatnonzero(cross & (bu == x) & (bv == y))[0]]
        raise JaxplaceError(
            f"blocks form a cycle: edge {g.label(int(u))} -> {g.label(int(v))} goes from "
            f"block {x} to block {y}, and block {y} reaches block {x}", field="assignment")
    return np.asarray(order, dtype=np.int64)


def evaluate_partition(problem: Problem, assignment, *,
                       contiguous: bool = True, devices=None):
    """The float64 reference costs of `assignment` under the problem's objective
    (`jaxplace.objectives`); the returned object's `cost` is the objective's value.

    Throughput on identical accelerators: `partition_costs` (a `PartitionCost`, whose
    `bottleneck` is its cost). On unequal devices, blocks are pipeline stages in index
    order and `devices[s]` is stage s's device (default: the Partition's `devices`,
    else the cluster's order); a `objectives.throughput_unequal.StageCosts`. Latency: the schedule
    of the ops on their given devices (`jaxplace.objectives.latency.objective`).
    """
    return problem.objective_impl.evaluate_partition(problem, assignment,
                                                     contiguous=contiguous, devices=devices)


def partition_costs(problem: Problem, assignment, *, contiguous: bool = True
                    ) -> PartitionCost:
    """Per-block costs and the bottleneck of `assignment` (a block index per node) on
    identical accelerators (the throughput objective).

    Raises JaxplaceError when the assignment is malformed, splits a colocation class,
    puts an unsupported node on an accelerator, or its quotient graph has a cycle
    (naming an offending edge). Block indices need not be in topological order.
    Blocks k.. (problem.cpus of them) are CPUs: they cost the sum of `cpu_latency` and
    pay no transfers; accelerator blocks pay transfers to and from every other block.

    `contiguous=False` accepts non-contiguous splits (Tarnawski et al., NeurIPS 2020,
    section 5.2): no acyclicity requirement, the same costs, capacity and colocation;
    `block_order` is then a topological order of the quotient when it has one, else
    the blocks in order of their first node in a topological order of the graph.
    """
    _check_throughput(problem, "partition_costs")
    g, k, B = problem.graph, problem.num_blocks, problem.bandwidth
    a = check_assignment(problem, assignment)
    check_placement(problem, a)
    block_order = quotient_order(problem, a) if contiguous else _loose_order(problem, a)
    work = np.bincount(a, weights=g.work, minlength=k)
    param = np.bincount(a, weights=g.size_param, minlength=k)
    io_in = np.zeros(k)
    io_out = np.zeros(k)
    if g.num_tensors:
        t_of = np.repeat(np.arange(g.num_tensors), np.diff(g.tensor_ptr))
        pairs = unique_pairs(t_of, a[g.tensor_consumers])
        t, b = pairs[:, 0], pairs[:, 1]
        prod_block = a[g.tensor_producer[t]]
        away = b != prod_block
        np.add.at(io_in, b[away], g.tensor_size[t[away]] / B)
        leaving = sorted_unique(t[away])
        np.add.at(io_out, a[g.tensor_producer[leaving]], g.tensor_size[leaving] / B)
    overflow = np.zeros(k)
    if problem.memory is not None:
        overflow = np.maximum(0.0, param - problem.memory) / B
    cpu = np.arange(k) >= problem.k
    if cpu.any():
        work = np.where(cpu, np.bincount(a, weights=problem.cpu_latency, minlength=k), work)
        io_in[cpu] = io_out[cpu] = overflow[cpu] = 0.0
    total = io_in + work + overflow + io_out
    if problem.capacity is not None:
        total = np.where((param > problem.capacity_limit) & ~cpu, np.inf, total)
    return PartitionCost(a, work, param, io_in, io_out, overflow, total, block_order,
                         problem.k)


def _loose_order(problem: Problem, a: np.ndarray) -> np.ndarray:
    """The blocks in a topological order of the quotient, or when it has a cycle, in
    order of their first node in the graph's topological order (unused blocks last)."""
    try:
        return quotient_order(problem, a)
    except JaxplaceError:
        k = problem.num_blocks
        first = np.full(k, problem.n, dtype=np.int64)
        pos = np.empty(problem.n, dtype=np.int64)
        pos[problem.graph.topo_order] = np.arange(problem.n)
        np.minimum.at(first, a, pos)
        return np.argsort(first, kind="stable").astype(np.int64)


def _check_throughput(problem: Problem, what: str) -> None:
    """JaxplaceError unless the identical-accelerator model is the problem's objective
    (a cost computed under another objective would be a wrong number)."""
    obj = problem.objective_impl  # resolved once per problem
    if not obj.supports("identical_devices"):
        raise JaxplaceError(f"{what} computes throughput on identical accelerators, not "
                            f"{obj.label}; use jaxplace.evaluate_partition or "
                            "jaxplace.objectives.objective_of(problem)", field="objective")


def throughput_lower_bound(problem: Problem) -> float:
    """L = max(max_v work(v), sum_v work(v) / k) <= OPT (communication ignored), on
    identical accelerators: the throughput objective's `lower_bound`, and the closed form
    the bounds on HiGHS start from. Other objectives: JaxplaceError (their own bound is
    `jaxplace.simple_lower_bound`, which dispatches to the problem's objective).

    With CPU blocks or colocation, per placement unit u: m_u = min(accelerator work
    (inf if unsupported), CPU latency (inf without CPUs)), and L = max(max_u m_u,
    sum_u m_u / (k + cpus)): every unit costs at least m_u wherever it goes.
    """
    _check_throughput(problem, "throughput_lower_bound")
    g = problem.graph
    if problem.cpus == 0 and g.units.trivial and problem.supported.all():
        w = g.work
        return float(max(w.max(), w.sum() / problem.k))
    units = g.units
    U = units.num_units
    acc = np.bincount(units.unit_of, weights=g.work, minlength=U)
    bad = np.bincount(units.unit_of, weights=~problem.supported, minlength=U) > 0
    acc = np.where(bad, np.inf, acc)
    cpu = np.bincount(units.unit_of, weights=problem.cpu_latency, minlength=U) \
        if problem.cpus else np.full(U, np.inf)
    m = np.minimum(acc, cpu)
    return float(max(m.max(), m.sum() / problem.num_blocks))


#: `simple_lower_bound` here is `jaxplace.simple_lower_bound` (`objectives.api`): the
#: problem's objective's own closed-form bound, the one dispatcher.
__all__ = ["PartitionCost", "check_assignment", "check_placement", "evaluate_partition",
           "partition_costs", "quotient_order", "simple_lower_bound",
           "throughput_lower_bound"]
