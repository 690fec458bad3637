"""Plan a PyTorch pipeline that torch.distributed.pipelining can cut.

`plan_pipeline(module, example_args, k)` traces the module (`trace.from_torch`), finds
the positions where `SplitPoint.BEGINNING` can cut (the first op of a submodule that
runs as one contiguous run of ops, called once), and splits the program there with the
jaxplace planner on the chain of segments between those positions
(`jaxplace.pipeline.chain`), certified on that restricted problem. The same planner
on every op position gives the op-level split (`pipe_split()` placement), and the even
split of the repeated layers (the torchtitan / DeepSpeed default) is costed alongside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.export.op_splits import split_points
from jaxplace.graph import CompGraph
from jaxplace.importers.builder import US
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.pipeline.chain import ChainSplit, plan_chain, split_from_starts
from jaxplace.torch.boundaries import even_layer_starts, module_boundaries, repeated_layers
from jaxplace.torch.trace import TracedOp, from_torch, require_torch
from jaxplace.torch.train_plan import TrainingOptions, plan_training

#: the objectives a module-boundary chain split serves (identical devices, MTPP)
OBJECTIVES = ("throughput",)


@dataclass(frozen=True)
class PipelinePlan:
    """A pipeline split of a torch module at module boundaries.

    Attributes:
        split_spec: {FQN: SplitPoint.BEGINNING} for `torch.distributed.pipelining.
            pipeline(module, mb_args, split_spec=...)`; stage s + 1 begins at the s-th.
        stage_starts: (num_stages,) FQN of the module each stage begins with ("" for
            the first stage, which begins at the program's start).
        split: the planned ChainSplit (stage_times, compute, io, param bytes, bound).
        op_split: the best split at any op (pipe_split() placement), for comparison.
        op_split_points: [{"stage", "before_op", "modules"}] of `op_split`.
        even: the even split of the repeated layers (None when there are none).
        layers: the repeated layers' FQNs in call order (e.g. transformer.h.0 ..).
        boundaries: {op position: FQN} of every module boundary a split may use.
        activation_bytes: (num_stages,) bytes of the tensors each stage sends on.
        device: the roofline profile's name; times in microseconds on it.
        notes: what the plan could not do (fewer stages, coarse boundaries).
    """

    split_spec: dict
    stage_starts: tuple[str, ...]
    split: ChainSplit
    op_split: ChainSplit
    op_split_points: list[dict]
    even: ChainSplit | None
    layers: tuple[str, ...]
    boundaries: dict[int, str]
    activation_bytes: np.ndarray
    device: str
    graph: CompGraph = field(repr=False)
    ops: tuple[TracedOp, ...] = field(repr=False)
    notes: tuple[str, ...] = ()

    @property
    def num_stages(self) -> int:
        return len(self.stage_starts)

    @property
    def stage_times(self) -> np.ndarray:
        """(num_stages,) predicted stage time, us (receive + compute + send)."""
        return self.split.stage_times

    @property
    def param_bytes(self) -> np.ndarray:
        return self.split.param_bytes

    @property
    def lower_bound(self) -> float | None:
        """Certified lower bound on the bottleneck of any split at module boundaries."""
        return self.split.lower_bound

    @property
    def coarse(self) -> bool:
        """True when the module boundaries cost more than the op-level split allows."""
        return any(n.startswith("module boundaries are too coarse") for n in self.notes)

    def _repr_html_(self) -> str:
        """Notebooks show the plan (`jaxplace.view`)."""
        import importlib

        return importlib.import_module("jaxplace.view").html_fragment(self)

    def summary(self) -> str:
        """A text table: per stage its first module, predicted time, params, sends."""
        s = self.split
        lines = [f"{self.num_stages} stages at module boundaries ({self.device} roofline, "
                 f"us): bottleneck {s.bottleneck:.6g}, lower bound "
                 f"{s.lower_bound:.6g} ({'optimal' if s.proved_optimal else 'gap'}), "
                 f"max/mean {s.balance:.3f}",
                 f"{'stage':>5}  {'begins at':<32} {'time us':>10} {'compute':>10} "
                 f"{'params MiB':>10} {'sends MiB':>10}"]
        for i, start in enumerate(self.stage_starts):
            lines.append(f"{i:>5}  {start or '(start)':<32} {s.stage_times[i]:>10.4g} "
                         f"{s.compute[i]:>10.4g} {s.param_bytes[i] / 2**20:>10.3f} "
                         f"{self.activation_bytes[i] / 2**20:>10.3f}")
        lines.append(f"op-level split (pipe_split): bottleneck {self.op_split.bottleneck:.6g}")
        if self.coarse:
            lines += [f"  stage {p['stage']}: pipe_split() before op {p['before_op']}"
                      for p in self.op_split_points]
        if self.even is not None:
            lines.append(f"even split of {len(self.layers)} layers: bottleneck "
                         f"{self.even.bottleneck:.6g} (max/mean {self.even.balance:.3f})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def plan_pipeline(module, example_args: Sequence, k: int, *, device: str | DeviceProfile = "h100",
                  objective: str = "throughput", example_kwargs: dict | None = None,
                  seed: int = 0, balance_target: float = 1.15, train: bool = False,
                  schedule: str = "1f1b", n_microbatches: int | None = None,
                  n_virtual: int = 1, loss_fn=None, target=None,
                  memory_limit: float | None = None, optimizer: str = "adam",
                  profile: bool = False, repeats: int = 5):
    """Split `module` into at most k pipeline stages at module boundaries.

    Args:
        module: a torch.nn.Module (traced in eval mode by torch.export).
        example_args: one microbatch of inputs (shapes fix the costs).
        k: the number of pipeline stages (processes).
        device: roofline profile (`jaxplace.importers.device_names()`) or a DeviceProfile.
        objective: "throughput" (the MTPP bottleneck on identical devices).
        example_kwargs: keyword inputs of the forward.
        seed: planner seed.
        balance_target: max/mean above which, when the op-level split is better, the
            plan notes that module boundaries are too coarse.
        train: plan a training pipeline instead (a `train_plan.TrainingPlan`): the
            split with the shortest simulated training step under `schedule` ("gpipe",
            "1f1b", "interleaved-1f1b", "zero-bubble", "zbv") with `n_microbatches`
            (default 2k) and `n_virtual` chunks per rank, priced for `optimizer`
            ("adam", "sgd"), each rank's memory under the schedule at most
            `memory_limit` bytes. `profile=True` measures every segment's forward and
            backward on this host (`repeats` runs, one thread; needs `loss_fn(output,
            target)` and a `target` for example_args); else the backward is derived
            from the traced forward.
    """
    require_torch()
    from torch.distributed.pipelining import SplitPoint

    if train:
        return plan_training(module, example_args, k, TrainingOptions(
            schedule=schedule, n_microbatches=n_microbatches, n_virtual=n_virtual,
            optimizer=optimizer, memory_limit=memory_limit, profile=profile,
            loss_fn=loss_fn, target=target, repeats=repeats), device=device,
            example_kwargs=example_kwargs, seed=seed)

    if objective not in OBJECTIVES:
        raise JaxplaceError(f"objective {objective!r} is not supported for module-boundary "
                            f"pipeline splits; known: {', '.join(OBJECTIVES)}",
                            field="objective")
    if int(k) < 1:
        raise JaxplaceError("must be at least 1", field="k")
    dev = get_device(device)
    module.eval()
    graph, ops = from_torch(module, example_args, example_kwargs, device=dev)
    bounds = module_boundaries(ops)
    cap = dev.memory_bytes  # a stage's weights must fit on its device
    split = plan_chain(graph, list(bounds), k, seed=seed, capacity=cap)
    if not np.isfinite(split.bottleneck):
        raise JaxplaceError(f"no split into {k} stages at module boundaries fits the "
                            f"weights in {dev.name} memory ({cap / 2**30:.0f} GiB per stage)",
                            field="k")
    op_split = plan_chain(graph, range(graph.num_nodes), k, seed=seed, capacity=cap)
    layers = repeated_layers(ops)
    even_starts = even_layer_starts(layers, k)
    even = (split_from_starts(graph, even_starts, method="even layers", capacity=cap)
            if even_starts and len(set(even_starts)) == k else None)
    starts = [bounds.get(p, "") for p in split.starts]
    notes = _notes(split, op_split, k, len(bounds), balance_target)
    return PipelinePlan(
        split_spec={fqn: SplitPoint.BEGINNING for fqn in starts[1:]},
        stage_starts=tuple(starts), split=split, op_split=op_split,
        op_split_points=_op_points(op_split, ops), even=even,
        layers=tuple(f for f, _ in layers), boundaries=bounds,
        activation_bytes=np.rint(split.io_out * dev.link_bw / US), device=dev.name,
        graph=graph, ops=tuple(ops), notes=tuple(notes))


def _notes(split: ChainSplit, op_split: ChainSplit, k: int, n_bounds: int,
           balance_target: float) -> list[str]:
    notes = []
    if len(split.starts) < k:
        why = (f"only {n_bounds} module boundaries" if n_bounds + 1 < k else
               "more stages would cost more in transfers than they save")
        notes.append(f"{len(split.starts)} stages, not {k}: {why}")
    fewer = len(split.starts) < len(op_split.starts)
    if (split.balance > balance_target or fewer) and \
            split.bottleneck > op_split.bottleneck * (1 + 1e-6):
        notes.append(f"module boundaries are too coarse: the best split at them has "
                     f"max/mean {split.balance:.3f} and bottleneck {split.bottleneck:.6g}; "
                     f"at op level {op_split.bottleneck:.6g} (max/mean "
                     f"{op_split.balance:.3f}), placing pipe_split() as op_split_points says")
    return notes


def _op_points(op_split: ChainSplit, ops: Sequence[TracedOp]) -> list[dict]:
    """The export's split points of the op-level split, with each op's module stack."""
    names = [o.name for o in ops]
    block = dict(zip(names, (int(b) for b in op_split.assignment), strict=True))
    points = split_points(names, block, source="plan_pipeline")
    for p in points:
        p["modules"] = list(ops[names.index(p["before_op"])].modules)
    return points
