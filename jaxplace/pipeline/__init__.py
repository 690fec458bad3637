"""Runnable pipelines: plans restricted to the cut positions a framework can execute
(`chain`), and a JAX program split into jitted stages over devices (`jax_stages`)."""

from jaxplace.pipeline.chain import ChainSplit, plan_chain, segments_graph, split_from_starts
from jaxplace.pipeline.jax_stages import JaxPlan, Stage, plan_jax, run_stages, stage_functions

__all__ = [
    "ChainSplit",
    "JaxPlan",
    "Stage",
    "plan_chain",
    "plan_jax",
    "run_stages",
    "segments_graph",
    "split_from_starts",
    "stage_functions",
]
