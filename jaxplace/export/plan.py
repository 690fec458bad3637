"""A stage plan over named modules, read from a jaxplace result JSON.

The result's `node_ids` are module names in model order (for layer graphs from a
config: embedding, `<prefix>.0` ... `<prefix>.{L-1}`, final norm, LM head) and its
`assignment` gives each node's stage, numbered in pipeline order. Nodes named
`<prefix>.<i>` are the decoder layers; the nodes before them are the "pre" modules
(embedding), the nodes after them the "post" modules (norm, head).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jaxplace.errors import JaxplaceError

_LAYER = re.compile(r"^(?P<prefix>.+)\.(?P<index>\d+)$")


@dataclass(frozen=True)
class StagePlan:
    """Which stage runs each module.

    Attributes:
        modules: module names in model order.
        stage: (len(modules),) stage of each module, 0.. in pipeline order.
        layer_prefix: the decoder layers' common prefix, e.g. "model.layers".
        num_layers: decoder layers L; modules `prefix.0` .. `prefix.{L-1}`.
        first_layer: position of `prefix.0` in `modules` (the pre modules before it).
        source: where the plan came from.
    """

    modules: tuple[str, ...]
    stage: tuple[int, ...]
    layer_prefix: str
    num_layers: int
    first_layer: int
    source: str = "plan"

    @property
    def num_stages(self) -> int:
        return max(self.stage) + 1

    @property
    def pre(self) -> tuple[str, ...]:
        return self.modules[:self.first_layer]

    @property
    def post(self) -> tuple[str, ...]:
        return self.modules[self.first_layer + self.num_layers:]

    @property
    def layer_stages(self) -> tuple[int, ...]:
        """Stage of decoder layer i, i = 0..L-1."""
        a = self.first_layer
        return self.stage[a:a + self.num_layers]

    def stage_of(self, module: str) -> int:
        return self.stage[self.modules.index(module)]

    def stages(self) -> list[list[str]]:
        """Modules of each stage, in model order."""
        out: list[list[str]] = [[] for _ in range(self.num_stages)]
        for m, s in zip(self.modules, self.stage, strict=True):
            out[s].append(m)
        return out

    @property
    def contiguous(self) -> bool:
        """Stages follow the model order (each stage one run of modules)."""
        return all(a <= b for a, b in zip(self.stage, self.stage[1:], strict=False))

    def first_break(self) -> str:
        """A one-line description of where the plan goes back to an earlier stage."""
        for i in range(1, len(self.stage)):
            if self.stage[i] < self.stage[i - 1]:
                return (f"{self.modules[i]} is on stage {self.stage[i]} but the module "
                        f"before it, {self.modules[i - 1]}, is on stage {self.stage[i - 1]}")
        return ""

    def layer_counts(self) -> list[int]:
        """Decoder layers per stage."""
        counts = [0] * self.num_stages
        for s in self.layer_stages:
            counts[s] += 1
        return counts


def make_plan(modules: Sequence[str], stage: Sequence[int], source: str = "plan") -> StagePlan:
    """A StagePlan from module names (model order) and their stages; the decoder layers
    are the names `<prefix>.<i>` with one common prefix and i = 0.. consecutive."""
    modules, stage = tuple(str(m) for m in modules), tuple(int(s) for s in stage)
    if len(modules) != len(stage) or not modules:
        raise JaxplaceError(f"{len(stage)} stages for {len(modules)} modules",
                            source=source, field="assignment")
    hits = [(i, _LAYER.match(m)) for i, m in enumerate(modules)]
    hits = [(i, m) for i, m in hits if m]
    if not hits:
        raise JaxplaceError("no decoder layers: expected node ids like "
                            "'model.layers.0' (a layer graph from a model config)",
                            source=source, field="node_ids")
    prefix = hits[0][1]["prefix"]
    first = hits[0][0]
    layers = [(i, int(m["index"])) for i, m in hits if m["prefix"] == prefix]
    if [i for i, _ in layers] != list(range(first, first + len(layers))) or \
            [j for _, j in layers] != list(range(len(layers))):
        raise JaxplaceError(f"the {prefix}.<i> modules are not consecutive layers "
                            f"0..{len(layers) - 1} in model order", source=source,
                            field="node_ids")
    used = sorted(set(stage))
    if used[0] < 0 or used != list(range(len(used))):
        raise JaxplaceError(f"stages must be numbered 0..{len(used) - 1} in pipeline "
                            f"order, got {used}", source=source, field="assignment")
    return StagePlan(modules, stage, prefix, len(layers), first, source)


def plan_from_result(result: Mapping | str | os.PathLike) -> StagePlan:
    """The StagePlan of a result JSON (a path or its parsed dict)."""
    source = "result"
    if not isinstance(result, Mapping):
        from jaxplace.formats import read_json

        source = os.fspath(result)
        result = read_json(result)
    if not isinstance(result, Mapping) or "assignment" not in result:
        raise JaxplaceError("missing field 'assignment': not a jaxplace result",
                            source=source)
    ids = result.get("node_ids")
    if not isinstance(ids, list):
        raise JaxplaceError("missing field 'node_ids' (module names)", source=source)
    k = result.get("k")
    a = result["assignment"]
    if isinstance(k, int) and any(isinstance(b, int) and b >= k for b in a):
        raise JaxplaceError("the plan uses CPU blocks, which no pipeline framework "
                            "export represents", source=source, field="assignment")
    return make_plan(ids, a, source)
