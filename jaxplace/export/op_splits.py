"""Split points by op name (and by module, where the op names carry module paths) for
torch.distributed.pipelining, from any result whose stages are runs of ops in the
graph's order.

A stage begins at its first op; `pipe_split()` placed before that op in the model's
forward splits there. ONNX models exported by `torch.onnx.export` name ops by their
module scope ("/layer1/layer1.0/conv1/Conv"); where a stage's first op is the first
op of a module that the previous stage does not touch, the split is also given as
the outermost such module's FQN ("layer1.0" or "layer1.0.conv1") for
`SplitPoint.BEGINNING`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jaxplace.errors import JaxplaceError
from jaxplace.export.frameworks import Export


def module_chain(op_name: str) -> list[str]:
    """The FQNs of the modules around an op named by a torch.onnx scope path, outermost
    first ("/layer1/layer1.0/conv1/Conv" -> ["layer1", "layer1.0", "layer1.0.conv1"]);
    [] for names that are not scope paths."""
    if not op_name.startswith("/") or op_name.count("/") < 2:
        return []
    parts: list[str] = []
    chain = []
    for c in op_name[1:].split("/")[:-1]:
        if parts and c.startswith(parts[-1] + "."):  # a container's child: "layer1.0"
            parts[-1] = c
        else:
            parts.append(c)
        chain.append(".".join(parts))
    return chain


def split_points(ops: Sequence[str], block: Mapping[str, int],
                 source: str = "result") -> list[dict]:
    """[{"stage", "before_op", "module"}] for every stage after the first; `ops` in
    the graph's order. A stage that is not one run of ops in that order is refused."""
    runs: list[tuple[int, int]] = []  # (block, index of its first op)
    for i, op in enumerate(ops):
        if not runs or block[op] != runs[-1][0]:
            runs.append((block[op], i))
    seen: set[int] = set()
    for b, i in runs:
        if b in seen:
            raise JaxplaceError(
                f"torch.distributed.pipelining cannot express this plan: {ops[i]} returns "
                f"to block {b} after other stages (each stage must be one run of ops in "
                "the graph's order)", source=source)
        seen.add(b)
    out = []
    for s, (_, i) in enumerate(runs[1:], start=1):
        touched = {m for o in ops[:i] for m in module_chain(o)}
        # the outermost module that begins here: no earlier op ran inside it
        mod = next((m for m in module_chain(ops[i]) if m not in touched), None)
        out.append({"stage": s, "before_op": ops[i], "module": mod})
    return out


def to_torch_split_points(ops: Sequence[str], block: Mapping[str, int],
                          source: str = "result") -> Export:
    """The torch-pipelining export of a plan over ops (see the module docstring)."""
    points = split_points(ops, block, source)
    spec = {p["module"]: "BEGINNING" for p in points if p["module"]}
    lines = [f"# stage {p['stage']}: pipe_split() before op {p['before_op']}"
             + (f"  (module {p['module']})" if p["module"] else "") for p in points]
    if len(spec) == len(points):
        lines += ["from torch.distributed.pipelining import SplitPoint, pipeline",
                  "split_spec = {", *(f"    {m!r}: SplitPoint.BEGINNING," for m in spec),
                  "}",
                  "pipe = pipeline(model, mb_args=(example_input,), split_spec=split_spec)"]
    value = {"num_stages": len(points) + 1, "split_points": points,
             "split_spec": spec if len(spec) == len(points) else None}
    return Export("torch-pipelining", value, "\n".join(lines), (
        f"{len(points) + 1} pipeline stages, stage s = the ops from split point s to "
        "the next, in the graph's order",
        "op names as in the result (ONNX node names); a module FQN is given where the "
        "name is a torch.onnx scope path and the stage starts at that module",
        "without a module for every split point, put torch.distributed.pipelining."
        "pipe_split() in forward before each named op"))
