"""PyTorch models in, running pipelines out: plan a split that
torch.distributed.pipelining accepts (`plan_pipeline`) and run it over local processes
(`run_pipeline`). Needs the `torch` extra (`pip install jaxplace[torch]`).

    from jaxplace.torch import plan_pipeline, run_pipeline
    plan = plan_pipeline(model, (x[:2],), k=2)
    out = run_pipeline(plan, model, (x,), n_microbatches=4)
"""

from jaxplace.torch.plan import (
    PipelinePlan,
    even_layer_starts,
    module_boundaries,
    plan_pipeline,
    repeated_layers,
)
from jaxplace.torch.run import PipelineRun, run_pipeline
from jaxplace.torch.trace import TracedOp, from_torch

__all__ = [
    "PipelinePlan",
    "PipelineRun",
    "TracedOp",
    "even_layer_starts",
    "from_torch",
    "module_boundaries",
    "plan_pipeline",
    "repeated_layers",
    "run_pipeline",
]
