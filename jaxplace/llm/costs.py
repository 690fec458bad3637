"""Roofline cost and memory of each part of a decoder-only transformer.

Per part (embedding, decoder layer, final norm, LM head), the forward pass is a list
of ops, each costed max(FLOPs / peak, bytes / memory bandwidth) + launch overhead
(`jaxplace.importers.roofline.op_time`): matrix products and attention on the matrix
units, norms and activations on the vector units. Attention is fused (FlashAttention:
Q, K, V read once, no score matrix in memory); causal attention over s tokens attends
to s/2 keys on average (a sliding window w < s: w (1 - w / 2s)). Training costs the
forward three times (the backward pass is about twice the forward: Narayanan et al.,
"Efficient large-scale language model training on GPU clusters using Megatron-LM",
SC 2021), four times with full recomputation. Mixture-of-experts layers route each
token to `experts_per_token` experts and read the weights of every expert some token
uses.

Memory per part (bytes): weights; in training, gradients (weight dtype) and Adam state
(fp32 m and v, plus an fp32 master copy when weights are 16-bit or narrower: 16 bytes
per parameter in bf16, Rajbhandari et al., ZeRO, SC 2020); stashed activations
(training) or the KV cache (inference, decode), times the micro-batches in flight; and
the transient working set of the part's largest op, which a stage needs once.
Stashed activations per layer and token, without recomputation: the inputs of both
norms and of the two projections' blocks, Q, K, V, the attention output and the MLP's
intermediates (about 34 s b h bytes for GPT-3-style layers in Korthikanti et al.,
"Reducing activation recomputation in large transformer models", MLSys 2023, who also
count dropout masks).
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxplace.importers.devices import DeviceProfile
from jaxplace.importers.roofline import TRANSCENDENTAL_FLOPS, op_time
from jaxplace.llm.config import ModelConfig, layer_params, param_counts
from jaxplace.llm.workload import Workload

#: FLOPs per element of a norm (RMSNorm: square, mean, rsqrt, scale; LayerNorm more).
NORM_FLOPS = {False: 6.0, True: 8.0}  # keyed by "has a bias" (LayerNorm)
#: Bytes per element of the logits kept for the loss (fp32).
LOGIT_BYTES = 4


@dataclass(frozen=True)
class PartCost:
    """Cost and memory of one part for one micro-batch (bytes, seconds, counts)."""

    name: str
    role: str  # "embedding", "decoder_layer", "moe_decoder_layer", "final_norm", "lm_head"
    params: int
    flops: float  # forward (+ backward in training)
    time_s: float
    weight_bytes: float
    state_bytes: float  # gradients + optimizer state (training)
    activation_bytes: float  # stashed activations, all micro-batches in flight
    kv_bytes: float  # KV cache, all sequences in flight
    workspace_bytes: float  # transient working set of the largest op (once per stage)
    out_bytes: float  # the tensor sent to the next part, forward

    @property
    def memory_bytes(self) -> float:
        """Resident bytes that add up over the parts of a stage."""
        return self.weight_bytes + self.state_bytes + self.activation_bytes + self.kv_bytes


@dataclass(frozen=True)
class _Shape:
    tokens: int  # tokens per micro-batch through the layers
    head_tokens: int  # tokens whose logits are computed
    context: float  # average keys attended per query
    d: int  # bytes per element


def _shape(cfg: ModelConfig, wl: Workload) -> _Shape:
    s, b = wl.seq_len, wl.micro_batch
    w = cfg.sliding_window
    if wl.mode == "decode":
        return _Shape(b, b, float(min(s, w or s)), wl.dtype_bytes)
    ctx = s / 2 if w is None or w >= s else w * (1 - w / (2 * s))
    head = b * s if wl.training else b  # inference: logits of the last position only
    return _Shape(b * s, head, ctx, wl.dtype_bytes)


def _time(ops, dev: DeviceProfile, wl: Workload) -> tuple[float, float]:
    """(seconds, FLOPs) of a list of (flops, bytes, on_matrix_units) ops, forward and,
    in training, backward."""
    t = sum(op_time(f, b, dev, wl.dtype, matrix=m) for f, b, m in ops)
    fl = sum(f for f, _, _ in ops)
    passes = (4.0 if wl.recompute else 3.0) if wl.training else 1.0
    return t * passes, fl * passes


def _state_bytes(params: int, wl: Workload) -> float:
    if not wl.training:
        return 0.0
    master = 4 if wl.dtype_bytes < 4 else 0
    return params * (wl.dtype_bytes + 8 + master)


def _norm_op(cfg: ModelConfig, T: int, d: int):
    h = cfg.hidden
    return (NORM_FLOPS[cfg.norm_bias] * T * h, (2 * T * h + 2 * h) * d, False)


def _mlp_ops(cfg: ModelConfig, T: int, d: int) -> list:
    h, i = cfg.hidden, cfg.intermediate
    routed = T * cfg.experts_per_token
    used = min(cfg.num_experts, routed)  # experts whose weights are read
    ops = []
    if cfg.moe:
        E = cfg.num_experts
        ops.append((2.0 * T * h * E, (h * E + T * h + T * E) * d, True))
    up = 2 if cfg.gated_mlp else 1
    ops.append((2.0 * routed * h * up * i, (used * up * h * i + routed * (h + up * i)) * d,
                True))
    act_flops = (TRANSCENDENTAL_FLOPS + 1) if cfg.gated_mlp else TRANSCENDENTAL_FLOPS
    ops.append((act_flops * routed * i, (up + 1) * routed * i * d, False))
    ops.append((2.0 * routed * i * h, (used * i * h + routed * (i + h)) * d, True))
    return ops


def _attention_ops(cfg: ModelConfig, sh: _Shape, wl: Workload) -> list:
    h, T, d = cfg.hidden, sh.tokens, sh.d
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    if wl.mode == "decode":  # read the cached keys and values of every sequence
        kv_read = wl.micro_batch * sh.context * 2 * kv
    else:
        kv_read = T * 2 * kv
    return [
        (2.0 * T * h * (q + 2 * kv), (h * (q + 2 * kv) + T * h + T * (q + 2 * kv)) * d, True),
        (4.0 * T * sh.context * q, (2 * T * q + kv_read) * d, True),
        (2.0 * T * q * h, (q * h + T * q + T * h) * d, True),
        (float(T * h), 3 * T * h * d, False),  # residual add
    ]


def _layer(cfg: ModelConfig, i: int, wl: Workload, dev: DeviceProfile) -> PartCost:
    sh = _shape(cfg, wl)
    T, d, h = sh.tokens, sh.d, cfg.hidden
    q, kv = cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim
    ops = [_norm_op(cfg, T, d), *_attention_ops(cfg, sh, wl), _norm_op(cfg, T, d),
           *_mlp_ops(cfg, T, d), (float(T * h), 3 * T * h * d, False)]
    t, fl = _time(ops, dev, wl)
    params, _ = layer_params(cfg)
    k = cfg.experts_per_token
    inter = (3 if cfg.gated_mlp else 2) * cfg.intermediate * k + (k - 1) * h
    stash = 0.0
    if wl.training:
        per_token = h if wl.recompute else 4 * h + 2 * q + 2 * kv + inter + cfg.num_experts - 1
        stash = per_token * T * d * wl.in_flight
    cache = 0.0 if wl.training else 2.0 * kv * wl.seq_len * wl.micro_batch * d * wl.in_flight
    work = T * (2 * q + 2 * kv + (2 if cfg.gated_mlp else 1) * cfg.intermediate * k) * d
    role = "moe_decoder_layer" if cfg.moe else "decoder_layer"
    return PartCost(cfg.layer_name(i), role, params, fl, t, params * d,
                    _state_bytes(params, wl), stash, cache, work, T * h * d)


def _embedding(cfg: ModelConfig, wl: Workload, dev: DeviceProfile) -> PartCost:
    sh = _shape(cfg, wl)
    T, d, h = sh.tokens, sh.d, cfg.hidden
    ops = [(0.0, 2 * T * h * d, False)]  # gather rows
    if cfg.learned_positions:
        ops += [(0.0, 2 * T * h * d, False), (float(T * h), 3 * T * h * d, False)]
    t, fl = _time(ops, dev, wl)
    n = param_counts(cfg).embedding
    return PartCost(cfg.modules[0], "embedding", n, fl, t, n * d, _state_bytes(n, wl),
                    0.0, 0.0, T * h * d, T * h * d)


def _final_norm(cfg: ModelConfig, wl: Workload, dev: DeviceProfile) -> PartCost:
    sh = _shape(cfg, wl)
    T, d, h = sh.tokens, sh.d, cfg.hidden
    t, fl = _time([_norm_op(cfg, T, d)], dev, wl)
    n = param_counts(cfg).final_norm
    stash = T * h * d * wl.in_flight if wl.training else 0.0
    return PartCost(cfg.modules[2], "final_norm", n, fl, t, n * d, _state_bytes(n, wl),
                    stash, 0.0, T * h * d, sh.head_tokens * h * d)


def _head(cfg: ModelConfig, wl: Workload, dev: DeviceProfile) -> PartCost:
    sh = _shape(cfg, wl)
    T, d, h, V = sh.head_tokens, sh.d, cfg.hidden, cfg.vocab
    ops = [(2.0 * T * h * V, (h * V + T * h + T * V) * d, True)]
    if wl.training:  # softmax cross-entropy on fp32 logits
        ops.append((5.0 * T * V, 2 * T * V * LOGIT_BYTES, False))
    t, fl = _time(ops, dev, wl)
    n = cfg.vocab * h  # a tied head still holds a copy of the embedding on its stage
    stash = T * (h * d + V * LOGIT_BYTES) if wl.training else 0.0  # last stage: one
    state = _state_bytes(n, wl)
    return PartCost(cfg.modules[3], "lm_head", n, fl, t, n * d, state, stash, 0.0,
                    T * V * LOGIT_BYTES, 0.0)


def part_costs(cfg: ModelConfig, wl: Workload, dev: DeviceProfile) -> list[PartCost]:
    """Costs of [embedding, layer 0, ..., layer L-1, final norm, LM head]."""
    wl = wl.resolved(cfg.max_positions)
    layers = [_layer(cfg, i, wl, dev) for i in range(cfg.num_layers)]
    return [_embedding(cfg, wl, dev), *layers, _final_norm(cfg, wl, dev), _head(cfg, wl, dev)]
