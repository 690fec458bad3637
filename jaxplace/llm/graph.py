"""A decoder-only transformer as a layer-level CompGraph: a chain embedding -> layer 0
-> ... -> layer L-1 -> final norm -> LM head, costed on a device profile.

Units follow the importers (`jaxplace.importers`): `work` and tensor sizes in
microseconds (the activation crossing a cut, over the device's link; in training the
gradient crosses back too, so twice), `size_param` in bytes. Here `size_param` is the
part's *resident memory* (weights, gradients and optimizer state, stashed activations
or KV cache: `PartCost.memory_bytes`), so that the problem's hard `capacity` (the
device memory times `memory_fraction`, less the largest transient working set) keeps
every stage within its GPU. The final norm and the LM head form one colocation class:
Megatron-LM and vLLM build them on the last stage together.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.builder import US
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.jsonio import read_json
from jaxplace.llm.config import ModelConfig, param_counts, read_config
from jaxplace.llm.costs import PartCost, part_costs
from jaxplace.llm.workload import Workload, workload_options
from jaxplace.problem import Problem

#: Node attributes holding the memory model (bytes), in `PartCost` field order.
MEMORY_ATTRS = ("weight_bytes", "state_bytes", "activation_bytes", "kv_bytes",
                "workspace_bytes")


def _config(config, source: str | None) -> tuple[ModelConfig, Mapping | None]:
    if isinstance(config, ModelConfig):
        return config, None
    if not isinstance(config, Mapping):
        source = source or os.fspath(config)
        config = read_json(config)
    return read_config(config, source), config


def _workload(cfg: ModelConfig, workload: Workload | None, options: dict,
              source: str) -> Workload:
    wl = workload or Workload()
    try:
        wl = replace(wl, **options).resolved(cfg.max_positions)
    except TypeError as exc:
        raise JaxplaceError(f"unknown workload option: {exc}", source=source) from None
    except JaxplaceError as exc:
        raise exc.with_source(source) from None
    if cfg.learned_positions and wl.seq_len > cfg.max_positions:
        raise JaxplaceError(f"{wl.seq_len} tokens exceed the model's {cfg.max_positions} "
                            "learned positions", source=source, field="seq_len")
    return wl


def layer_graph(config, workload: Workload | None = None,
                device: str | DeviceProfile = "h100", *, source: str | None = None,
                **options) -> CompGraph:
    """The layer graph of a decoder-only transformer on `device`.

    Args:
        config: a `ModelConfig`, a parsed config.json dict or its path.
        workload: the run (default `Workload()`: bf16 training, micro-batch 1).
        device: profile name or DeviceProfile; it sets the costs and the capacity.
        source: a name for error messages.
        options: `Workload` fields overriding `workload` (mode, seq_len, ...).
    """
    cfg, _ = _config(config, source)
    source = source or cfg.name
    wl = _workload(cfg, workload, options, source)
    dev = get_device(device)
    parts = part_costs(cfg, wl, dev)
    workspace = max(p.workspace_bytes for p in parts)
    capacity = dev.memory_bytes * wl.memory_fraction - workspace
    if capacity <= 0:
        raise JaxplaceError(f"the largest working set ({workspace / 1e9:.1f} GB) leaves "
                            f"no room on a {dev.name}", source=source, field="micro_batch")
    scale = (2.0 if wl.training else 1.0) / dev.link_bw * US
    n = len(parts)
    tensors = [(v, parts[v].out_bytes * scale, [v + 1]) for v in range(n - 1)]
    attrs = {name: np.asarray([getattr(p, name) for p in parts], np.float64)
             for name in ("flops", "params", *MEMORY_ATTRS)}
    attrs["color_class"] = np.asarray([-1] * (n - 2) + [0, 0], np.int64)
    names = [p.name for p in parts]
    meta = _meta(cfg, wl, dev, capacity, workspace)
    return CompGraph([p.time_s * US for p in parts], (), [p.memory_bytes for p in parts],
                     tensors=tensors, names=names, op_types=[p.role for p in parts],
                     node_ids=names, node_attrs=attrs, meta=meta)


def _meta(cfg: ModelConfig, wl: Workload, dev: DeviceProfile, capacity: float,
          workspace: float) -> dict:
    counts = param_counts(cfg)
    return {
        "format": "hf-config", "model": cfg.name, "family": cfg.family,
        "num_layers": cfg.num_layers, "param_count": counts.total,
        "active_param_count": counts.active_per_token,
        "workload": wl.to_dict(), "time_unit": "us",
        "work_unit": "us (roofline time on the device)",
        "size_out_unit": "us (bytes / link bandwidth); use bandwidth=1",
        "size_param_unit": "bytes of resident memory (weights, optimizer state, "
                           "activations or KV cache)",
        "bandwidth": 1.0, "capacity": capacity, "workspace_bytes": workspace,
        "device": dev.to_meta(), "modules": list(cfg.modules),
    }


def graph_from_config(data: Mapping, source: str = "config", *,
                      device: str | DeviceProfile | None = None, coarsen: bool = False,
                      **options) -> CompGraph:
    """`load_graph`'s reader for a Hugging Face config dict: workload options come
    from the file's optional "jaxplace" section, then from `options`; the device from
    `device`, the section's "device", or h100. `coarsen` does not apply (layer graphs)."""
    del coarsen
    section = workload_options(data.get("jaxplace"), source)
    dev = device or section.pop("device", None) or "h100"
    section.pop("device", None)
    section.update(options)
    return layer_graph(data, device=dev, source=source, **section)


