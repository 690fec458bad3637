"""The latency objective: one inference on a cluster of unequal devices (MOIRAI).

`instance.py` holds the model (what a schedule is, `validate_schedule`); per-op times
on each device come from `jaxplace.cluster.times.instance_from(graph, cluster)`. Solvers:
`reference.list_schedule` (NumPy oracle: Kahn + earliest-finish-time list
scheduling), `decoder` (the same, batched in JAX, for search), `baselines` (fastest
single device, EFT greedy with upward ranks, best contiguous pipeline), `milp`
(MOIRAI's MILP on HiGHS, and cheap and LP lower bounds), `contiguous` (the
contiguous-split IP of Tarnawski et al.), `brute` (exhaustive, tiny instances).
`objective` is the `Objective` that dispatches to them and `search` its priority search:
`jp.search(jp.Problem(graph, cluster=c, objective="latency"))` runs them through the
search methods. Names below load their module on first use (HiGHS, JAX).
"""

import importlib

from jaxplace.objectives.latency.instance import (
    LatencyInstance,
    Schedule,
    Transfer,
    validate_schedule,
)

_LAZY = {
    "instance_from": "jaxplace.cluster.times",
    "list_schedule": "jaxplace.objectives.latency.reference",
    "lower_bound": "jaxplace.objectives.latency.reference",
    "BASELINES": "jaxplace.objectives.latency.baselines",
    "latency_graph": "jaxplace.objectives.latency.decoder",
    "score_jit": "jaxplace.objectives.latency.decoder",
    "fastest_single_device": "jaxplace.objectives.latency.baselines",
    "eft_greedy": "jaxplace.objectives.latency.baselines",
    "best_pipeline": "jaxplace.objectives.latency.baselines",
    "solve_moirai": "jaxplace.objectives.latency.milp",
    "latency_lower_bound": "jaxplace.objectives.latency.milp",
    "moirai_lp_bound": "jaxplace.objectives.latency.milp",
    "LatencyMILPResult": "jaxplace.objectives.latency.milp",
    "solve_contiguous": "jaxplace.objectives.latency.contiguous",
    "brute_force": "jaxplace.objectives.latency.brute",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.objectives.latency' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = ["LatencyInstance", "Schedule", "Transfer", "validate_schedule", *_LAZY]
