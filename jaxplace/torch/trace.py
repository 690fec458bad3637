"""A PyTorch module as a CompGraph: `torch.export` traces it, every ATen call is one
op (program order), costed by `aten_costs` (the importers' roofline model) and
assembled by the importers' `GraphBuilder` (parameters charged to their first
consumer, tensors as hyperedges, sizes as link times). Each op keeps its module stack
(FQNs, outermost first) so plans can cut where torch.distributed.pipelining can.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.builder import GraphBuilder
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.torch._aten_costs import aten_name, op_cost


@dataclass(frozen=True)
class TracedOp:
    """One op of the traced program: its graph name, ATen name and module stack.

    `calls` names each enclosing module's call (torch.export's module-stack keys, one
    per call: "L__self___block" and "L__self___block@1" for a module called twice), so
    a module run twice in a row is told from one run once."""

    name: str
    aten: str
    modules: tuple[str, ...]  # FQNs of the enclosing modules, outermost first
    calls: tuple[str, ...] = ()  # the same modules' call keys, outermost first


def require_torch():
    """The torch module, or a one-line error naming the extra to install."""
    try:
        import torch
    except ImportError as exc:
        raise JaxplaceError("jaxplace.torch needs PyTorch: pip install 'jaxplace[torch]'"
                            ) from exc
    return torch


def _tensors(v) -> list:
    import torch

    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in _tensors(x)]
    return []


def _window(node) -> int:
    """Pooling window size from a pool op's kernel_size argument."""
    ks = node.args[1] if len(node.args) > 1 else node.kwargs.get("kernel_size", 1)
    ks = ks if isinstance(ks, (list, tuple)) else [ks]
    out = 1
    for d in ks:
        out *= int(d)
    return out


def export_module(module, example_args: Sequence, example_kwargs: dict | None = None):
    """`torch.export.export` of the module in eval mode; a one-line error on failure."""
    import torch

    try:
        return torch.export.export(module, tuple(example_args), kwargs=example_kwargs or {})
    except Exception as exc:  # tracing errors come from user code
        raise JaxplaceError(f"torch.export could not trace the module: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from exc


def from_torch(module, example_args: Sequence, example_kwargs: dict | None = None, *,
               device: str | DeviceProfile = "h100") -> tuple[CompGraph, list[TracedOp]]:
    """Trace `module(*example_args, **example_kwargs)` and return its op graph (units
    as `jaxplace.importers.from_jax`: work in us, tensor sizes in us of link time,
    `size_param` in bytes) and the ops in program order."""
    torch = require_torch()
    dev = get_device(device)
    ep = export_module(module, example_args, example_kwargs)
    b = GraphBuilder(dev)
    kinds = {s.arg.name: s for s in ep.graph_signature.input_specs
             if hasattr(s.arg, "name")}
    src: dict[Any, tuple] = {}  # fx node -> ("p", id) | ("t", [tensor ids]) | ("x",)
    ops: list[TracedOp] = []
    unknown: set[str] = set()
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            spec = kinds.get(node.name)
            val = node.meta.get("val")
            if spec is not None and spec.kind.name != "USER_INPUT" and \
                    isinstance(val, torch.Tensor):
                nbytes = val.numel() * val.element_size()
                src[node] = ("p", b.add_param(spec.target or node.name, nbytes))
            else:
                src[node] = ("x",)
            continue
        if node.op != "call_function":
            continue
        if node.target is operator.getitem:
            parent = src.get(node.args[0])
            if parent and parent[0] == "t" and isinstance(node.args[1], int) \
                    and node.args[1] < len(parent[1]):
                src[node] = ("t", [parent[1][node.args[1]]])
            continue
        name = aten_name(node.target)
        ins_nodes = [a for a in node.all_input_nodes]
        in_vals = [t for a in ins_nodes for t in _tensors(a.meta.get("val"))]
        outs = _tensors(node.meta.get("val"))
        flops, nbytes, t, known = op_cost(name, in_vals, outs, dev,
                                          window=_window(node) if "pool" in name else 1)
        if not known:
            unknown.add(name)
        frames = [(key, fqn) for key, (fqn, _) in
                  (node.meta.get("nn_module_stack") or {}).items() if fqn]
        stack = tuple(fqn for _, fqn in frames)
        where = stack[-1] if stack else ""
        in_t = sorted({tid for a in ins_nodes if src.get(a, ("x",))[0] == "t"
                       for tid in src[a][1]})
        in_p = [src[a][1] for a in ins_nodes if src.get(a, ("x",))[0] == "p"]
        label = f"{where}/{node.name}" if where else node.name
        _, tids = b.add_node(label, name, flops, nbytes, t, in_tensors=in_t, in_params=in_p,
                             out_bytes=[o.numel() * o.element_size() for o in outs])
        src[node] = ("t", tids)
        ops.append(TracedOp(label, name, stack, tuple(key for key, _ in frames)))
    graph = b.build({"source": "torch", "name": type(module).__name__,
                     "unknown_ops": sorted(unknown)})
    return graph, ops
