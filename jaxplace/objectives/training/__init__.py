"""The training objective: the simulated step time of a pipeline-parallel training
step under a schedule, per-rank memory under the schedule as a hard limit."""

from jaxplace.objectives.training.model import (
    SplitCost,
    TrainingOps,
    TrainingSettings,
    settings_of,
    split_cost,
    training_ops,
)
from jaxplace.objectives.training.objective import TRAINING, Training

__all__ = ["TRAINING", "SplitCost", "Training", "TrainingOps", "TrainingSettings",
           "settings_of", "split_cost", "training_ops"]
