"""Decoder-only transformer configurations read from Hugging Face-style `config.json`.

`read_config` normalizes the field names of the families it knows (Llama, Mistral,
Mixtral, Qwen2, GPT-2, GPT-NeoX; other Llama-like `model_type`s are read with Llama
conventions) into one `ModelConfig`, with the module names each family uses in its
`transformers` implementation (so that exports can name modules). Files are read
locally; nothing is downloaded. `param_counts` gives the parameters of each part.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.jsonio import read_json

#: Module names per family: (embedding, decoder-layer prefix, final norm, LM head).
MODULES = {
    "llama": ("model.embed_tokens", "model.layers", "model.norm", "lm_head"),
    "gpt2": ("transformer.wte", "transformer.h", "transformer.ln_f", "lm_head"),
    "gpt_neox": ("gpt_neox.embed_in", "gpt_neox.layers", "gpt_neox.final_layer_norm",
                 "embed_out"),
}

#: model_type -> the family whose conventions (module names, norms, biases) apply.
FAMILIES = {"gpt2": "gpt2", "gpt_neox": "gpt_neox"}

_GATED_ACTS = ("silu", "swish", "swiglu", "geglu")


def is_hf_config(data: Any) -> bool:
    """A Hugging Face-style decoder config: `num_hidden_layers` and `hidden_size`, or
    GPT-2's `n_layer` and `n_embd`."""
    if not isinstance(data, Mapping):
        return False
    return ("num_hidden_layers" in data and "hidden_size" in data) or (
        "n_layer" in data and "n_embd" in data)


@dataclass(frozen=True)
class ModelConfig:
    """The dimensions of a decoder-only transformer (Hugging Face names in comments).

    Attributes:
        name: a label (the file stem or `_name_or_path`).
        family: "llama" (Llama, Mistral, Mixtral, Qwen2, ...), "gpt2" or "gpt_neox".
        num_layers: decoder layers (num_hidden_layers / n_layer).
        hidden: model width (hidden_size / n_embd).
        intermediate: MLP width per expert (intermediate_size / n_inner or 4 * hidden).
        num_heads, num_kv_heads, head_dim: attention heads (grouped-query when
            num_kv_heads < num_heads).
        vocab: vocabulary size.
        max_positions: max_position_embeddings / n_positions.
        gated_mlp: SwiGLU-style MLP (gate, up, down) rather than fc1/act/fc2.
        num_experts, experts_per_token: mixture of experts (Mixtral's
            num_local_experts / num_experts_per_tok); 1 and 1 for dense models.
        qkv_bias, mlp_bias, norm_bias: which linear and norm layers carry biases.
        learned_positions: GPT-2's position embedding table (max_positions x hidden).
        tie_embeddings: the LM head shares the embedding matrix.
        sliding_window: attention window (Mistral), None for full attention.
    """

    name: str
    family: str
    num_layers: int
    hidden: int
    intermediate: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab: int
    max_positions: int
    gated_mlp: bool = True
    num_experts: int = 1
    experts_per_token: int = 1
    qkv_bias: bool = False
    mlp_bias: bool = False
    norm_bias: bool = False
    learned_positions: bool = False
    tie_embeddings: bool = False
    sliding_window: int | None = None

    @property
    def modules(self) -> tuple[str, str, str, str]:
        """(embedding, layer prefix, final norm, LM head) module names."""
        return MODULES[self.family]

    def layer_name(self, i: int) -> str:
        return f"{self.modules[1]}.{i}"

    @property
    def moe(self) -> bool:
        return self.num_experts > 1


def _int(data: Mapping, source: str, *keys: str, default: Any = None) -> int:
    for key in keys:
        v = data.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or v != int(v) or v < 1:
            raise JaxplaceError(f"must be a positive integer, got {v!r}", source=source,
                                field=key)
        return int(v)
    if default is None:
        raise JaxplaceError(f"missing field {keys[0]!r}", source=source)
    return int(default)


def _family(data: Mapping) -> str:
    if "n_layer" in data and "n_embd" in data:
        return "gpt2"
    return FAMILIES.get(str(data.get("model_type", "llama")).lower(), "llama")


def read_config(data: Mapping | str | os.PathLike, source: str | None = None) -> ModelConfig:
    """A `ModelConfig` from a parsed config dict or a path to config.json."""
    if not isinstance(data, Mapping):
        source = source or os.fspath(data)
        data = read_json(data)
    source = source or "config"
    if not is_hf_config(data):
        raise JaxplaceError("not a decoder config: expected num_hidden_layers and "
                            "hidden_size (or GPT-2's n_layer and n_embd)", source=source)
    family = _family(data)
    reader = _read_gpt2 if family == "gpt2" else _read_llama_like
    cfg = reader(data, source, family)
    if cfg.hidden % cfg.num_heads and "head_dim" not in data:
        raise JaxplaceError(f"hidden size {cfg.hidden} is not a multiple of the "
                            f"{cfg.num_heads} heads", source=source, field="num_attention_heads")
    if cfg.num_heads % cfg.num_kv_heads:
        raise JaxplaceError(f"{cfg.num_heads} heads are not a multiple of the "
                            f"{cfg.num_kv_heads} key/value heads", source=source,
                            field="num_key_value_heads")
    if cfg.experts_per_token > cfg.num_experts:
        raise JaxplaceError(f"{cfg.experts_per_token} experts per token exceed the "
                            f"{cfg.num_experts} experts", source=source,
                            field="num_experts_per_tok")
    return cfg