def llm_problem(config, k: int, device: str | DeviceProfile = "h100",
                workload: Workload | None = None, **options):
    """A `Problem` with k stages of `device` (bandwidth 1, capacity from the graph).
    `in_flight` defaults to k (1F1B's first stage; every stage's KV caches)."""
    options.setdefault("in_flight", k if workload is None else workload.in_flight)
    graph = layer_graph(config, workload, device, **options)
    return Problem(graph, k, bandwidth=1.0, capacity=graph.meta["capacity"])


@dataclass(frozen=True)
class StageMemory:
    """Memory of one stage, bytes."""

    stage: int
    weights: float
    optimizer: float  # gradients + optimizer state
    activations: float
    kv_cache: float
    workspace: float
    device_bytes: float

    @property
    def total(self) -> float:
        return self.weights + self.optimizer + self.activations + self.kv_cache + \
            self.workspace

    @property
    def fits(self) -> bool:
        return self.total <= self.device_bytes


def stage_memory(graph: CompGraph, assignment, device_bytes=None) -> list[StageMemory]:
    """Per-stage memory of a layer graph for a block per node. Stages are the non-empty
    blocks in pipeline order (first appearance in model order), numbered 0..;
    `device_bytes` is one number or one per stage in that order (default: the graph's
    device memory times the workload's memory fraction)."""
    a = np.asarray(assignment, dtype=np.int64)
    attrs = graph.node_attrs
    if any(m not in attrs for m in MEMORY_ATTRS):
        raise JaxplaceError("not a layer graph from a model config (no memory model)",
                            field="graph")
    if device_bytes is None:
        device_bytes = graph.meta["device"]["memory_bytes"] * \
            graph.meta["workload"]["memory_fraction"]
    _, first = np.unique(a, return_index=True)
    blocks = [int(a[i]) for i in sorted(first)]
    caps = np.asarray(device_bytes, np.float64).reshape(-1)
    if len(caps) == 1:
        caps = np.repeat(caps, len(blocks))
    if len(caps) < len(blocks):
        raise JaxplaceError(f"{len(caps)} device sizes for {len(blocks)} stages",
                            field="device_bytes")
    out = []
    for s, b in enumerate(blocks):
        sel = a == b
        w, st, act, kv = (float(attrs[m][sel].sum()) for m in MEMORY_ATTRS[:4])
        ws = float(attrs["workspace_bytes"][sel].max())
        out.append(StageMemory(s, w, st, act, kv, ws, float(caps[s])))
    return out


def part_table(config, workload: Workload | None = None, device="h100",
               **options) -> list[PartCost]:
    """The `PartCost` of every part (for reports and notebooks)."""
    cfg, _ = _config(config, None)
    wl = _workload(cfg, workload, options, cfg.name)
    return part_costs(cfg, wl, get_device(device))
