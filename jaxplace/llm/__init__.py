"""Decoder-only transformers from Hugging Face-style `config.json` files as layer-level
graphs with a roofline cost and an explicit memory model, the split rules of the
pipeline frameworks (baselines), and the configs shipped with jaxplace.

    import jaxplace as jp
    from jaxplace import llm
    problem = llm.llm_problem(llm.shipped_config("llama-2-7b"), k=8, mode="training")
    result = jp.search(problem)

`cluster_split` splits a layer chain exactly over a cluster's devices; `cluster_result`
turns its plan into a result (a row per stage, the DP's certificate).
"""

from jaxplace.llm.baselines import BASELINES, split_by_parameters, split_by_time, split_uniform
from jaxplace.llm.cluster_split import ClusterPlan, cluster_split, evaluate_split
from jaxplace.llm.config import ModelConfig, ParamCounts, is_hf_config, param_counts, read_config
from jaxplace.llm.costs import PartCost, part_costs
from jaxplace.llm.graph import (
    StageMemory,
    graph_from_config,
    layer_graph,
    llm_problem,
    part_table,
    stage_memory,
)
from jaxplace.llm.hetero import chain_split
from jaxplace.llm.shipped import shipped_config, shipped_configs
from jaxplace.llm.workload import MODES, Workload

__all__ = [
    "ClusterPlan", "cluster_split", "evaluate_split",
    "BASELINES", "MODES", "ModelConfig", "chain_split", "ParamCounts", "PartCost", "StageMemory",
    "Workload", "graph_from_config", "is_hf_config", "layer_graph", "llm_problem",
    "param_counts", "part_costs", "part_table", "read_config", "shipped_config",
    "shipped_configs", "split_by_parameters", "split_by_time", "split_uniform",
    "stage_memory",
]
