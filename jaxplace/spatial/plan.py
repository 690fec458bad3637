"""Spatial plans: where each layer's output is split, and which data moves.

A `Plan` gives every layer a `Placement`: an axis ("c", "h", "w") and each
device's share of it, or no axis (the layer runs whole on its `owner`). The model
input lives on the plan's `host` device and every final output is gathered there.

Two transfer sets (BBGraP, Sections 3.2-3.3):

- `initial_transfers`: the initial partition synchronises after every layer: each
  device that computes a consumer of a tensor receives a full copy of it (concat),
  then crops what it needs.
- `optimized_transfers`: the graph optimizer compares, per device and tensor, the
  box the device produced with the boxes its layers require and keeps only the
  missing pieces (halos), fetched from the devices that produced them. Its four
  cases (Fig. 5) are reported per device and layer input by `classify`:
  "identical" (nothing moves, crop and concat dropped), "crop" (required inside
  produced: crop only), "fetch" (required contains produced: fetch the rest and
  concatenate), "fetch+crop" (neither contains the other: fetch and crop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from jaxplace.spatial.intervals import shares_to_intervals, weighted_shares
from jaxplace.spatial.layers import (
    AXES,
    Box,
    Layer,
    box_contains,
    box_intersect,
    box_volume,
    input_full_box,
    required_box,
    union_volume,
)

INPUT = "input"
OUTPUT = "<output>"


@dataclass(frozen=True)
class Placement:
    """Where a layer runs.

    Attributes:
        axis: "c", "h", "w", or None (whole on `owner`).
        shares: (d,) output extent per device along `axis` (empty when None).
        owner: the device of an unsplit layer.
    """

    axis: str | None
    shares: tuple[int, ...] = ()
    owner: int = 0

    def out_boxes(self, layer: Layer, num_devices: int) -> list[Box]:
        """Each device's box of the output (empty boxes for idle devices)."""
        full = layer.full_box()
        empty: Box = ((0, 0), (0, 0), (0, 0))
        if self.axis is None:
            return [full if i == self.owner else empty for i in range(num_devices)]
        d = AXES.index(self.axis)
        out = []
        for iv in shares_to_intervals(self.shares):
            if iv[1] <= iv[0]:
                out.append(empty)
                continue
            box = list(full)
            box[d] = iv
            out.append(tuple(box))
        return out


def split(layer: Layer, axis: str | None, weights: Sequence[float], owner: int = 0
          ) -> Placement:
    """A placement of `layer` along `axis`, shares proportional to `weights`
    (equal weights: BBGraP's Eq. 1). axis None, or a layer that cannot be split,
    gives the whole layer to `owner`."""
    if axis is None or not layer.splittable:
        return Placement(None, (), owner)
    return Placement(axis, tuple(weighted_shares(layer.axis_size(axis), weights)), owner)


@dataclass(frozen=True)
class Transfer:
    """Data sent from device `src` to `dst`: the union of `boxes` of `tensor` (the
    producing layer's name, or "input"), for `consumer` (a layer name, several
    joined by ",", or "<output>")."""

    tensor: str
    src: int
    dst: int
    boxes: tuple[Box, ...]
    nbytes: float
    consumer: str


