"""Runnable pipelines: plans restricted to the cut positions a framework can execute
(`chain`), and a JAX program split into jitted stages over devices (`jax_stages`)."""

from jaxplace.pipeline.chain import ChainSplit, plan_chain, segments_graph, split_from_starts

__all__ = ["ChainSplit", "plan_chain", "segments_graph", "split_from_starts"]
