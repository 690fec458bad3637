"""Differentiable relaxation of MTPP: a smooth surrogate of the block costs over soft
assignments, optimized by gradient descent, decoded exactly.

- `surrogate`: `RelaxGraph` / `relax_graph`, `soft_costs`, `exact_costs` (the
  surrogate at a one-hot assignment equals `objectives.throughput.cost.evaluate_partition`).
- `optimize`: `RelaxConfig`, `optimize` (restarts vmapped, annealing in lax.scan),
  `candidates` (priority vectors for the decoder).
- `search`: the search methods "relax" and "relax+brkga".
"""

from jaxplace.relax.optimize import RelaxConfig, candidates, optimize
from jaxplace.relax.surrogate import RelaxGraph, exact_costs, relax_graph, soft_costs

__all__ = ["RelaxConfig", "RelaxGraph", "candidates", "exact_costs", "optimize",
           "relax_graph", "soft_costs"]