@dataclass(frozen=True)
class Plan:
    """A spatial plan over `num_devices` devices.

    Attributes:
        layers: in topological order.
        placements: one per layer.
        num_devices: devices of the cluster.
        host: device holding the model input and receiving the final outputs.
        itemsize: bytes per activation element (4: float32).
    """

    layers: tuple[Layer, ...]
    placements: tuple[Placement, ...]
    num_devices: int
    host: int = 0
    itemsize: int = 4

    def __post_init__(self):
        if len(self.layers) != len(self.placements):
            raise ValueError("one placement per layer")

    def index(self) -> dict[str, int]:
        """Layer name -> position."""
        return self._index

    @cached_property
    def _index(self) -> dict[str, int]:
        return {layer.name: i for i, layer in enumerate(self.layers)}

    def produced(self, tensor: str) -> list[Box]:
        """Each device's produced box of a tensor ("input": the host has it all)."""
        if tensor == INPUT:
            first = next(la for la in self.layers if INPUT in la.inputs)
            full = input_full_box(first, first.inputs.index(INPUT))
            empty: Box = ((0, 0), (0, 0), (0, 0))
            return [full if i == self.host else empty for i in range(self.num_devices)]
        i = self.index()[tensor]
        return self.placements[i].out_boxes(self.layers[i], self.num_devices)

    def outputs(self) -> list[str]:
        """Layers whose output no layer reads: the model's outputs."""
        return list(self._outputs)

    @cached_property
    def _outputs(self) -> tuple[str, ...]:
        read = {s for la in self.layers for s in la.inputs}
        return tuple(la.name for la in self.layers if la.name not in read)

    def batch(self, tensor: str) -> int:
        if tensor == INPUT:
            first = next(la for la in self.layers if INPUT in la.inputs)
            return int(first.in_shapes[first.inputs.index(INPUT)][0])
        return int(self.layers[self.index()[tensor]].out_shape[0])

    def requirements(self) -> dict[tuple[str, int], list[tuple[str, int, Box]]]:
        """(tensor, device) -> [(consumer, input position, required box)], for every
        device that computes part of a consumer, plus the host's need of the final
        outputs (consumer "<output>")."""
        req: dict[tuple[str, int], list[tuple[str, int, Box]]] = {}
        for layer, pl in zip(self.layers, self.placements, strict=True):
            for dev, out in enumerate(pl.out_boxes(layer, self.num_devices)):
                if box_volume(out) == 0:
                    continue
                for k, src in enumerate(layer.inputs):
                    box, _ = required_box(layer, k, out)
                    if box_volume(box):
                        req.setdefault((src, dev), []).append((layer.name, k, box))
        for name in self.outputs():
            layer = self.layers[self.index()[name]]
            req.setdefault((name, self.host), []).append((OUTPUT, 0, layer.full_box()))
        return req


def optimized_transfers(plan: Plan) -> list[Transfer]:
    """Only the missing pieces: for each device and tensor, the part of what its
    layers require that other devices produced (BBGraP Section 3.3)."""
    out = []
    for (tensor, dst), needs in plan.requirements().items():
        produced = plan.produced(tensor)
        per_elem = plan.batch(tensor) * plan.itemsize
        consumer = ",".join(dict.fromkeys(n for n, _, _ in needs))
        for src, p in enumerate(produced):
            if src == dst or box_volume(p) == 0:
                continue
            pieces = tuple(b for b in (box_intersect(r, p) for _, _, r in needs)
                           if box_volume(b))
            if pieces:
                pieces = _drop_contained(pieces)
                out.append(Transfer(tensor, src, dst, pieces,
                                    float(union_volume(list(pieces)) * per_elem), consumer))
    return out


def initial_transfers(plan: Plan) -> list[Transfer]:
    """BBGraP's initial partition: after each layer, every device that computes a
    consumer receives the whole tensor (each producer sends it its part)."""
    out = []
    for (tensor, dst), needs in plan.requirements().items():
        produced = plan.produced(tensor)
        per_elem = plan.batch(tensor) * plan.itemsize
        consumer = ",".join(dict.fromkeys(n for n, _, _ in needs))
        for src, p in enumerate(produced):
            if src != dst and box_volume(p):
                out.append(Transfer(tensor, src, dst, (p,), float(box_volume(p) * per_elem),
                                    consumer))
    return out


def _drop_contained(boxes: tuple[Box, ...]) -> tuple[Box, ...]:
    keep: list[Box] = []
    for i, b in enumerate(boxes):
        if any(j != i and box_contains(o, b) and (o != b or j < i) for j, o in enumerate(boxes)):
            continue
        keep.append(b)
    return tuple(keep)


def classify(produced: Box, required: Box) -> str:
    """BBGraP's Fig. 5 cases for one device: "identical", "crop", "fetch",
    "fetch+crop" ("none" when nothing is required)."""
    if box_volume(required) == 0:
        return "none"
    if produced == required:
        return "identical"
    if box_contains(produced, required):
        return "crop"
    if box_contains(required, produced):
        return "fetch"
    return "fetch+crop"


def cases(plan: Plan) -> dict[str, int]:
    """How many (device, layer input) pairs fall in each Fig. 5 case."""
    count: dict[str, int] = {}
    for (tensor, dev), needs in plan.requirements().items():
        p = plan.produced(tensor)[dev]
        for _, _, box in needs:
            c = classify(p, box)
            count[c] = count.get(c, 0) + 1
    return count


def total_bytes(transfers: Sequence[Transfer]) -> float:
    return float(sum(t.nbytes for t in transfers))


def sync_points(transfers: Sequence[Transfer]) -> int:
    """Distinct (tensor, receiving device) pairs that wait on another device."""
    return len({(t.tensor, t.dst) for t in transfers})
