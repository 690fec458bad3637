"""Spatial (intra-layer) splits of CNN layers with halo exchange (BBGraP-style).

    from jaxplace.spatial import build_model, plan_spatial
    from jaxplace.cluster import uniform_cluster
    result = plan_spatial(build_model("resnet50", 224), uniform_cluster(3, "t4"))
    result.latency, result.latency_one, result.halo_initial, result.halo_optimized

Modules: `intervals` (Eqs. 1-6), `layers` (the `Layer` graph and box mapping),
`plan` (placements, initial and optimized transfers), `cost` (roofline compute,
links, event simulation), `optimize` (axis choice: DP on chains, local search
on DAGs; hybrid sweep), `pipeline` (contiguous-stage baseline), `models`
(ResNet/VGG/YOLO layer graphs), `load` (from ONNX and JAX), `api`
(`plan_spatial`, the plan JSON) and `execute` (runs a plan part by part with
JAX; imported on its own since it loads JAX).
"""

from jaxplace.spatial.api import SpatialResult, plan_spatial, to_json
from jaxplace.spatial.cost import simulate
from jaxplace.spatial.layers import Layer
from jaxplace.spatial.load import layers_from_jax, layers_from_onnx
from jaxplace.spatial.models import MODELS, NetBuilder, build_model
from jaxplace.spatial.optimize import ALL_AXES, SpatialProblem
from jaxplace.spatial.pipeline import best_pipeline
from jaxplace.spatial.plan import Placement, Plan, initial_transfers, optimized_transfers

__all__ = ["ALL_AXES", "MODELS", "Layer", "NetBuilder", "Placement", "Plan", "SpatialProblem",
           "SpatialResult", "best_pipeline", "build_model", "initial_transfers",
           "layers_from_jax", "layers_from_onnx", "optimized_transfers", "plan_spatial",
           "simulate", "to_json"]
