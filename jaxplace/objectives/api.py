"""The user API that depends on the objective, dispatched through it (`jp.evaluate`,
`jp.decode`, `jp.simple_lower_bound`; `jp.evaluate_partition` is `cost`'s and
`jp.certify` is `bounds.certificate`'s, which dispatch the same way)."""

from __future__ import annotations

import numpy as np

from jaxplace.objectives.registry import objective_of


def evaluate(problem, X, **settings) -> np.ndarray:
    """(P,) float64 costs of the priority rows X under the problem's objective: the
    pipeline bottleneck of SliceGraph(Kahn(x)) (throughput; on unequal devices rows
    may carry d device keys), or the makespan of the list schedule of Kahn(x)
    (latency). Settings go to the objective's decoder (throughput: `precision`,
    `chunk_size`, `devices`, `memory_budget`, `impl`, `window`)."""
    return objective_of(problem).evaluate(problem, X, **settings)


def decode(problem, x, **settings):
    """The `Partition` that x decodes to (a list for (P, n)); for latency, the
    partition standing for the list schedule (device of every op, makespan)."""
    return objective_of(problem).decode(problem, x, **settings)


def simple_lower_bound(problem) -> float:
    """The objective's own closed-form lower bound (`Objective.lower_bound`; the one
    dispatcher: `objectives.throughput.cost.simple_lower_bound` and the search's `lower_bound` are
    this function): max(largest op, total work / k) on identical accelerators (per
    placement unit with CPU blocks), the load bound on unequal devices, max(critical
    path, load) for latency."""
    return float(objective_of(problem).lower_bound(problem))


__all__ = ["decode", "evaluate", "simple_lower_bound"]
