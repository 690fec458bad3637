"""Batched JAX decoder: SliceGraph(Kahn(x)) for whole populations of priority vectors.

- `Evaluator` (evaluator.py): a problem (or several) ready to score; pure
  `score_fn()` for compiled code, host `__call__` / `decode`.
- `evaluate`, `decode`, `evaluate_graphs`, `make_evaluator` (api.py): thin
  wrappers sharing one bounded cache of evaluators.
- Pure layer (scoring.py): `score`, `score_graphs`, `score_keys`; public types
  and layout (layout.py): `Spec`, `DeviceGraph`, `device_graph`, `stack_graphs`;
  host batching (batching.py); window policies (window.py); the `Partition` of a
  priority vector: orders, cuts, traceback (partitions.py).
- For one candidate: Kahn with priorities (kahn.py) and the SliceGraph DP
  (slicing.py); both in one Pallas kernel (fused.py), and one doing only the work it
  needs (sparse_fused.py).
"""

from jaxplace.compile_cache import enable_compile_cache as _enable_compile_cache
from jaxplace.decoder.api import (
    EVALUATORS,
    EvaluatorCache,
    decode,
    evaluate,
    evaluate_graphs,
    make_evaluator,
)
from jaxplace.decoder.batching import Batching
from jaxplace.decoder.evaluator import AUTO_IMPL, Evaluator, resolve_impl
from jaxplace.decoder.layout import DeviceGraph, Spec, device_graph, problem_spec, stack_graphs
from jaxplace.decoder.scoring import (
    FLOAT32_RTOL,
    score,
    score_graphs,
    score_keys,
    unit_priorities,
)
from jaxplace.decoder.window import (
    AdaptiveWindow,
    FixedWindow,
    FullWindow,
    SampledWindow,
    WindowPolicy,
    block_bound,
    block_bounds,
)

# the persistent compilation cache, on first use of the decoder (not at `import
# jaxplace`); JAXPLACE_CACHE_DIR moves it, empty turns it off
_enable_compile_cache()

__all__ = [
    "AUTO_IMPL",
    "EVALUATORS",
    "FLOAT32_RTOL",
    "AdaptiveWindow",
    "Batching",
    "DeviceGraph",
    "Evaluator",
    "EvaluatorCache",
    "FixedWindow",
    "FullWindow",
    "SampledWindow",
    "Spec",
    "WindowPolicy",
    "block_bound",
    "block_bounds",
    "decode",
    "device_graph",
    "evaluate",
    "evaluate_graphs",
    "make_evaluator",
    "problem_spec",
    "resolve_impl",
    "score",
    "score_graphs",
    "score_keys",
    "stack_graphs",
    "unit_priorities",
]
