"""Run a TrainingPlan: k local CPU processes (gloo, one thread each), each building
its stages with torch.distributed.pipelining and stepping the plan's schedule (torch's
own schedule class) and an optimizer over its stages' parameters.

Measured per step and rank: every forward / backward action (a wrapper around the
stage's forward_one_chunk, backward_one_chunk and backward_weight_one_chunk), timed
from the step's start, which every rank takes right after a barrier (so the ranks'
clocks agree to the barrier's skew); the step ends with the rank's optimizer step,
and the step time is the slowest rank's. Peak memory per rank: one more step under
torch.profiler (profile_memory): the bytes of the parameters and optimizer state
alive when it starts (gradients freed just before), plus the highest running sum of
the allocations and frees the profiler records during the step (op granularity, CPU
allocator).

The processes are spawned: a script that calls `run_pipeline` must do so under
`if __name__ == "__main__":`, since every spawned process imports the script again.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.pipeline.schedule import ScheduleEvent
from jaxplace.pipeline.schedule_orders import SCHEDULES, stage_rank
from jaxplace.torch.processes import check_main_guard, free_port, wait_for, without_split_wrappers
from jaxplace.torch.trace import require_torch
from jaxplace.torch.train_plan import TrainingPlan

#: the schedules a training run executes (the others need stage kinds this runner
#: does not build)
RUNNABLE = ("gpipe", "1f1b", "interleaved-1f1b")
OPTIMIZERS = ("sgd", "adam")
MEMORY_METHOD = ("torch.profiler memory events (running sum, op granularity) over "
                 "the live parameters and optimizer state")


@dataclass(frozen=True)
class TrainingRun:
    """What a training run measured.

    Attributes:
        step_time: median seconds per step (the slowest rank's, optimizer included).
        step_times: (steps,) every measured step's seconds.
        stage_times: (stages, 2) median forward and backward seconds per microbatch
            over the measured steps.
        peak_memory: (ranks,) bytes (see MEMORY_METHOD), or None when not measured.
        events: the last measured step's actions on every rank (seconds from its start).
        parameters: {FQN: tensor} every stage's parameters after the last step.
        losses: the last step's loss per microbatch.
        memory_method: how peak_memory was measured.
    """

    step_time: float
    step_times: np.ndarray
    stage_times: np.ndarray
    peak_memory: np.ndarray | None
    events: tuple[ScheduleEvent, ...]
    parameters: dict
    losses: list
    memory_method: str = MEMORY_METHOD


def _timed(log: list, kind: str, fn, t0: list, stage: int):
    def wrapped(chunk, *a, **k):
        s = time.perf_counter()
        out = fn(chunk, *a, **k)
        # backward_one_chunk(full_backward=False) is the input-gradient part only
        log.append((kind, stage, int(chunk), s - t0[0], time.perf_counter() - t0[0]))
        return out
    return wrapped


def _state_bytes(params, optimizer) -> int:
    import torch

    n = sum(p.numel() * p.element_size() for p in params)
    n += sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None)
    for st in optimizer.state.values():
        n += sum(v.numel() * v.element_size() for v in st.values()
                 if isinstance(v, torch.Tensor) and v.dim() > 0)
    return int(n)


def _profile_peak(prof) -> int:
    rows = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events()
                  if e.self_cpu_memory_usage)
    run = peak = 0
    for _, b in rows:
        run += b
        peak = max(peak, run)
    return int(peak)


@dataclass(frozen=True)
class _Job:
    world: int
    port: int
    module: Any
    split_spec: dict
    n_stages: int
    where: tuple[int, ...]
    schedule: str
    n_mb: int
    args: tuple
    target: Any
    loss_fn: Any
    optimizer: str
    lr: float
    steps: int
    warmup: int
    memory: bool
    outdir: str
    timeout: float


def _worker(rank: int, job: _Job) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import pipeline, schedules

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{job.port}", rank=rank,
                            world_size=job.world, timeout=timedelta(seconds=job.timeout))
    try:
        mb = tuple(a.chunk(job.n_mb)[0] if hasattr(a, "chunk") else a for a in job.args)
        pipe = pipeline(job.module, mb_args=mb, split_spec=job.split_spec)
        if pipe.num_stages != job.n_stages:
            raise RuntimeError(f"the split spec makes {pipe.num_stages} stages, the plan "
                               f"{job.n_stages}")
        mine = [s for s in range(job.n_stages) if job.where[s] == rank]
        stages = [pipe.build_stage(s, torch.device("cpu")) for s in mine]
        log: list = []
        t0 = [0.0]
        for st, s in zip(stages, mine, strict=True):
            st.forward_one_chunk = _timed(log, "F", st.forward_one_chunk, t0, s)
            st.backward_one_chunk = _timed(log, "B", st.backward_one_chunk, t0, s)
            st.backward_weight_one_chunk = _timed(log, "W", st.backward_weight_one_chunk,
                                                  t0, s)
        cls = getattr(schedules, SCHEDULES[job.schedule][0])
        single = job.schedule in ("gpipe", "1f1b")  # PipelineScheduleSingle classes
        sched = cls(stages[0] if single else stages, job.n_mb, loss_fn=job.loss_fn)
        params = [p for st in stages for p in st.submod.parameters()]
        opt = (torch.optim.SGD(params, lr=job.lr) if job.optimizer == "sgd"
               else torch.optim.Adam(params, lr=job.lr))
        first, last = 0 in mine, job.n_stages - 1 in mine
        times, logs, losses = [], [], []

        def step():
            losses.clear()
            opt.zero_grad(set_to_none=True)
            # training keeps no merged output (it would hold every microbatch's)
            sched.step(*(job.args if first else ()),
                       target=job.target if last else None,
                       losses=losses if last else None, return_outputs=False)
            opt.step()

        for i in range(job.warmup + job.steps):
            dist.barrier()
            log.clear()
            t0[0] = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0[0])
            logs.append(list(log))
        peak = None
        if job.memory:
            from torch.profiler import ProfilerActivity, profile

            dist.barrier()
            # the profiler sees no free of a block allocated before it started: free
            # the gradients first, or their reallocation would count twice
            opt.zero_grad(set_to_none=True)
            base = _state_bytes(params, opt)
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                step()
            peak = base + _profile_peak(prof)
        state = {n: p.detach().clone() for st in stages for n, p in
                 st.submod.named_parameters()}
        torch.save({"times": times[job.warmup:], "logs": logs[job.warmup:], "peak": peak,
                    "state": state, "losses": [float(x.detach()) for x in losses]},
                   os.path.join(job.outdir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def run_training(plan: TrainingPlan, module, args: Sequence, *, target, loss_fn,
                 steps: int = 3, warmup: int = 1, optimizer: str | None = None,
                 lr: float = 1e-3, memory: bool = True, timeout: float = 300.0
                 ) -> TrainingRun:
    """Train `module` split by `plan` for warmup + steps steps over plan.num_ranks
    processes (module doc); `run_pipeline(..., train=True)` calls this.

    Args:
        plan: from `plan_pipeline(..., train=True)`.
        module: the same module (pickled to every process; its parameters there are
            a copy: read the result's `parameters`).
        args: the whole batch; dimension 0 splits into plan.n_microbatches.
        target: the whole batch's targets for `loss_fn(output, target)` (picklable:
            a module-level function or an nn.Module loss).
        steps, warmup: measured steps after unmeasured ones.
        optimizer: "sgd" or "adam" (default: the plan's when it is one of these).
        lr: learning rate.
        memory: measure each rank's peak memory in one more step.
        timeout: seconds for the whole run.
    """
    torch = require_torch()
    import torch.multiprocessing as mp

    check_main_guard()
    opt = optimizer or (plan.optimizer if plan.optimizer in OPTIMIZERS else "sgd")
    if opt not in OPTIMIZERS:
        raise JaxplaceError(f"unknown optimizer {opt!r}; runs use {', '.join(OPTIMIZERS)}",
                            field="optimizer")
    if plan.schedule not in RUNNABLE:
        raise JaxplaceError(f"training runs execute {', '.join(RUNNABLE)}, not "
                            f"{plan.schedule!r}", field="schedule")
    if loss_fn is None or target is None:
        raise JaxplaceError("a training run needs loss_fn and target", field="loss_fn")
    if int(steps) < 1 or int(warmup) < 0:
        raise JaxplaceError("steps must be at least 1 and warmup at least 0", field="steps")
    world, m = plan.num_ranks, plan.n_microbatches
    if world < 2:
        raise JaxplaceError("a pipeline run needs at least 2 ranks", field="plan")
    args = tuple(args)
    if any(isinstance(a, torch.Tensor) and a.shape[0] % m for a in (*args, target)):
        raise JaxplaceError(f"the batch dimension must divide into {m} microbatches",
                            field="args")
    where = tuple(stage_rank(plan.schedule, world, plan.n_virtual))
    with tempfile.TemporaryDirectory(prefix="jaxplace-train-") as outdir:
        job = _Job(world, free_port(), without_split_wrappers(module), dict(plan.split_spec),
                   plan.num_stages, where, plan.schedule, m, args, target, loss_fn, opt,
                   float(lr), int(steps), int(warmup), bool(memory), outdir, timeout)
        ctx = mp.start_processes(_worker, args=(job,), nprocs=world, join=False,
                                 start_method="spawn")
        wait_for(ctx, timeout, "the training run", "a pipeline stage failed")
        res = [torch.load(os.path.join(outdir, f"rank{r}.pt"), weights_only=False)
               for r in range(world)]
    return _collect(res, plan, world)


def _collect(res: list, plan: TrainingPlan, world: int) -> TrainingRun:
    step_times = np.max(np.asarray([r["times"] for r in res]), axis=0)
    events = tuple(ScheduleEvent(rank, s, j, kind, float(a), float(b))
                   for rank, r in enumerate(res) for kind, s, j, a, b in r["logs"][-1])
    stage = np.zeros((plan.num_stages, 2))
    for s in range(plan.num_stages):
        for c, kind in enumerate(("F", "B")):
            d = [b - a for r in res for log in r["logs"] for k, st, _, a, b in log
                 if st == s and k == kind]
            stage[s, c] = float(np.median(d)) if d else 0.0
    peaks = [r["peak"] for r in res]
    params = {n: t for r in res for n, t in r["state"].items()}
    return TrainingRun(float(np.median(step_times)), step_times, stage,
                       None if any(p is None for p in peaks) else np.asarray(peaks, float),
                       events, params, res[-1]["losses"] or next(
                           (r["losses"] for r in res if r["losses"]), []))
