"""A smooth surrogate of the MTPP block costs over soft assignments of nodes to blocks.

Every node v gets a distribution P[v] over the K = k + cpus blocks (a softmax of
logits; nodes of one placement unit share their unit's logits, so colocation holds by
construction). With independent placements, the expected cost terms are
(the MTPP block cost f(S) of `jaxplace.objectives.throughput.cost`):

    work(b)    = sum_v P[v,b] work(v)            (cpu_latency on CPU blocks)
    param(b)   = sum_v P[v,b] param(v)
    io_out(b)  = sum_t s_t/B * P[p_t,b] * (1 - prod_{c in C_t} P[c,b])
    io_in(b)   = sum_t s_t/B * (1 - P[p_t,b]) * (1 - prod_{c in C_t} (1 - P[c,b]))
    overflow(b)= tau_o * softplus((param(b) - M) / tau_o) / B

(a tensor leaves its producer's block unless every consumer is there; it enters a
block that holds some consumer and not the producer). CPU blocks pay no transfers or
overflow. On one-hot P these are exactly `objectives.throughput.cost.evaluate_partition`'s terms;
`exact_costs` evaluates them with hard max for overflow and +inf over the capacity.

The products over consumers are sums of log-probabilities (`jax.ops.segment_sum`),
with log(1 - P[c,b]) computed as the log-sum-exp of the other blocks' logits, so the
gradient stays finite at any temperature. Masked choices use the finite NEG, never
-inf, so no NaN appears in a gradient.

Relaxations of this kind are standard for graph partitioning (e.g. Nazi et al.,
"GAP: Generalizable approximate graph partitioning", 2019; Jang et al. 2017 for the
softmax/Gumbel relaxation of categorical choices).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxplace.decoder.layout import pow2
from jaxplace.objectives.throughput.cost import simple_lower_bound
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

#: Finite stand-in for log 0 (masked blocks, one-hot assignments): exp(NEG) == 0.
NEG = -1e9


@struct.dataclass
class RelaxGraph:
    """A problem as padded device arrays for the surrogate (a pytree).

    Padding: nodes n..N-1 and units U..UP-1 carry no cost; tensors T..TP-1 have size 0;
    consumer entries past the real ones point at a padding tensor; padded edges have
    weight 0. Shapes (float arrays in the dtype given to `relax_graph`):
    """

    unit_of: jnp.ndarray  # (N,) int32 unit of every node (padding: unit UP-1)
    work: jnp.ndarray  # (N,) accelerator work
    cpu: jnp.ndarray  # (N,) CPU latency
    param: jnp.ndarray  # (N,) parameter size
    t_prod: jnp.ndarray  # (TP,) int32 producer of every tensor
    t_size: jnp.ndarray  # (TP,) size / B (0 on padding)
    c_tensor: jnp.ndarray  # (C,) int32 tensor of every consumer entry
    c_node: jnp.ndarray  # (C,) int32 consumer node of every entry
    e_src: jnp.ndarray  # (E,) int32 ordering edges (forward edges of training graphs)
    e_dst: jnp.ndarray  # (E,) int32
    e_w: jnp.ndarray  # (E,) 1 per real edge, 0 on padding
    allowed: jnp.ndarray  # (UP, K) bool: may the unit go to the block
    depth: jnp.ndarray  # (N,) topological depth (longest path from a source; 0 padding)
    memory: jnp.ndarray  # () overflow budget M (inf: none)
    capacity: jnp.ndarray  # () hard capacity limit (inf: none)
    bandwidth: jnp.ndarray  # () B
    scale: jnp.ndarray  # () the simple lower bound (costs are divided by it in losses)
    n: int = struct.field(pytree_node=False)  # real nodes
    num_units: int = struct.field(pytree_node=False)  # real units
    k: int = struct.field(pytree_node=False)  # accelerator blocks
    K: int = struct.field(pytree_node=False)  # all blocks (k + cpus)

    @property
    def is_cpu(self) -> jnp.ndarray:
        """(K,) bool: blocks k.. are CPUs."""
        return jnp.arange(self.K) >= self.k


def topological_depth(problem: Problem) -> np.ndarray:
    """(n,) int64 longest path (in edges) from a source to every node."""
    g = problem.graph
    d = np.zeros(g.num_nodes, np.int64)
    for v in g.topo_order:
        preds = g.pred_idx[g.pred_ptr[v]:g.pred_ptr[v + 1]]
        if len(preds):
            d[v] = d[preds].max() + 1
    return d


def relax_graph(problem: Problem, dtype=jnp.float32, pad: bool = True) -> RelaxGraph:
    """The padded surrogate arrays of `problem` (sizes padded to powers of two: few compiles)."""
    g = problem.graph
    n, K = g.num_nodes, problem.num_blocks
    units = g.units
    U = units.num_units
    fit = (lambda x: max(pow2(x), 8)) if pad else (lambda x: max(int(x), 1))
    N, UP = fit(n + 1), fit(U + 1)  # at least one padding node and unit
    T = g.num_tensors
    TP = fit(T + 1)
    C = fit(max(len(g.tensor_consumers), 1))
    oe = ordering_edges(g)
    E = fit(max(len(oe), 1))

    def arr(a, size, fill=0.0):
        out = np.full(size, fill, np.float64)
        out[:len(a)] = a
        return out

    def iarr(a, size, fill=0):
        out = np.full(size, fill, np.int32)
        out[:len(a)] = a
        return out

    unit_of = iarr(units.unit_of, N, UP - 1)
    t_of = np.repeat(np.arange(T), np.diff(g.tensor_ptr))
    supported = problem.supported
    bad_unit = np.bincount(units.unit_of, weights=~supported, minlength=U) > 0
    allowed = np.ones((UP, K), bool)
    allowed[:U, :problem.k] = ~bad_unit[:, None]
    if problem.cpus:
        allowed[U:, problem.k:] = False  # padding units stay on accelerators
    depth = topological_depth(problem).astype(np.float64)
    f = np.dtype(jnp.dtype(dtype))
    to = lambda a: jnp.asarray(np.asarray(a, f))  # noqa: E731
    cap = problem.capacity_limit
    return RelaxGraph(
        unit_of=jnp.asarray(unit_of), work=to(arr(g.work, N)),
        cpu=to(arr(problem.cpu_latency, N)), param=to(arr(g.size_param, N)),
        t_prod=jnp.asarray(iarr(g.tensor_producer, TP)),
        t_size=to(arr(g.tensor_size / problem.bandwidth, TP)),
        c_tensor=jnp.asarray(iarr(t_of, C, TP - 1)),
        c_node=jnp.asarray(iarr(g.tensor_consumers, C, N - 1)),
        e_src=jnp.asarray(iarr(oe[:, 0], E)), e_dst=jnp.asarray(iarr(oe[:, 1], E)),
        e_w=to(arr(np.ones(len(oe)), E)), allowed=jnp.asarray(allowed),
        depth=to(arr(depth, N)),
        memory=to(np.inf if problem.memory is None else problem.memory),
        capacity=to(cap), bandwidth=to(problem.bandwidth),
        scale=to(max(simple_lower_bound(problem), 1e-30)),
        n=n, num_units=U, k=problem.k, K=K)


# -- soft assignments -----------------------------------------------------------------


def unit_log_probs(rg: RelaxGraph, logits: jnp.ndarray, tau=1.0):
    """(log P, log(1 - P)) per unit, each (UP, K), for logits (UP, K) at temperature
    tau; masked blocks get NEG. 1 - P[b] is the other blocks' share, summed without
    cancellation: for the largest logit explicitly without it, for the others as the
    total less their own term (at least the largest term, 1). O(K), finite gradients."""
    z = jnp.where(rg.allowed, logits / tau, NEG)
    m = jax.lax.stop_gradient(jnp.max(z, axis=-1, keepdims=True))
    e = jnp.exp(z - m)  # (UP, K), 1 at the largest logit
    top = jnp.arange(rg.K) == jnp.argmax(z, axis=-1, keepdims=True)
    S = jnp.sum(e, axis=-1, keepdims=True)
    rest = jnp.sum(jnp.where(top, 0.0, e), axis=-1, keepdims=True)
    others = jnp.where(top, rest, S - e)
    tiny = jnp.finfo(e.dtype).tiny
    log_s = jnp.log(S)
    return z - m - log_s, jnp.maximum(jnp.log(jnp.maximum(others, tiny)) - log_s, NEG)


def one_hot_log_probs(rg: RelaxGraph, assignment: jnp.ndarray):
    """(log P, log(1 - P)) per node, each (N, K), of an assignment (n,) of blocks
    (entries 0 and NEG)."""
    a = jnp.zeros(rg.unit_of.shape[0], jnp.int32).at[:rg.n].set(
        jnp.asarray(assignment, jnp.int32))
    hot = jax.nn.one_hot(a, rg.K, dtype=rg.work.dtype) > 0
    neg = jnp.asarray(NEG, rg.work.dtype)
    zero = jnp.zeros((), rg.work.dtype)
    return jnp.where(hot, zero, neg), jnp.where(hot, neg, zero)


def block_terms(rg: RelaxGraph, logp: jnp.ndarray, log1mp: jnp.ndarray) -> dict:
    """Expected per-block terms for node log-probabilities (N, K) (see module doc):
    work, param, io_in, io_out, each (K,); CPU blocks pay no transfers."""
    P = jnp.exp(logp)
    cpu = rg.is_cpu
    work = jnp.where(cpu, P.T @ rg.cpu, P.T @ rg.work)
    param = P.T @ rg.param
    TP = rg.t_prod.shape[0]
    all_in = jax.ops.segment_sum(logp[rg.c_node], rg.c_tensor, TP)  # (TP, K)
    none_in = jax.ops.segment_sum(log1mp[rg.c_node], rg.c_tensor, TP)
    Pp = P[rg.t_prod]  # (TP, K)
    leave = Pp * -jnp.expm1(all_in)
    enter = (1 - Pp) * -jnp.expm1(none_in)
    io_out = jnp.where(cpu, 0.0, rg.t_size @ leave)
    io_in = jnp.where(cpu, 0.0, rg.t_size @ enter)
    return {"work": work, "param": param, "io_in": io_in, "io_out": io_out}


def exact_costs(rg: RelaxGraph, assignment: jnp.ndarray) -> dict:
    """The surrogate at a one-hot assignment (n,): exact overflow (max) and capacity
    (+inf over the limit). Keys: work, param, io_in, io_out, overflow, total (K,)."""
    t = block_terms(rg, *one_hot_log_probs(rg, assignment))
    over = jnp.where(rg.is_cpu, 0.0, jnp.maximum(t["param"] - rg.memory, 0.0) / rg.bandwidth)
    total = t["work"] + t["io_in"] + t["io_out"] + over
    total = jnp.where((t["param"] > rg.capacity) & ~rg.is_cpu, jnp.inf, total)
    return {**t, "overflow": over, "total": total}


def smooth_relu(x, tau):
    """tau * softplus(x / tau) (tau > 0), the hard max(0, x) at tau == 0."""
    if isinstance(tau, int | float) and tau == 0:
        return jnp.maximum(x, 0.0)
    return tau * jax.nn.softplus(x / tau)


def smooth_max(x, tau):
    """tau * logsumexp(x / tau) >= max(x) (within tau log K), max at tau == 0."""
    if isinstance(tau, int | float) and tau == 0:
        return jnp.max(x)
    return tau * jax.nn.logsumexp(x / tau)


def soft_costs(rg: RelaxGraph, logp: jnp.ndarray, log1mp: jnp.ndarray,
               tau_overflow=0.0) -> dict:
    """Per-block surrogate costs at node log-probabilities (N, K): the terms of
    `block_terms`, the (smoothed) overflow, `total` (K,) and `excess` (K,): parameters
    over the hard capacity (0 when none), for a penalty."""
    t = block_terms(rg, logp, log1mp)
    over = smooth_relu(t["param"] - rg.memory, tau_overflow) / rg.bandwidth
    over = jnp.where(rg.is_cpu | jnp.isinf(rg.memory), 0.0, over)
    total = t["work"] + t["io_in"] + t["io_out"] + over
    excess = jnp.where(rg.is_cpu | jnp.isinf(rg.capacity), 0.0,
                       jnp.maximum(t["param"] - rg.capacity, 0.0))
    return {**t, "overflow": over, "total": total, "excess": excess}


def backward_mass(rg: RelaxGraph, logp: jnp.ndarray) -> jnp.ndarray:
    """() expected number of ordering edges (u, v) with block(u) > block(v): edges
    against the block order (block index = stage). 0 on a one-hot assignment whose
    blocks are numbered in a topological order of its quotient."""
    P = jnp.exp(logp)
    Pu, Pv = P[rg.e_src], P[rg.e_dst]  # (E, K)
    above = jnp.sum(Pu, axis=1, keepdims=True) - jnp.cumsum(Pu, axis=1)  # P(u in > b)
    return jnp.sum(rg.e_w * jnp.sum(Pv * above, axis=1))


def expected_stage(rg: RelaxGraph, logp: jnp.ndarray) -> jnp.ndarray:
    """(N,) expected block index of every node."""
    return jnp.exp(logp) @ jnp.arange(rg.K, dtype=logp.dtype)


def stage_priorities(rg: RelaxGraph, stage: jnp.ndarray) -> jnp.ndarray:
    """(N,) float32 priorities in [0, 1] for Kahn (highest first): earlier stage first,
    ties by smaller topological depth (a depth term below half a stage)."""
    s = stage + 0.5 * rg.depth / (jnp.max(rg.depth) + 1)
    return (1.0 - s / rg.K).astype(jnp.float32)


__all__ = ["NEG", "RelaxGraph", "backward_mass", "block_terms", "exact_costs",
           "expected_stage", "one_hot_log_probs", "relax_graph", "smooth_max",
           "smooth_relu", "soft_costs", "stage_priorities", "topological_depth",
           "unit_log_probs"]
