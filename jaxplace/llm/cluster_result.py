"""The plan of `cluster_split` as a result: one row per stage and the DP's certificate.

The DP is exhaustive over contiguous splits and the device orders it tries, so its
bottleneck is both the upper and the lower bound: the `Certificate` records a proven
optimum (method "cluster-dp"). Rows name each stage's device, its layers (node ids of
the layer graph, for `jaxplace export`), its time and its memory against the device's
share (`memory_fraction` of the device's memory).
"""

from __future__ import annotations

import numpy as np

from jaxplace.bounds.base import MethodResult
from jaxplace.bounds.certificate import Certificate
from jaxplace.cluster import Cluster
from jaxplace.graph import CompGraph
from jaxplace.llm.cluster_split import ClusterPlan


def plan_certificate(plan: ClusterPlan) -> Certificate:
    """The DP's answer as a certificate: lower bound = upper bound = its bottleneck."""
    dp = MethodResult("cluster-dp", float(plan.bottleneck), "Optimal", 0.0, kind="dp")
    return Certificate(lower_bound=float(plan.bottleneck), upper_bound=float(plan.bottleneck),
                       partition=np.asarray(plan.assignment), partition_source="cluster-dp",
                       method="cluster-dp", results=[dp],
                       settings={"orders": plan.orders_tried, "time_unit": "us"})


def stage_rows(plan: ClusterPlan, graph: CompGraph, cluster: Cluster) -> list[dict]:
    """One row per stage: device, profile, layer node ids, time (us), memory (bytes)
    and the device's memory limit (bytes)."""
    fraction = graph.meta["workload"]["memory_fraction"]
    return [{"stage": s, "device": cluster.names[d], "profile": cluster.profiles[d].name,
             "nodes": [graph.node_ids[v] for v in np.flatnonzero(plan.assignment == s)],
             "time_us": float(plan.stage_times[s]),
             "memory_bytes": float(plan.stage_memory[s]),
             "memory_limit_bytes": float(cluster.memory[d] * fraction)}
            for s, d in enumerate(plan.devices)]


__all__ = ["plan_certificate", "stage_rows"]
