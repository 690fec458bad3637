"""Runnable pipelines: plans restricted to the cut positions a framework can execute
(`chain`), a JAX program split into jitted stages over devices (`jax_stages`), and the
timelines of pipeline-parallel training schedules (`schedule`)."""

from jaxplace.pipeline.chain import ChainSplit, plan_chain, segments_graph, split_from_starts
from jaxplace.pipeline.jax_stages import JaxPlan, Stage, plan_jax, run_stages, stage_functions
from jaxplace.pipeline.schedule import ScheduleEvent, ScheduleTimeline, simulate_schedule
from jaxplace.pipeline.schedule_orders import SCHEDULES, pipeline_order

__all__ = [
    "SCHEDULES",
    "ChainSplit",
    "JaxPlan",
    "ScheduleEvent",
    "ScheduleTimeline",
    "Stage",
    "pipeline_order",
    "plan_chain",
    "plan_jax",
    "run_stages",
    "segments_graph",
    "simulate_schedule",
    "split_from_starts",
    "stage_functions",
]
