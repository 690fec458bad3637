"""The priority GNN (flax NNX): per-node Gaussian parameters from graph features.

Message passing in the spirit of REGAL (Paliwal et al., ICLR 2020): each layer
aggregates, per node, the mean message from its predecessors, from its successors,
and from the tensors (hyperedges: producer and consumers) it belongs to, plus a
graph-level context vector (masked mean of the node states and the graph features).
Every aggregation is a `jax.ops.segment_sum` over padded index arrays whose sentinel
(index N for nodes, T for tensors) falls outside the segments and is dropped, so the
real nodes' outputs do not depend on the padding, and the model is permutation
equivariant (only per-node maps and symmetric sums).

One graph per call; `jax.vmap` it over a batch (the model has no batch-dependent
state).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
from flax import nnx

from jaxplace.policy.features import FEATURE_VERSION, NUM_GRAPH_FEATURES, NUM_NODE_FEATURES


@dataclass(frozen=True)
class ModelConfig:
    """Architecture; stored next to the weights, checked when loading.

    Attributes:
        hidden: width of node states and the context vector.
        layers: message-passing layers.
        mean_scale: means are mean_scale * tanh(raw / mean_scale) (bounded, so that
            priorities squashed to (0, 1) never saturate float32).
        log_std_min, log_std_max: log standard deviations live in this range. The
            floor keeps REINFORCE's score (z - mean) / std^2 bounded and the policy
            exploring; the policy is still near-deterministic where it spreads its
            means (up to 2 * mean_scale apart, i.e. 36 standard deviations).
        init_log_std: log std of the untrained policy (its means start at 0, so it
            samples uniformly random orders, i.e. random search).
        attention_layers: global self-attention blocks after the message passing
            (0: none). Message passing sees `layers` hops; attention lets every node
            read every other, for orders that need more than a local view. Their
            output projections start at zero, so a policy with them starts as the
            same policy without them (`TrainConfig.init` fine-tunes from one).
        attention_heads: heads of each attention block.
        dfs_anchor: the means are the network's plus dfs_anchor x the node's DFS rank
            in [-1, 1] (`jaxplace.policy.dfs_ranks`, input "anchor"): a policy that
            learns offsets from the DFS order instead of whole orders (0: none).
    """

    hidden: int = 64
    layers: int = 4
    mean_scale: float = 4.0
    log_std_min: float = -1.5
    log_std_max: float = 0.5
    init_log_std: float = 0.0
    attention_layers: int = 0
    attention_heads: int = 4
    dfs_anchor: float = 0.0
    node_features: int = NUM_NODE_FEATURES
    graph_features: int = NUM_GRAPH_FEATURES
    feature_version: int = FEATURE_VERSION

    def to_json(self) -> dict:
        return asdict(self)


def _mean_agg(values, ids, num, count):
    """Mean of `values` rows per segment id (ids >= num are dropped)."""
    s = jax.ops.segment_sum(values, ids, num_segments=num)
    return s / jnp.maximum(count, 1.0)[:, None]


def _gather(h, idx):
    """Rows of h at idx; the sentinel idx == len(h) reads a zero row."""
    return jnp.concatenate([h, jnp.zeros((1, h.shape[1]), h.dtype)])[idx]


class Layer(nnx.Module):
    """One round: predecessor, successor and tensor messages, then a residual MLP."""

    def __init__(self, H: int, rngs: nnx.Rngs):
        self.fwd = nnx.Linear(H, H, rngs=rngs)
        self.bwd = nnx.Linear(H, H, rngs=rngs)
        self.ten = nnx.Linear(H, H, rngs=rngs)
        self.mix = nnx.Linear(5 * H, H, rngs=rngs)
        self.out = nnx.Linear(H, H, rngs=rngs)
        self.norm = nnx.LayerNorm(H, rngs=rngs)
        self.ctx = nnx.Linear(2 * H, H, rngs=rngs)

    def __call__(self, h, ctx, s):
        """h: (N, H) node states, ctx: (H,), s: structure dict (see `PolicyModel`)."""
        N = h.shape[0]
        fwd = _mean_agg(_gather(self.fwd(h), s["src"]), s["dst"], N, s["indeg"])
        bwd = _mean_agg(_gather(self.bwd(h), s["dst"]), s["src"], N, s["outdeg"])
        t = _mean_agg(_gather(self.ten(h), s["mem_node"]), s["mem_tensor"], s["T"],
                      s["tsize"])
        ten = _mean_agg(_gather(t, s["mem_tensor"]), s["mem_node"], N, s["nmem"])
        z = jnp.concatenate([h, fwd, bwd, ten, jnp.broadcast_to(ctx, h.shape)], axis=1)
        h = self.norm(h + self.out(jax.nn.gelu(self.mix(z))))
        h = h * s["mask"][:, None]
        pooled = (h * s["mask"][:, None]).sum(0) / jnp.maximum(s["mask"].sum(), 1.0)
        ctx = ctx + self.ctx(jax.nn.gelu(jnp.concatenate([pooled, ctx])))
        return h, ctx


class GlobalAttention(nnx.Module):
    """Masked multi-head self-attention over the real nodes, pre-norm, residual; the
    output projection starts at zero (the block starts as the identity)."""

    def __init__(self, H: int, heads: int, rngs: nnx.Rngs):
        self.norm = nnx.LayerNorm(H, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(heads, H, decode=False, deterministic=True,
                                           out_kernel_init=nnx.initializers.zeros,
                                           rngs=rngs)

    def __call__(self, h, mask):
        """h: (N, H) node states; mask: (N,) float real nodes."""
        keys = mask[None, None, :] > 0  # (heads, query, key), broadcast
        h = h + self.attn(self.norm(h), mask=keys)
        return h * mask[:, None]


class PolicyModel(nnx.Module):
    """Features of one padded graph -> per-node (mean, log_std) of Gaussian priorities."""

    def __init__(self, config: ModelConfig, rngs: nnx.Rngs):
        c = config
        H = c.hidden
        self.config = c
        self.embed = nnx.Linear(c.node_features + c.graph_features, H, rngs=rngs)
        self.ctx_in = nnx.Linear(c.graph_features, H, rngs=rngs)
        self.layers = nnx.List([Layer(H, rngs) for _ in range(c.layers)])
        if c.attention_layers:
            self.attention = nnx.List([GlobalAttention(H, c.attention_heads, rngs)
                                       for _ in range(c.attention_layers)])
        self.head = nnx.Linear(2 * H, H, rngs=rngs)
        # zero output weights: the untrained policy is exactly "means 0, init_log_std"
        self.final = nnx.Linear(H, 2, kernel_init=nnx.initializers.zeros, rngs=rngs)

    def __call__(self, node, mask, graph, src, dst, mem_node, mem_tensor, tmask,
                 anchor=None, with_raw: bool = False):
        """Per-node distribution parameters of one graph.

        Args:
            node: (N, F) float32 node features; mask: (N,) bool real nodes.
            graph: (Fg,) float32 graph features.
            src, dst: (E,) int32 directed edges, padded with N.
            mem_node, mem_tensor: (M,) int32 tensor memberships, padded with N and T.
            tmask: (T,) bool real tensors.
            anchor: (N,) float32 DFS ranks, added to the means x `dfs_anchor` (None:
                zeros).

        Returns:
            (mean, log_std): two (N,) float32 arrays (padding rows are meaningless);
            with `with_raw`, also the (N, 2) pre-squashing outputs (training keeps
            them small so that the bounded maps never saturate).
        """
        c = self.config
        N = node.shape[0]
        maskf = mask.astype(jnp.float32)
        one_e = (src < N).astype(jnp.float32)
        one_m = (mem_node < N).astype(jnp.float32)
        T = tmask.shape[0]
        s = dict(src=src, dst=dst, mem_node=mem_node, mem_tensor=mem_tensor, T=T,
                 mask=maskf,
                 indeg=jax.ops.segment_sum(one_e, dst, num_segments=N),
                 outdeg=jax.ops.segment_sum(one_e, src, num_segments=N),
                 tsize=jax.ops.segment_sum(one_m, mem_tensor, num_segments=T),
                 nmem=jax.ops.segment_sum(one_m, mem_node, num_segments=N))
        x = jnp.concatenate([node, jnp.broadcast_to(graph, (N, graph.shape[0]))], axis=1)
        h = jax.nn.gelu(self.embed(x)) * maskf[:, None]
        ctx = jax.nn.gelu(self.ctx_in(graph))
        for layer in self.layers:
            h, ctx = layer(h, ctx, s)
        for block in getattr(self, "attention", ()):
            h = block(h, maskf)
        z = jax.nn.gelu(self.head(jnp.concatenate([h, jnp.broadcast_to(ctx, h.shape)], 1)))
        raw = self.final(z)
        mean = c.mean_scale * jnp.tanh(raw[:, 0] / c.mean_scale)
        if c.dfs_anchor and anchor is not None:
            mean = mean + c.dfs_anchor * anchor
        lo, hi = c.log_std_min, c.log_std_max
        # shift so that raw == 0 gives init_log_std
        b = jnp.log((c.init_log_std - lo) / (hi - c.init_log_std))
        log_std = lo + (hi - lo) * jax.nn.sigmoid(raw[:, 1] + b)
        return (mean, log_std, raw) if with_raw else (mean, log_std)


INPUT_KEYS = ("node", "mask", "graph", "src", "dst", "mem_node", "mem_tensor", "tmask",
              "anchor")


def pure_apply(graphdef, with_raw: bool = False):
    """A pure function (params, inputs) -> (mean, log_std) for one graph; `jax.vmap` it
    over a batch with in_axes=(None, 0). `graphdef, params = nnx.split(model)`."""

    def apply(params, inputs: dict):
        model = nnx.merge(graphdef, params)
        return model(*(inputs[k] for k in INPUT_KEYS), with_raw=with_raw)

    return apply
