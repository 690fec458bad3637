"""What a pipeline runs: training steps, inference prefill or decode, with the sizes
that set the cost and the memory of every stage."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from jaxplace.errors import JaxplaceError

MODES = ("training", "inference", "decode")

#: Bytes per element of the dtypes a workload may use.
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

_ALIASES = {"float32": "fp32", "float": "fp32", "bfloat16": "bf16", "float16": "fp16",
            "half": "fp16", "float8": "fp8"}


@dataclass(frozen=True)
class Workload:
    """The run being split into stages.

    Attributes:
        mode: "training" (forward + backward, ~3x the forward time; weights, gradients,
            Adam state and stashed activations resident), "inference" (prefill of
            `seq_len` tokens per sequence, KV cache resident) or "decode" (one new
            token per sequence attending to `seq_len` cached tokens).
        seq_len: tokens per sequence (None: the model's max positions, at most 4096).
        micro_batch: sequences per micro-batch (what flows through the pipe at once).
        dtype: weights and activations: bf16, fp16, fp32, fp8 or int8.
        in_flight: micro-batches resident on a stage at once: stashed activations in
            training (1F1B's first stage holds min(stages, micro-batches) of them; use
            the number of stages for the worst case) and KV caches in inference (every
            stage keeps the cache of every sequence in the pipe). The LM head's logits
            are counted once: it always sits on the last stage, which holds one.
        memory_fraction: share of each device's memory a plan may fill (vLLM's
            gpu_memory_utilization defaults to 0.9); the rest is left to the runtime.
        recompute: full activation recomputation in training: stash only each layer's
            input, pay one more forward in the backward pass (4x the forward time).
    """

    mode: str = "training"
    seq_len: int | None = None
    micro_batch: int = 1
    dtype: str = "bf16"
    in_flight: int = 8
    memory_fraction: float = 0.9
    recompute: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise JaxplaceError(f"must be one of {', '.join(MODES)}, got {self.mode!r}",
                                field="mode")
        dtype = str(self.dtype).lower()
        dtype = _ALIASES.get(dtype, dtype)
        if dtype not in DTYPE_BYTES:
            raise JaxplaceError(f"must be one of {', '.join(DTYPE_BYTES)}, got "
                                f"{self.dtype!r}", field="dtype")
        object.__setattr__(self, "dtype", dtype)
        for name in ("seq_len", "micro_batch", "in_flight"):
            v = getattr(self, name)
            if v is None and name == "seq_len":
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or v != int(v) or v < 1:
                raise JaxplaceError(f"must be a positive integer, got {v!r}", field=name)
            object.__setattr__(self, name, int(v))
        f = self.memory_fraction
        if not (isinstance(f, int | float) and math.isfinite(f) and 0 < f <= 1):
            raise JaxplaceError(f"must be in (0, 1], got {f!r}", field="memory_fraction")

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def training(self) -> bool:
        return self.mode == "training"

    def resolved(self, max_positions: int) -> Workload:
        """With `seq_len` filled in (the model's max positions, at most 4096) and
        checked against the model."""
        if self.seq_len is None:
            return replace(self, seq_len=min(max_positions, 4096))
        return self

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: Keys of a config file's optional "jaxplace" section besides the Workload fields.
EXTRA_KEYS = ("device",)


def workload_options(section: Mapping | None, source: str = "config") -> dict:
    """Workload and device options from the "jaxplace" section of a config file, e.g.
    {"jaxplace": {"mode": "inference", "seq_len": 2048, "device": "a100"}}."""
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise JaxplaceError("must be an object of workload options", source=source,
                            field="jaxplace")
    known = {f.name for f in fields(Workload)} | set(EXTRA_KEYS)
    unknown = sorted(set(section) - known)
    if unknown:
        raise JaxplaceError(f"unknown option {unknown[0]!r}; known: "
                            f"{', '.join(sorted(known))}", source=source, field="jaxplace")
    return dict(section)
