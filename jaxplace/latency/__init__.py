"""The latency objective: one inference on a cluster of unequal devices (MOIRAI).

`instance.py` holds the model (what a schedule is, `validate_schedule`); per-op times
on each device come from `times.instance_from(graph, cluster)`. Solvers:
`reference.list_schedule` (NumPy oracle: Kahn + earliest-finish-time list
scheduling), `decoder` (the same, batched in JAX, for search), `baselines` (fastest
single device, EFT greedy with upward ranks, best contiguous pipeline), `milp`
(MOIRAI's MILP on HiGHS, and cheap and LP lower bounds), `contiguous` (the
contiguous-split IP of Tarnawski et al.), `brute` (exhaustive, tiny instances).
`jp.search(jp.Problem(graph, cluster=c, objective="latency"))` runs them through the
search methods. Names below load their module on first use (HiGHS, JAX).
"""

import importlib

from jaxplace.latency.instance import LatencyInstance, Schedule, Transfer, validate_schedule

_LAZY = {
    "instance_from": "jaxplace.latency.times",
    "list_schedule": "jaxplace.latency.reference",
    "fastest_single_device": "jaxplace.latency.baselines",
    "eft_greedy": "jaxplace.latency.baselines",
    "best_pipeline": "jaxplace.latency.baselines",
    "solve_moirai": "jaxplace.latency.milp",
    "latency_lower_bound": "jaxplace.latency.milp",
    "moirai_lp_bound": "jaxplace.latency.milp",
    "LatencyMILPResult": "jaxplace.latency.milp",
    "solve_contiguous": "jaxplace.latency.contiguous",
    "brute_force": "jaxplace.latency.brute",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.latency' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = ["LatencyInstance", "Schedule", "Transfer", "validate_schedule", *_LAZY]
