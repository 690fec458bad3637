"""Runnable pipelines: plans restricted to the cut positions a framework can execute
(`chain`), a JAX program split into jitted stages over devices (`jax_stages`), and the
timelines of pipeline-parallel training schedules (`schedule`).

Names load on first use: the training objective imports `schedule` whenever the
objectives are listed, and that must not pull in the planner or JAX."""

from __future__ import annotations

import importlib

_LAZY = {
    "ChainSplit": "chain", "plan_chain": "chain", "segments_graph": "chain",
    "split_from_starts": "chain",
    "JaxPlan": "jax_stages", "Stage": "jax_stages", "plan_jax": "jax_stages",
    "run_stages": "jax_stages", "stage_functions": "jax_stages",
    "ScheduleEvent": "schedule", "ScheduleTimeline": "schedule",
    "simulate_schedule": "schedule",
    "SCHEDULES": "schedule_orders", "pipeline_order": "schedule_orders",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"jaxplace.pipeline.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = sorted(_LAZY)
