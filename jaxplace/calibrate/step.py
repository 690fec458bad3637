"""A training step predicted from a device profile, and measured by a real run.

`predict_step` prices the stages of a training plan with the profile (`costs`: forward
and backward per stage, sends at the profile's link latency + bandwidth), simulates the
schedule (`pipeline.schedule.simulate_schedule`) and adds the SGD step of the slowest
rank (3 passes over its parameters at the memory bandwidth, one launch per parameter
tensor). `measure_step` runs the plan over local gloo processes (`run_pipeline(...,
train=True)`) with a mean-squared loss to zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.calibrate.costs import op_table, stage_times
from jaxplace.errors import JaxplaceError
from jaxplace.importers.builder import US
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.pipeline.schedule import simulate_schedule


@dataclass(frozen=True)
class StepPrediction:
    """Predicted seconds of one training step of a plan.

    Attributes:
        fwd, bwd: (stages,) per microbatch; send: (stages - 1,) per microbatch.
        optimizer: (stages,) the SGD step of each stage's parameters.
        timeline: the simulated schedule (`ScheduleTimeline`).
        step_time: the timeline's step plus the slowest optimizer step.
    """

    fwd: np.ndarray
    bwd: np.ndarray
    send: np.ndarray
    optimizer: np.ndarray
    timeline: object
    step_time: float


def op_stages(ops, stage_starts: Sequence[str]) -> np.ndarray:
    """(n,) the stage of every traced op of a plan whose stages begin at these module
    FQNs ("" for the program's start)."""
    from jaxplace.torch import module_boundaries

    pos = {fqn: p for p, fqn in module_boundaries(ops).items()}
    missing = [f for f in stage_starts if f and f not in pos]
    if missing:
        raise JaxplaceError(f"{missing[0]!r} is not a module boundary of the traced module",
                            field="stage_starts")
    firsts = sorted({0, *(pos[f] for f in stage_starts if f)})
    return np.searchsorted(np.asarray(firsts), np.arange(len(ops)), side="right") - 1


def predict_step(plan, module, args: Sequence, profile: str | DeviceProfile) -> StepPrediction:
    """The step of training plan `plan` (`plan_pipeline(..., train=True)`) priced with
    `profile`; `args` is one microbatch."""
    from jaxplace.torch import from_torch

    prof = get_device(profile)
    graph, ops = from_torch(module, tuple(args), device=prof)
    stage = op_stages(ops, plan.stage_starts)
    table = op_table(graph, stage)
    fwd, bwd = stage_times(table, prof)
    send_bytes = boundary_bytes(graph, stage, prof)
    send = prof.link_latency_s + send_bytes / prof.link_bw if len(send_bytes) else 0.0
    tl = simulate_schedule(plan.schedule, fwd, bwd, plan.n_microbatches, send=send,
                           n_virtual=plan.n_virtual)
    params = np.bincount(stage, weights=graph.size_param, minlength=len(fwd))
    tensors = np.bincount(stage, weights=(graph.size_param > 0).astype(float),
                          minlength=len(fwd))
    launch = prof.launch_s
    opt = 3 * params / prof.mem_bw + 2 * tensors * launch
    return StepPrediction(fwd, bwd, np.atleast_1d(send), opt, tl,
                          float(tl.step_time + opt.max()))


def boundary_bytes(graph, stage: np.ndarray, profile: DeviceProfile) -> np.ndarray:
    """(stages - 1,) bytes crossing each boundary per microbatch: a tensor crosses every
    boundary from its producer's stage to its last consumer's (the graph holds tensor
    sizes as microseconds on `profile`'s link)."""
    k = int(stage.max()) + 1
    out = np.zeros(max(k - 1, 0))
    for t in range(graph.num_tensors):
        cons = graph.tensor_consumers[graph.tensor_ptr[t]:graph.tensor_ptr[t + 1]]
        if len(cons) == 0:
            continue
        a, b = stage[graph.tensor_producer[t]], stage[cons].max()
        out[a:b] += graph.tensor_size[t] * profile.link_bw / US
    return out


def mse_to_zero_target(module, args: Sequence):
    """(loss_fn, target) of a mean-squared loss to zeros, for any output shape."""
    import torch

    with torch.no_grad():
        out = module(*args)
    return torch.nn.MSELoss(), torch.zeros_like(out)


def measure_step(plan, module, batch: Sequence, *, steps: int = 3, timeout: float = 300.0):
    """A real training run of `plan` (`run_pipeline(..., train=True)`) on `batch` (all
    microbatches); returns the `TrainingRun` (step_time, stage_times, events)."""
    from jaxplace.torch import run_pipeline

    loss_fn, target = mse_to_zero_target(module, batch)
    return run_pipeline(plan, module, tuple(batch), train=True, target=target,
                        loss_fn=loss_fn, steps=steps, memory=False, timeout=timeout)
