"""Batched JAX decoder: SliceGraph(Kahn(x)) for whole populations of priority vectors.

Public API (re-exported by `jaxplace`): `evaluate`, `decode`, `evaluate_graphs`,
`make_evaluator`, `score`, `score_graphs`, `device_graph`, `stack_graphs`,
`DeviceGraph`, `Spec`, `FLOAT32_RTOL` (and `block_bound`, for `score(..., window=)`).
"""

from jaxplace.decoder._layout import DeviceGraph, Spec, device_graph, problem_spec, stack_graphs
from jaxplace.decoder.evaluate import (
    FLOAT32_RTOL,
    block_bound,
    decode,
    evaluate,
    evaluate_graphs,
    make_evaluator,
    score,
    score_graphs,
)

__all__ = [
    "FLOAT32_RTOL",
    "DeviceGraph",
    "Spec",
    "block_bound",
    "decode",
    "device_graph",
    "evaluate",
    "evaluate_graphs",
    "make_evaluator",
    "problem_spec",
    "score",
    "score_graphs",
    "stack_graphs",
]