def _name(data: Mapping, source: str) -> str:
    name = data.get("_name_or_path") or data.get("name")
    if isinstance(name, str) and name:
        return name
    return os.path.splitext(os.path.basename(source))[0]


def _read_gpt2(data: Mapping, source: str, family: str) -> ModelConfig:
    hidden = _int(data, source, "n_embd")
    heads = _int(data, source, "n_head")
    return ModelConfig(
        name=_name(data, source), family=family, num_layers=_int(data, source, "n_layer"),
        hidden=hidden, intermediate=_int(data, source, "n_inner", default=4 * hidden),
        num_heads=heads, num_kv_heads=heads, head_dim=hidden // heads,
        vocab=_int(data, source, "vocab_size"),
        max_positions=_int(data, source, "n_positions", "n_ctx", default=1024),
        gated_mlp=False, qkv_bias=True, mlp_bias=True, norm_bias=True,
        learned_positions=True, tie_embeddings=bool(data.get("tie_word_embeddings", True)))


def _read_llama_like(data: Mapping, source: str, family: str) -> ModelConfig:
    hidden = _int(data, source, "hidden_size")
    heads = _int(data, source, "num_attention_heads")
    kv = _int(data, source, "num_key_value_heads", "num_kv_heads", default=heads)
    model_type = str(data.get("model_type", "")).lower()
    experts = _int(data, source, "num_local_experts", "num_experts", default=1)
    per_tok = _int(data, source, "num_experts_per_tok", default=min(2, experts))
    inter = _int(data, source, "moe_intermediate_size" if experts > 1 and
                 "moe_intermediate_size" in data else "intermediate_size",
                 default=4 * hidden)
    act = str(data.get("hidden_act", "silu" if family == "llama" else "gelu")).lower()
    neox = family == "gpt_neox"
    window = data.get("sliding_window") if data.get("use_sliding_window", True) else None
    return ModelConfig(
        name=_name(data, source), family=family, num_layers=_int(data, source,
                                                                 "num_hidden_layers"),
        hidden=hidden, intermediate=inter, num_heads=heads, num_kv_heads=kv,
        head_dim=_int(data, source, "head_dim", default=hidden // heads),
        vocab=_int(data, source, "vocab_size"),
        max_positions=_int(data, source, "max_position_embeddings", default=2048),
        gated_mlp=not neox and any(a in act for a in _GATED_ACTS),
        num_experts=experts, experts_per_token=per_tok if experts > 1 else 1,
        qkv_bias=neox or bool(data.get("attention_bias", model_type.startswith("qwen2"))),
        mlp_bias=neox or bool(data.get("mlp_bias", False)), norm_bias=neox,
        tie_embeddings=bool(data.get("tie_word_embeddings", False)),
        sliding_window=int(window) if isinstance(window, int) and window > 0 else None)


@dataclass(frozen=True)
class ParamCounts:
    """Parameters of each part (counts, not bytes); `total` counts tied weights once."""

    embedding: int
    layer: int  # one decoder layer
    final_norm: int
    head: int  # 0 when tied to the embedding
    layers: int  # all decoder layers
    total: int
    active_per_token: int  # MoE: the parameters one token uses


def layer_params(cfg: ModelConfig) -> tuple[int, int]:
    """(parameters of one decoder layer, of which used by one token)."""
    h, hd = cfg.hidden, cfg.head_dim
    q, kv = cfg.num_heads * hd, cfg.num_kv_heads * hd
    attn = h * (q + 2 * kv) + q * h
    if cfg.qkv_bias:
        attn += q + 2 * kv + (h if cfg.family != "llama" else 0)  # o_proj bias: GPT-2/NeoX
    mats = 3 if cfg.gated_mlp else 2
    expert = mats * h * cfg.intermediate
    if cfg.mlp_bias:
        expert += (mats - 1) * cfg.intermediate + h
    norms = 2 * h * (2 if cfg.norm_bias else 1)
    router = h * cfg.num_experts if cfg.moe else 0
    total = attn + cfg.num_experts * expert + router + norms
    active = attn + cfg.experts_per_token * expert + router + norms
    return total, active


def param_counts(cfg: ModelConfig) -> ParamCounts:
    """Parameters of the embedding, one layer, the final norm and the head."""
    h = cfg.hidden
    emb = cfg.vocab * h + (cfg.max_positions * h if cfg.learned_positions else 0)
    layer, active = layer_params(cfg)
    norm = h * (2 if cfg.norm_bias else 1)
    head = 0 if cfg.tie_embeddings else cfg.vocab * h
    layers = layer * cfg.num_layers
    total = emb + layers + norm + head
    active_total = emb + active * cfg.num_layers + norm + head
    return ParamCounts(emb, layer, norm, head, layers, total, active_total)
