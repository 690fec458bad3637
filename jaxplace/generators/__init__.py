"""Seeded, deterministic graph generators: REGAL-like random DAGs and DNN-like families.

    import jaxplace as jp
    g = jp.generators.generate("resnet", seed=3, stages=(3, 4, 6, 3), block="bottleneck")
    graphs = jp.generators.regal_set(100, seed=0)

Every generator takes `seed` (a non-negative int; all randomness comes from
`numpy.random.default_rng(seed)`, so a seed gives the same graph everywhere) and
returns a `CompGraph` whose `meta` records the generator name, seed and arguments.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.generators.dnn import inception, resnet, transformer, unet
from jaxplace.generators.regal import (
    MODELS,
    derive_seed,
    regal,
    regal_set,
    regal_suite,
    weigh_dag,
)
from jaxplace.generators.training import training_graph
from jaxplace.graph import CompGraph

GENERATORS = {
    "regal": regal,
    "transformer": transformer,
    "resnet": resnet,
    "inception": inception,
    "unet": unet,
}

# Small instances for examples and smoke tests (fixed seed 0): 100-150 nodes.
EXAMPLES: dict[str, dict[str, Any]] = {
    "transformer": {"layers": 8, "d_model": 512, "heads": 8, "seq": 256},
    "resnet": {"stages": (3, 4, 6, 3), "block": "basic"},
    "inception": {"modules": 9, "width": 32},
    "unet": {"depth": 5, "convs": 3, "image": 256},
    "regal": {"n": 120},
}


def generator_options(name: str) -> tuple[str, ...]:
    """The keyword options of generator `name` (besides `seed`)."""
    fn = _lookup(name)
    return tuple(p for p in inspect.signature(fn).parameters if p != "seed")


def _lookup(name: str):
    if name not in GENERATORS:
        raise JaxplaceError(f"unknown generator {name!r}; expected one of "
                            f"{', '.join(GENERATORS)}", field="family")
    return GENERATORS[name]


def generate(name: str, seed: int = 0, **kwargs) -> CompGraph:
    """`GENERATORS[name](seed=seed, **kwargs)`, with unknown names/options as JaxplaceError."""
    fn = _lookup(name)
    allowed = generator_options(name)
    bad = sorted(set(kwargs) - set(allowed))
    if bad:
        raise JaxplaceError(f"option {bad[0]!r} does not apply to generator {name!r} "
                            f"(options: {', '.join(allowed)})", field=name)
    return fn(seed=seed, **kwargs)


def example(family: str = "transformer", seed: int = 0) -> CompGraph:
    """A small built-in example graph (100-150 nodes) of `family`; default: the
    8-layer transformer (115 nodes) used by the README's first command."""
    _lookup(family)
    return generate(family, seed=seed, **EXAMPLES[family])


#: the latency benchmarks' workloads (op-level GPT/Swin graphs, small random DAGs on
#: random clusters), loaded on first use by name: their modules import the roofline
#: importer, and `latency_models` builds its inception example through `generate`
_LAZY = {"LATENCY_MODELS": ("jaxplace.generators.latency_models", "MODELS"),
         "gpt_like": ("jaxplace.generators.latency_models", "gpt_like"),
         "swin_like": ("jaxplace.generators.latency_models", "swin_like"),
         "small_problems": ("jaxplace.generators.latency_small", "small_problems")}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.generators' has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


__all__ = [
    "EXAMPLES",
    "GENERATORS",
    "LATENCY_MODELS",
    "MODELS",
    "derive_seed",
    "example",
    "generate",
    "generator_options",
    "gpt_like",
    "inception",
    "regal",
    "regal_set",
    "regal_suite",
    "resnet",
    "small_problems",
    "swin_like",
    "training_graph",
    "transformer",
    "unet",
    "weigh_dag",
]
