"""Scale-free node and graph features of a Problem, padded for the policy GNN.

Every time-like quantity (work, tensor sizes / B, CPU latency) is divided by the
problem's simple lower bound L (`jaxplace.simple_lower_bound`), parameters by the
per-block memory reference (capacity, else memory, else total / k), counts and
positions by n. Multiplying all times by a constant, or all parameter sizes together
with the memory and capacity, leaves every feature unchanged.

Structure for message passing: directed edges (`src`, `dst`), both directions are
taken by the model, and tensor memberships (`mem_node`, `mem_tensor`: a tensor is a
hyperedge of its producer and consumers). All padded with sentinels: node index N,
tensor index T (`segment_sum` drops out-of-range segments; gathers use a zero row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import simple_lower_bound
from jaxplace.orders import dfs_order, seed_priorities
from jaxplace.problem import Problem

#: Bumped whenever a feature changes meaning; stored in checkpoints.
FEATURE_VERSION = 1

NODE_FEATURES = (
    "work_over_lb", "log_work_over_mean", "out_over_lb", "in_over_lb", "param_frac",
    "log_indeg", "log_outdeg", "is_source", "is_sink", "depth", "height",
    "top_level_work", "bottom_level_work", "dfs_pos", "asap_pos", "alap_pos",
    "dfs_prefix_work", "asap_prefix_work", "dfs_block", "asap_block", "accel_ok",
    "cpu_over_lb",
)
GRAPH_FEATURES = (
    "k_over_16", "log_k", "inv_k", "cpus", "has_memory", "memory_frac", "has_capacity",
    "capacity_frac", "lb_over_total", "max_work_over_lb", "comm_over_work", "log_n",
    "mean_degree", "n_over_k_log",
)
NUM_NODE_FEATURES = len(NODE_FEATURES)
NUM_GRAPH_FEATURES = len(GRAPH_FEATURES)


@dataclass(frozen=True)
class Sizes:
    """Padded lengths: nodes N, directed edges E, tensor memberships M, tensors T."""

    N: int
    E: int
    M: int
    T: int

    def merge(self, other: Sizes) -> Sizes:
        return Sizes(*(max(a, b) for a, b in zip(self.astuple(), other.astuple(),
                                                 strict=True)))

    def astuple(self) -> tuple[int, int, int, int]:
        return (self.N, self.E, self.M, self.T)


def bucket(x: int, minimum: int = 16) -> int:
    """Round up to m * 2**e with 8 <= m < 16 (<= 12.5% padding, few distinct shapes)."""
    x = max(int(x), minimum)
    step = max(1, 2 ** (int(np.floor(np.log2(x))) - 3))
    return -(-x // step) * step


def _longest(order, ptr, idx, weight) -> np.ndarray:
    """Longest weighted path ending at each node, following `order` over CSR ptr/idx
    (predecessors: top levels; reverse order over successors: bottom levels)."""
    out = np.zeros(len(order))
    for v in order:
        nb = idx[ptr[v]:ptr[v + 1]]
        if len(nb):
            out[v] = (out[nb] + weight[nb]).max()
    return out


def _rank(order: np.ndarray) -> np.ndarray:
    r = np.empty(len(order))
    r[order] = np.arange(len(order))
    return r


def _structure(g) -> dict[str, np.ndarray]:
    """Unweighted structure features (depends on the graph only)."""
    n = g.num_nodes
    topo = g.topo_order
    one = np.ones(n)
    depth = _longest(topo, g.pred_ptr, g.pred_idx, one)
    height = _longest(topo[::-1], g.succ_ptr, g.succ_idx, one)
    dmax = max(float((depth + height).max()), 1.0)
    dfs = dfs_order(g)
    asap = np.lexsort((np.arange(n), depth))
    alap = np.lexsort((np.arange(n), dmax - height))
    return dict(depth=depth / dmax, height=height / dmax, dfs=dfs, asap=asap,
                dfs_pos=_rank(dfs) / n, asap_pos=_rank(asap) / n, alap_pos=_rank(alap) / n)


def _prefix(order: np.ndarray, work: np.ndarray, total: float) -> np.ndarray:
    """Work emitted before each node when following `order`, over the total."""
    before = np.empty(len(order))
    before[order] = np.concatenate([[0.0], np.cumsum(work[order])[:-1]])
    return before / total


def node_features(problem: Problem) -> np.ndarray:
    """(n, NUM_NODE_FEATURES) float32 scale-free node features."""
    g = problem.graph
    n, k = g.num_nodes, problem.num_blocks
    L = max(simple_lower_bound(problem), 1e-30)
    work = g.work
    total = max(float(work.sum()), 1e-30)
    B = problem.bandwidth
    has_cons = np.diff(g.succ_ptr) > 0
    out = np.where(has_cons, g.size_out, 0.0) / B
    ins = np.bincount(g.tensor_consumers, minlength=n,
                      weights=np.repeat(g.tensor_size, np.diff(g.tensor_ptr))) / B
    indeg, outdeg = np.diff(g.pred_ptr), np.diff(g.succ_ptr)
    s = _structure(g)
    one = np.ones(n)
    top = _longest(g.topo_order, g.pred_ptr, g.pred_idx, work)
    bottom = _longest(g.topo_order[::-1], g.succ_ptr, g.succ_idx, work) + work
    dfs_pre = _prefix(s["dfs"], work, total)
    asap_pre = _prefix(s["asap"], work, total)
    cols = [
        work / L, np.log1p(work / (total / n)), out / L, ins / L,
        g.size_param / memory_reference(problem), np.log1p(indeg), np.log1p(outdeg),
        (indeg == 0) * one, (outdeg == 0) * one, s["depth"], s["height"],
        top / total, bottom / total, s["dfs_pos"], s["asap_pos"], s["alap_pos"],
        dfs_pre, asap_pre, dfs_pre * k, asap_pre * k, problem.supported * one,
        problem.cpu_latency / L,
    ]
    return np.clip(np.stack(cols, axis=1), -1e3, 1e3).astype(np.float32)


def memory_reference(problem: Problem) -> float:
    """Per-block parameter scale: the capacity, else the memory, else total / k."""
    total = float(problem.graph.size_param.sum())
    for v in (problem.capacity, problem.memory):
        if v is not None and v > 0:
            return float(v)
    return max(total / problem.k, 1e-30) if total > 0 else 1.0


def graph_features(problem: Problem) -> np.ndarray:
    """(NUM_GRAPH_FEATURES,) float32 scale-free graph features."""
    g = problem.graph
    n, k = g.num_nodes, problem.k
    total = max(float(g.work.sum()), 1e-30)
    L = max(simple_lower_bound(problem), 1e-30)
    ptotal = float(g.size_param.sum())
    frac = (lambda v: 0.0 if v is None or ptotal <= 0 else min(v / ptotal, 4.0))  # noqa: E731
    comm = float(g.tensor_size.sum()) / problem.bandwidth
    f = [k / 16, np.log(k), 1 / k, problem.cpus, problem.memory is not None,
         frac(problem.memory), problem.capacity is not None, frac(problem.capacity),
         L / total, float(g.work.max()) / L, min(comm / total, 100.0), np.log(n) / 6,
         g.num_edges / n, np.log(n / problem.num_blocks) / 4]
    return np.asarray(f, dtype=np.float32)


def _memberships(g) -> tuple[np.ndarray, np.ndarray, int]:
    """(node, tensor) pairs of every tensor that can cost a transfer, and their count."""
    keep = np.flatnonzero((g.tensor_size > 0) & (np.diff(g.tensor_ptr) > 0))
    nodes, tens = [g.tensor_producer[keep]], [np.arange(len(keep))]
    cnt = np.diff(g.tensor_ptr)[keep]
    starts = g.tensor_ptr[keep]
    cons = np.concatenate([g.tensor_consumers[a:a + c] for a, c in zip(starts, cnt,
                                                                       strict=True)]) \
        if len(keep) else np.zeros(0, np.int64)
    nodes.append(cons)
    tens.append(np.repeat(np.arange(len(keep)), cnt))
    return np.concatenate(nodes), np.concatenate(tens), len(keep)


@dataclass(frozen=True)
class Featurized:
    """Unpadded features of one problem (host NumPy)."""

    node: np.ndarray  # (n, F) float32
    graph: np.ndarray  # (Fg,) float32
    edges: np.ndarray  # (m, 2) int64 producer -> consumer
    mem_node: np.ndarray  # (M,) int64
    mem_tensor: np.ndarray  # (M,) int64
    num_tensors: int
    anchor: np.ndarray | None = None  # (n,) float32 DFS ranks (`dfs_ranks`); None: 0

    @property
    def sizes(self) -> Sizes:
        """The smallest bucketed Sizes that hold this problem."""
        return Sizes(bucket(len(self.node)), bucket(len(self.edges)),
                     bucket(len(self.mem_node)), bucket(self.num_tensors))

    @property
    def coarse_sizes(self) -> Sizes:
        """One shape per power of two S >= 64: N = T = S, E = 4 S, M = 8 S. For one
        forward pass padding is nearly free, while every new shape costs a compile
        (~7 s on a loaded 2-core CPU); four finely bucketed sizes made nearly every
        graph a new shape."""
        need = max(len(self.node), self.num_tensors, -(-len(self.edges) // 4),
                   -(-len(self.mem_node) // 8), 64)
        S = 1 << (need - 1).bit_length()
        return Sizes(S, 4 * S, 8 * S, S)


def dfs_ranks(problem: Problem) -> np.ndarray:
    """(n,) float64 in [-1, 1]: each node's place in the DFS order over placement
    units with free units next to their tensor partner (`seed_priorities`' first
    order), 1 first; members of a unit share their unit's (average) rank."""
    x = seed_priorities(problem.graph)[0].astype(np.float64)
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    rank = (np.cumsum(counts) - (counts - 1) / 2 - 1)[inverse]  # 0-based, ties averaged
    return 2 * rank / max(problem.n - 1, 1) - 1


