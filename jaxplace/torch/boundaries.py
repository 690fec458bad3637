"""Where torch.distributed.pipelining can cut a traced module: module boundaries
(`SplitPoint.BEGINNING` before a module called once whose ops run contiguously) and
the repeated layers that torchtitan and DeepSpeed split evenly."""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxplace.torch.trace import TracedOp

_NUMBERED = re.compile(r"^(?P<parent>.+)\.\d+$")


def module_boundaries(ops: Sequence[TracedOp]) -> dict[int, str]:
    """{op position: FQN} where SplitPoint.BEGINNING of that module cuts the program:
    the module is called once (SplitPoint.BEGINNING cuts before every call; a module
    called twice, even back to back, would cut twice) and its ops are one contiguous
    run (so the pre-forward split falls exactly before its first op), not at position
    0. Where several modules begin at one position, the outermost is named."""
    runs: dict[str, list[int]] = {}
    calls: dict[str, set[str]] = {}
    for i, op in enumerate(ops):
        for j, fqn in enumerate(op.modules):
            runs.setdefault(fqn, []).append(i)
            if j < len(op.calls):
                calls.setdefault(fqn, set()).add(op.calls[j])
    out: dict[int, tuple[int, str]] = {}
    for fqn, idx in runs.items():
        if idx[0] == 0 or idx[-1] - idx[0] + 1 != len(idx) or len(calls.get(fqn, ())) > 1:
            continue
        depth = fqn.count(".")
        if idx[0] not in out or depth < out[idx[0]][0]:
            out[idx[0]] = (depth, fqn)
    return {p: f for p, (_, f) in sorted(out.items())}


def repeated_layers(ops: Sequence[TracedOp]) -> list[tuple[str, int]]:
    """(FQN, first op position) of the repeated layers in call order: the outermost
    modules named `<container>.<i>` (transformer.h.3, layer2.1, blocks.0), the unit
    torchtitan and DeepSpeed split evenly."""
    first: dict[str, int] = {}
    for i, op in enumerate(ops):
        for fqn in op.modules:
            first.setdefault(fqn, i)
    out = []
    for fqn, pos in first.items():
        if not _NUMBERED.match(fqn):
            continue
        parts = fqn.split(".")
        ancestors = (".".join(parts[:j]) for j in range(1, len(parts)))
        if not any(_NUMBERED.match(a) and a in first for a in ancestors):
            out.append((fqn, pos))
    return sorted(out, key=lambda x: x[1])


def even_layer_starts(layers: Sequence[tuple[str, int]], k: int) -> list[int]:
    """Stage start positions of the even split: stage s holds layers
    [floor(s L / k), floor((s+1) L / k)); what comes before the first layer joins stage
    0, what follows the last joins the last stage."""
    n = len(layers)
    if n < k:
        return []
    return [0] + [layers[(s * n) // k][1] for s in range(1, k)]
