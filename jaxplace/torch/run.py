"""Run a PipelinePlan: one local CPU process per stage (gloo), each building its
stage with torch.distributed.pipelining (`pipeline(...).build_stage`) and running the
GPipe schedule; the last stage's output comes back, with every stage's measured
forward time per microbatch (its submodule alone, communication excluded).

The processes are spawned (`torch.multiprocessing`, start method "spawn") on a free
local port; a hard deadline kills them, so a hang cannot stall the caller.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.torch.plan import PipelinePlan
from jaxplace.torch.processes import check_main_guard, free_port, wait_for, without_split_wrappers
from jaxplace.torch.trace import require_torch
from jaxplace.torch.train_run import run_training


@dataclass(frozen=True)
class PipelineRun:
    """The outputs of a pipeline run and its per-stage times.

    Attributes:
        outputs: the last stage's output for the whole batch (microbatches merged).
        measured_ms: (stages,) median forward time of each stage per microbatch, ms,
            on this machine's CPU (one thread per process).
        predicted_us: (stages,) the plan's predicted stage times, us on its device.
        n_microbatches: microbatches per step.
    """

    outputs: Any
    measured_ms: np.ndarray
    predicted_us: np.ndarray
    n_microbatches: int

    def table(self) -> str:
        """Measured next to predicted, each also as a share of its total (the devices
        differ, the shares compare)."""
        m, p = self.measured_ms, self.predicted_us
        lines = [f"{'stage':>5} {'measured ms':>12} {'share':>6} {'predicted us':>13} "
                 f"{'share':>6}"]
        for i in range(len(m)):
            lines.append(f"{i:>5} {m[i]:>12.4g} {m[i] / m.sum():>6.1%} {p[i]:>13.4g} "
                         f"{p[i] / p.sum():>6.1%}")
        return "\n".join(lines)


#: The FutureWarning torch 2.13's `pipeline()` tracing raises in every stage process.
LEAFSPEC_WARNING = r"`isinstance\(treespec, LeafSpec\)` is deprecated"


def _microbatch(args: Sequence, n: int) -> tuple:
    return tuple(a.chunk(n)[0] if hasattr(a, "chunk") else a for a in args)


def _worker(rank: int, world: int, port: int, module, split_spec: dict, args: tuple,
            n_mb: int, repeats: int, outdir: str, timeout: float) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import ScheduleGPipe, pipeline

    torch.set_num_threads(1)  # stages share the host's cores; time each on one
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=timeout))
    try:
        module.eval()
        with warnings.catch_warnings():
            # torch's own tracer copies its pytree specs through a deprecated isinstance
            # check (once per stage process); nothing for the user to act on
            warnings.filterwarnings("ignore", LEAFSPEC_WARNING, FutureWarning)
            pipe = pipeline(module, mb_args=_microbatch(args, n_mb), split_spec=split_spec)
        if pipe.num_stages != world:
            raise RuntimeError(f"the split spec makes {pipe.num_stages} stages for "
                               f"{world} processes")
        stage = pipe.build_stage(rank, torch.device("cpu"))
        times: list[float] = []
        starts: list[float] = []
        stage.submod.register_forward_pre_hook(lambda *_: starts.append(time.perf_counter()))
        stage.submod.register_forward_hook(
            lambda *_: times.append(time.perf_counter() - starts[-1]))
        schedule = ScheduleGPipe(stage, n_mb)
        out = None
        with torch.no_grad():
            for _ in range(repeats + 1):  # the first step warms up
                out = schedule.step(*args) if rank == 0 else schedule.step()
        torch.save({"times": times[n_mb:], "out": out if rank == world - 1 else None},
                   os.path.join(outdir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def run_pipeline(plan: PipelinePlan, module, args: Sequence, *, n_microbatches: int = 2,
                 repeats: int = 1, timeout: float = 120.0, train: bool = False,
                 target=None, loss_fn=None, steps: int = 3, warmup: int = 1,
                 optimizer: str | None = None, lr: float = 1e-3, memory: bool = True):
    """Run `module` split by `plan` over local processes (spawned: a script calling
    this must do so under `if __name__ == "__main__":`; a call from a process that is
    still importing the script is refused).

    Args:
        plan: from `plan_pipeline` (its split_spec cuts the module).
        module: the same module (pickled to every process).
        args: the whole batch; dimension 0 splits into `n_microbatches`.
        repeats: measured steps after one warm-up step.
        timeout: seconds for the whole run; past it the processes are killed and a
            JaxplaceError raised.
        train: run training steps of a training plan (`plan_pipeline(..., train=True)`)
            with torch's schedule class, `loss_fn(output, target)` on the whole batch's
            `target` split like args, `warmup` + `steps` steps of `optimizer` ("sgd",
            "adam"; default the plan's) at learning rate `lr`, and each rank's peak
            memory in one more step when `memory`: a `train_run.TrainingRun`
            (n_microbatches and repeats are the plan's and steps').
    """
    torch = require_torch()
    import torch.multiprocessing as mp

    if train or getattr(plan, "train", False):
        if not getattr(plan, "train", False):
            raise JaxplaceError("train=True needs a training plan: plan_pipeline(..., "
                                "train=True)", field="plan")
        return run_training(plan, module, args, target=target, loss_fn=loss_fn,
                            steps=steps, warmup=warmup, optimizer=optimizer, lr=lr,
                            memory=memory, timeout=timeout)
    check_main_guard()

    world = plan.num_stages
    if world < 2:
        raise JaxplaceError("a pipeline run needs at least 2 stages", field="plan")
    args = tuple(args)
    if any(isinstance(a, torch.Tensor) and a.shape[0] % n_microbatches for a in args):
        raise JaxplaceError(f"the batch dimension must divide into {n_microbatches} "
                            "microbatches", field="n_microbatches")
    with tempfile.TemporaryDirectory(prefix="jaxplace-pipe-") as outdir:
        ctx = mp.start_processes(
            _worker, args=(world, free_port(), without_split_wrappers(module),
                           dict(plan.split_spec), args,
                           n_microbatches, repeats, outdir, timeout),
            nprocs=world, join=False, start_method="spawn")
        wait_for(ctx, timeout, "the pipeline run", "a pipeline stage failed")
        res = [torch.load(os.path.join(outdir, f"rank{r}.pt"), weights_only=False)
               for r in range(world)]
    measured = np.asarray([1e3 * float(np.median(r["times"])) for r in res])
    return PipelineRun(res[-1]["out"], measured, np.asarray(plan.stage_times, float),
                       n_microbatches)