def featurize(problem: Problem, anchor: bool = False) -> Featurized:
    """Unpadded scale-free features and message-passing structure of `problem`;
    `anchor`: also its DFS ranks (for models with `ModelConfig.dfs_anchor`)."""
    g = problem.graph
    mn, mt, T = _memberships(g)
    ranks = dfs_ranks(problem).astype(np.float32) if anchor else None
    return Featurized(node_features(problem), graph_features(problem),
                      np.asarray(g.edges, np.int64), mn, mt, T, ranks)


def pad(f: Featurized, sizes: Sizes) -> dict[str, np.ndarray]:
    """Pad to `sizes`: arrays of the model's input (see `PolicyModel.__call__`)."""
    N, E, M, T = sizes.astuple()
    n, m, mm = len(f.node), len(f.edges), len(f.mem_node)
    if n > N or m > E or mm > M or f.num_tensors > T:
        raise JaxplaceError(f"graph (n={n}, edges={m}, memberships={mm}) does not fit the "
                            f"padded sizes {sizes}", field="sizes")
    node = np.zeros((N, f.node.shape[1]), np.float32)
    node[:n] = f.node
    src = np.full(E, N, np.int32)
    dst = np.full(E, N, np.int32)
    src[:m], dst[:m] = f.edges[:, 0], f.edges[:, 1]
    mem_node = np.full(M, N, np.int32)
    mem_tensor = np.full(M, T, np.int32)
    mem_node[:mm], mem_tensor[:mm] = f.mem_node, f.mem_tensor
    anchor = np.zeros(N, np.float32)
    if f.anchor is not None:
        anchor[:n] = f.anchor
    return dict(node=node, mask=np.arange(N) < n, graph=f.graph.copy(), src=src,
                dst=dst, mem_node=mem_node, mem_tensor=mem_tensor,
                tmask=np.arange(T) < f.num_tensors, anchor=anchor)


def stack(feats: list[Featurized], sizes: Sizes | None = None) -> tuple[Sizes, dict]:
    """Pad several problems to common sizes (default: the merge of theirs) and stack."""
    if sizes is None:
        sizes = feats[0].sizes
        for f in feats[1:]:
            sizes = sizes.merge(f.sizes)
    padded = [pad(f, sizes) for f in feats]
    return sizes, {k: np.stack([p[k] for p in padded]) for k in padded[0]}
