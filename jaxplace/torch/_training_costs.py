"""What each segment of a traced module costs in a training step.

Backward times are derived from the traced forward (torch.export traces the forward;
the backward of an ATen op is priced from its forward, as PipeDream and Megatron's
FLOP counts do):

- matrix ops (linear, mm, bmm, addmm, matmul, convolutions, attention): backward
  = 2 x forward (the input gradient and the weight gradient are each a product of the
  forward's size); when the op reads a parameter, half of it is the weight gradient
  (the W that zero-bubble schedules defer), else none is;
- views: nothing;
- every other op (elementwise, norms, softmax, gathers): backward = 1 x forward; for
  an op that reads a parameter (an embedding's gather, a norm's scale) that backward
  counts as weight gradient.

The optimizer step of a segment is memory bound: Adam reads the parameter, its
gradient and two moments and writes three (7 x the fp32 parameter bytes); SGD reads
two and writes one (3 x).

Activation bytes per microbatch are measured, not derived: one forward with autograd
on records every tensor autograd saves for the backward (`saved_tensors_hooks`), each
storage once, in the first segment that saves it; parameters are not activations. A
tensor that crosses a stage boundary is also held by both stages (the sender keeps
its outputs, the receiver its inputs until their backward): the training objective
counts those per boundary (`held_bytes_per_unit`).

`profile_segments` instead measures each segment's forward and backward on this host
(one thread): the module split at every boundary (torch.distributed.pipelining's
split), timed by hooks on the segment submodules over a few runs.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.importers.builder import US
from jaxplace.importers.devices import DeviceProfile
from jaxplace.torch._aten_costs import ATEN_VIEWS, MATRIX_OPS
from jaxplace.torch.trace import TracedOp

#: bytes the optimizer step moves per parameter byte
OPTIMIZER_TRAFFIC = {"adam": 7.0, "adamw": 7.0, "sgd": 3.0}
#: optimizer-state bytes per parameter byte (fp32): Adam's two moments, plain SGD none
OPTIMIZER_STATE = {"adam": 2.0, "adamw": 2.0, "sgd": 0.0}


@dataclass(frozen=True)
class OpTrainingCosts:
    """(n,) float64 per op, graph time unit (us): backward, its weight-gradient part,
    the optimizer step."""

    bwd: np.ndarray
    weight: np.ndarray
    opt: np.ndarray


def backward_costs(ops: Sequence[TracedOp], work: np.ndarray, param_bytes: np.ndarray,
                   device: DeviceProfile, optimizer: str) -> OpTrainingCosts:
    """The derived backward and optimizer costs of every traced op (module doc)."""
    if optimizer not in OPTIMIZER_TRAFFIC:
        raise JaxplaceError(f"unknown optimizer {optimizer!r}; known: "
                            f"{', '.join(OPTIMIZER_TRAFFIC)}", field="optimizer")
    n = len(ops)
    bwd, weight = np.zeros(n), np.zeros(n)
    for i, op in enumerate(ops):
        has_param = param_bytes[i] > 0
        if op.aten in ATEN_VIEWS:
            continue
        if op.aten in MATRIX_OPS:
            bwd[i] = 2.0 * work[i]
            weight[i] = work[i] if has_param else 0.0
        else:
            bwd[i] = work[i]
            weight[i] = work[i] if has_param else 0.0
    opt = OPTIMIZER_TRAFFIC[optimizer] * np.asarray(param_bytes, float) / device.mem_bw * US
    return OpTrainingCosts(bwd, weight, opt)


def _segment_hooks(module, fqns: Sequence[str], on_enter):
    """Forward pre-hooks calling on_enter(i + 1) when boundary module fqns[i] starts."""
    named = dict(module.named_modules())
    handles = []
    for i, fqn in enumerate(fqns):
        if fqn not in named:
            raise JaxplaceError(f"no submodule {fqn!r}", field="boundaries")
        handles.append(named[fqn].register_forward_pre_hook(
            lambda *_, s=i + 1: on_enter(s)))
    return handles


def saved_activation_bytes(module, example_args: Sequence, fqns: Sequence[str],
                           example_kwargs: dict | None = None, *, loss_fn=None,
                           target=None) -> np.ndarray:
    """(len(fqns) + 1,) bytes autograd saves for the backward in each segment of one
    forward (segment s + 1 begins when module fqns[s] is called), each storage once,
    in the first segment saving it. With `loss_fn(output, target)`, the loss's saved
    tensors and the output itself (the last stage keeps it until its backward) count
    in the last segment."""
    import torch

    params = {p.untyped_storage().data_ptr() for p in module.parameters()}
    current = [0]
    seen: dict[int, tuple[int, int]] = {}  # storage -> (first segment saving it, bytes)

    def pack(t):
        if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter):
            st = t.untyped_storage()
            if st.data_ptr() not in params and st.nbytes():
                seen.setdefault(st.data_ptr(), (current[0], st.nbytes()))
        return t

    def enter(s):
        current[0] = s

    handles = _segment_hooks(module, fqns, enter)
    was_training = module.training
    module.train()
    try:
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack,
                                                                           lambda t: t):
            out = module(*example_args, **(example_kwargs or {}))
            if loss_fn is not None:
                loss_fn(out, target)
                for t in _tensors(out):
                    st = t.untyped_storage()
                    seen.setdefault(st.data_ptr(), (len(fqns), st.nbytes()))
    finally:
        for h in handles:
            h.remove()
        module.train(was_training)
    out = np.zeros(len(fqns) + 1)
    for seg, nbytes in seen.values():
        out[seg] += nbytes
    return out


def _tensors(v) -> list:
    import torch

    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in _tensors(x)]
    return []


@dataclass(frozen=True)
class SegmentProfile:
    """Measured seconds per microbatch of each segment on this host (the least over
    the runs)."""

    fwd: np.ndarray
    bwd: np.ndarray
    repeats: int


def profile_segments(module, example_args: Sequence, fqns: Sequence[str], loss_fn, target,
                     *, repeats: int = 5) -> SegmentProfile:
    """Forward and backward seconds of each segment (module doc), one thread.

    Segment s + 1 begins when module fqns[s] is called. Forward of a segment: from its
    start to the next one's (the last: to the loss). The backward runs the segments in
    reverse, and the gradient of module fqns[s]'s input marks the end of segment
    s + 1's backward (a full backward hook); the first segment's ends with backward().
    A boundary whose input needs no gradient gives no mark: its segment's time goes to
    the segment before it."""
    import torch

    if repeats < 1:
        raise JaxplaceError("must be at least 1", field="repeats")
    n = len(fqns) + 1
    named = dict(module.named_modules())
    fstamp: dict[int, float] = {}
    bstamp: dict[int, float] = {}
    handles = _segment_hooks(module, fqns,
                             lambda s: fstamp.__setitem__(s, time.perf_counter()))
    for i, fqn in enumerate(fqns):
        handles.append(named[fqn].register_full_backward_hook(
            lambda *_, s=i + 1: bstamp.__setitem__(s, time.perf_counter())))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    was_training = module.training
    module.train()
    fwd_t, bwd_t = np.zeros((repeats, n)), np.zeros((repeats, n))
    try:
        for r in range(-1, repeats):  # one warm-up run
            fstamp.clear()
            bstamp.clear()
            module.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            loss = loss_fn(module(*example_args), target)
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                # a boundary whose inputs need no gradient marks at its outputs' instead
                warnings.filterwarnings("ignore", "Full backward hook is firing")
                loss.backward()
            t2 = time.perf_counter()
            if r < 0:
                continue
            if len(fstamp) != n - 1:
                raise JaxplaceError("a boundary module was not called exactly once in "
                                    "the forward", field="boundaries")
            f_edges = [t0] + [fstamp[s] for s in range(1, n)] + [t1]
            fwd_t[r] = np.diff(f_edges)
            # backward marks from the last segment to the first; a missing mark
            # takes the next earlier one's time (its segment then gets 0)
            marks = [t1] + [0.0] * (n - 1) + [t2]
            for s in range(n - 1, 0, -1):
                marks[n - s] = bstamp.get(s, marks[n - s - 1])
            spans = np.diff(marks)  # spans[j]: segment n - 1 - j
            bwd_t[r] = spans[::-1]
    finally:
        for h in handles:
            h.remove()
        module.train(was_training)
        module.zero_grad(set_to_none=True)
        torch.set_num_threads(threads)
    # the least of the runs: on a shared host other processes only ever add time
    return SegmentProfile(fwd_t.min(axis=0), bwd_t.min(axis=0), repeats)
