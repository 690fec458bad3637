"""Measured forward and backward times of a torch module's pipeline stages.

The module is cut where a `PipelinePlan` (or any `split_spec`) cuts it, with
torch.distributed.pipelining's own splitter, so the measured stages are the very
submodules a pipeline run executes. Each stage runs in this process on one thread (as
a stage process of `run_pipeline` does): forward on the previous stage's output, then
backward from a gradient of ones on its outputs; the median of `repeats` timed rounds
after `warmup` untimed ones is kept.

Times are the thread's CPU seconds (`time.thread_time`) by default: with one intra-op
thread, torch computes a stage on the calling thread, and CPU time does not count the
moments the OS gives the core to other processes (on a shared machine, wall time
measures the neighbours' load). `clock="wall"` measures wall time instead.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError


@dataclass(frozen=True)
class StageTimes:
    """Measured seconds per microbatch of every stage.

    Attributes:
        fwd, bwd: (stages,) float64 median forward / backward seconds.
        out_bytes: (stages,) bytes each stage's outputs hold (what it sends on).
        fwd_all, bwd_all: (repeats, stages) every timed round.
    """

    fwd: np.ndarray
    bwd: np.ndarray
    out_bytes: np.ndarray
    fwd_all: np.ndarray
    bwd_all: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.fwd + self.bwd


def _tensors(v) -> list:
    import torch

    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, list | tuple):
        return [t for x in v for t in _tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _tensors(x)]
    return []


def stage_modules(module, example_args: Sequence, split_spec: dict) -> list:
    """The stage submodules torch.distributed.pipelining makes of `module` cut at
    `split_spec` (an empty spec: the whole module as one stage)."""
    from torch.distributed.pipelining import pipeline

    from jaxplace.torch.run import without_split_wrappers

    clean = without_split_wrappers(module)
    if not split_spec:
        return [clean]
    try:
        pipe = pipeline(clean, mb_args=tuple(example_args), split_spec=dict(split_spec))
    except Exception as exc:  # the splitter's errors come from user modules
        raise JaxplaceError(f"torch.distributed.pipelining could not split the module: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                            field="split_spec") from exc
    return [pipe.get_stage_module(i) for i in range(pipe.num_stages)]


def _prepare(values) -> tuple[list, list]:
    """Detached copies of a stage's inputs; float ones require grad (as a pipeline
    stage's received activations do)."""
    ins = []
    grads = []
    for v in values:
        t = v.detach().clone()
        if t.is_floating_point():
            t.requires_grad_(True)
            grads.append(t)
        ins.append(t)
    return ins, grads


CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}


def time_stages(stages: Sequence, example_args: Sequence, *, repeats: int = 5,
                warmup: int = 2, threads: int = 1, clock: str = "cpu") -> StageTimes:
    """Forward and backward seconds of each stage, chained on `example_args` (one
    microbatch)."""
    import torch

    if repeats < 1 or warmup < 0:
        raise JaxplaceError("repeats must be >= 1 and warmup >= 0", field="repeats")
    if clock not in CLOCKS:
        raise JaxplaceError(f"unknown clock {clock!r}; known: {', '.join(CLOCKS)}",
                            field="clock")
    now = CLOCKS[clock]
    old = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        fwd = np.zeros((repeats, len(stages)))
        bwd = np.zeros((repeats, len(stages)))
        out_bytes = np.zeros(len(stages))
        for r in range(warmup + repeats):
            values = list(example_args)
            for s, mod in enumerate(stages):
                ins, _ = _prepare(values)
                t0 = now()
                out = mod(*ins)
                t1 = now()
                outs = [o for o in _tensors(out) if o.requires_grad]
                if outs:
                    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
                t2 = now()
                if r >= warmup:
                    fwd[r - warmup, s] = t1 - t0
                    bwd[r - warmup, s] = t2 - t1
                flat = _tensors(out)
                out_bytes[s] = sum(o.numel() * o.element_size() for o in flat)
                values = [o.detach() for o in flat]
        for mod in stages:
            mod.zero_grad(set_to_none=True)
    finally:
        torch.set_num_threads(old)
    return StageTimes(np.median(fwd, 0), np.median(bwd, 0), out_bytes, fwd, bwd)


def time_plan(plan, module, example_args: Sequence, **kwargs) -> StageTimes:
    """`time_stages` of the stages `plan` (a PipelinePlan) cuts `module` into."""
    return time_stages(stage_modules(module, example_args, plan.split_spec), example_args,
                       **kwargs)
