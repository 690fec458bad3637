"""PyTorch models in, running pipelines out: plan a split that
torch.distributed.pipelining accepts (`plan_pipeline`) and run it over local processes
(`run_pipeline`), for inference or for training under a pipeline schedule. Needs the
`torch` extra (`pip install jaxplace[torch]`).

    from jaxplace.torch import plan_pipeline, run_pipeline
    plan = plan_pipeline(model, (x[:2],), k=2)
    out = run_pipeline(plan, model, (x,), n_microbatches=4)

    # training: 1F1B over 2 processes, 4 microbatches (run it under
    # `if __name__ == "__main__":`, the stage processes are spawned)
    plan = plan_pipeline(model, (x[:2],), k=2, train=True, schedule="1f1b",
                         n_microbatches=4, loss_fn=loss, target=y[:2], profile=True)
    run = run_pipeline(plan, model, (x,), target=y, loss_fn=loss, train=True, steps=3)
    plan.step_time, run.step_time, plan.stage_memory, run.peak_memory

Example models to try it on: `GPT2`, `ResNet`, `ViT`, `UnequalMLP` (random weights).
`processes` holds what the stage processes need (a free port, a picklable module, the
wait under a timeout).
"""

from jaxplace.torch.boundaries import even_layer_starts, module_boundaries, repeated_layers
from jaxplace.torch.plan import PipelinePlan, plan_pipeline
from jaxplace.torch.run import PipelineRun, run_pipeline
from jaxplace.torch.trace import TracedOp, from_torch, require_torch
from jaxplace.torch.train_plan import TrainingPlan
from jaxplace.torch.train_run import TrainingRun

#: the example models (`models.py` subclasses torch.nn.Module, so it imports torch: loaded
#: on first use, and without torch the error names the extra, as for the rest)
_MODELS = ("GPT2", "MaskedEncoder", "ResNet", "UnequalMLP", "ViT")


def __getattr__(name: str):
    if name not in _MODELS:
        raise AttributeError(f"module 'jaxplace.torch' has no attribute {name!r}")
    require_torch()
    from jaxplace.torch import models

    value = getattr(models, name)
    globals()[name] = value
    return value


__all__ = [
    "GPT2",
    "MaskedEncoder",
    "PipelinePlan",
    "PipelineRun",
    "ResNet",
    "TracedOp",
    "TrainingPlan",
    "TrainingRun",
    "UnequalMLP",
    "ViT",
    "even_layer_starts",
    "from_torch",
    "module_boundaries",
    "plan_pipeline",
    "repeated_layers",
    "run_pipeline",
]
