"""Choosing each layer's split axis, and hybrid spatial-then-whole plans.

Objective (bulk-synchronous estimate, additive so it can be optimised exactly on
chains): the sum over layers of the slowest device's compute, plus, for every
edge producer -> consumer, the slowest receiver's transfer time (its pieces from
every other device, received one after another), plus the model input's scatter
from the host and the outputs' gather to it. Changing the axis between two
layers is charged automatically: the consumer's boxes then overlap several
producers' boxes and the re-layout is that edge's transfer.

- On a chain (every layer reads only the previous one, which nobody else reads)
  `choose_axes` is an exact dynamic program over (layer, axis).
- On a branching graph (residual adds, concatenations, YOLO routes) it is also
  exact while at most `MAX_FRONTIER` layers are live at once: a DP over the
  topological order whose state holds the axes of the layers whose outputs are
  still to be read (ResNet and YOLOv3-tiny keep 2-3). Beyond that it falls back to
  a heuristic: greedy in topological order from several seeds (greedy, and every
  uniform axis), each improved by coordinate descent (re-pick one layer's axis
  given all others, until no change); the best local optimum is kept.

The latency reported for a plan is `cost.simulate`'s event-by-event figure, not
this objective (the objective counts a piece read by two consumers twice and
puts a barrier after every layer, so it is an upper estimate).

`hybrid_sweep`: for every cut L, layers before L split over all devices (axes
chosen as above among "h", "w", "c"), layers from L on run whole on the fastest
device (the host, which also holds the input and collects the output).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from jaxplace.cluster import Cluster
from jaxplace.spatial.cost import device_speeds, part_time, simulate
from jaxplace.spatial.layers import (
    Box,
    Layer,
    box_intersect,
    box_volume,
    required_box,
    shape_box,
)
from jaxplace.spatial.plan import INPUT, Placement, Plan, split

ALL_AXES: tuple[str | None, ...] = ("h", "w", "c", None)
#: Largest frontier (layers still to be read) the exact DP takes: 4 ** 6 states.
MAX_FRONTIER = 6
SPLIT_AXES: tuple[str | None, ...] = ("h", "w", "c")


@dataclass
class SpatialProblem:
    """Layers on a cluster, with cached per-axis costs.

    Attributes:
        layers: topological order.
        cluster: the devices and links.
        shares: "speed" (proportional to each device's roofline speed on the whole
            model, so that consecutive layers' boundaries line up), "layer"
            (proportional to its speed on each layer: better balanced layers, but
            misaligned boundaries and more halo traffic) or "even" (Eq. 1).
        host: device with the input and the outputs; default the fastest on the
            whole model.
        itemsize: bytes per activation element.
    """

    layers: Sequence[Layer]
    cluster: Cluster
    shares: str = "speed"
    host: int | None = None
    itemsize: int = 4
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.layers = tuple(self.layers)
        if self.shares not in ("speed", "layer", "even"):
            raise ValueError(f"shares must be 'speed', 'layer' or 'even', got "
                             f"{self.shares!r}")
        if self.host is None:
            self.host = int(np.argmin(self.one_device_times))

    @property
    def nd(self) -> int:
        return self.cluster.num_devices

    @cached_property
    def index(self) -> dict[str, int]:
        return {la.name: i for i, la in enumerate(self.layers)}

    @cached_property
    def one_device_times(self) -> np.ndarray:
        """(devices,) seconds to run the whole model on each device alone."""
        return np.array([sum(part_time(la, la.full_box(), d.profile, self.itemsize)
                             for la in self.layers) for d in self.cluster.devices])

    @cached_property
    def edges(self) -> list[tuple[int, int, int]]:
        """(producer index or -1 for the input, consumer index, input position)."""
        return [(self.index.get(src, -1), j, k) for j, la in enumerate(self.layers)
                for k, src in enumerate(la.inputs)]

    @cached_property
    def is_chain(self) -> bool:
        prev = INPUT
        readers: dict[str, int] = {}
        for la in self.layers:
            if la.inputs != (prev,):
                return False
            readers[prev] = readers.get(prev, 0) + 1
            prev = la.name
        return all(v == 1 for v in readers.values())

    def options(self, i: int, axes: Sequence[str | None]) -> tuple[str | None, ...]:
        la = self.layers[i]
        if not la.splittable:
            return (None,)
        opts = tuple(a for a in axes if a is None or la.axis_size(a) >= 1)
        return opts or (None,)

    def placement(self, i: int, axis: str | None) -> Placement:
        key = ("pl", i, axis)
        if key not in self._cache:
            la = self.layers[i]
            if self.shares == "layer":
                w = device_speeds(la, self.cluster, self.itemsize)
            elif self.shares == "speed" and not self.cluster.is_uniform:
                w = list(1.0 / self.one_device_times)
            else:
                w = [1.0] * self.nd
            self._cache[key] = split(la, axis, w, owner=self.host)
        return self._cache[key]

    def boxes(self, i: int, axis: str | None) -> list[Box]:
        key = ("bx", i, axis)
        if key not in self._cache:
            if i < 0:  # the input, on the host
                first = next(la for la in self.layers if INPUT in la.inputs)
                full = shape_box(first.in_shapes[first.inputs.index(INPUT)])
                empty: Box = ((0, 0), (0, 0), (0, 0))
                self._cache[key] = [full if d == self.host else empty
                                    for d in range(self.nd)]
            else:
                self._cache[key] = self.placement(i, axis).out_boxes(self.layers[i], self.nd)
        return self._cache[key]

    def node_cost(self, i: int, axis: str | None) -> float:
        key = ("node", i, axis)
        if key not in self._cache:
            la = self.layers[i]
            self._cache[key] = max(part_time(la, b, d.profile, self.itemsize)
                                   for b, d in zip(self.boxes(i, axis), self.cluster.devices,
                                                   strict=True))
        return self._cache[key]

    def _recv_time(self, needs: list[Box], produced: list[Box], dst: int,
                   per_elem: float) -> float:
        t = 0.0
        for src, p in enumerate(produced):
            if src == dst or box_volume(p) == 0:
                continue
            vol = sum(box_volume(box_intersect(r, p)) for r in needs)
            if vol:
                t += self.cluster.transfer_time(vol * per_elem, src, dst)
        return t

    def edge_cost(self, e: int, a_src: str | None, a_dst: str | None) -> float:
        key = ("edge", e, a_src, a_dst)
        if key not in self._cache:
            p, j, k = self.edges[e]
            la = self.layers[j]
            produced = self.boxes(p, a_src)
            per_elem = la.in_shapes[k][0] * self.itemsize
            worst = 0.0
            for dst, out in enumerate(self.boxes(j, a_dst)):
                if box_volume(out):
                    need, _ = required_box(la, k, out)
                    worst = max(worst, self._recv_time([need], produced, dst, per_elem))
            self._cache[key] = worst
        return self._cache[key]

    def output_cost(self, i: int, axis: str | None) -> float:
        """Gathering a final output on the host."""
        la = self.layers[i]
        return self._recv_time([la.full_box()], self.boxes(i, axis), self.host,
                               la.out_shape[0] * self.itemsize)

    @cached_property
    def outputs(self) -> list[int]:
        read = {s for la in self.layers for s in la.inputs}
        return [i for i, la in enumerate(self.layers) if la.name not in read]

    def objective(self, axes: Sequence[str | None]) -> float:
        """The additive estimate of a full assignment (module docstring)."""
        total = sum(self.node_cost(i, a) for i, a in enumerate(axes))
        for e, (p, j, _) in enumerate(self.edges):
            total += self.edge_cost(e, None if p < 0 else axes[p], axes[j])
        return total + sum(self.output_cost(i, axes[i]) for i in self.outputs)

    def plan(self, axes: Sequence[str | None]) -> Plan:
        return Plan(self.layers, tuple(self.placement(i, a) for i, a in enumerate(axes)),
                    self.nd, host=self.host, itemsize=self.itemsize)

    def latency(self, axes: Sequence[str | None]) -> float:
        return simulate(self.plan(axes), self.cluster).latency

    # -- choosing axes ------------------------------------------------------------

    def choose_axes(self, axes: Sequence[str | None] = ALL_AXES,
                    fixed: dict[int, str | None] | None = None) -> tuple[str | None, ...]:
        """Axis per layer minimising `objective`: exact DP on chains, greedy seeds +
        coordinate descent otherwise. `fixed` pins some layers' axes."""
        fixed = fixed or {}
        opts = [(fixed[i],) if i in fixed else self.options(i, axes)
                for i in range(len(self.layers))]
        if self.is_chain:
            return self._chain_dp(opts)
        if self.max_frontier <= MAX_FRONTIER:
            return self._frontier_dp(opts)
        return self._local_search(opts)

    @cached_property
    def last_reader(self) -> list[int]:
        """(layers,) index of the last layer reading each layer's output (itself when
        none does)."""
        last = list(range(len(self.layers)))
        for p, j, _ in self.edges:
            if p >= 0:
                last[p] = max(last[p], j)
        return last

    @cached_property
    def max_frontier(self) -> int:
        """Most layers whose outputs are still to be read, over the topological order
        (what the exact DP keeps axes for)."""
        live, most = set(), 0
        for i in range(len(self.layers)):
            live = {p for p in live if self.last_reader[p] > i}
            if self.last_reader[i] > i:
                live.add(i)
            most = max(most, len(live))
        return most

    def _frontier_dp(self, opts) -> tuple[str | None, ...]:
        """Exact minimum of `objective` on any DAG: DP over the topological order whose
        state is the axis of every layer still to be read (the frontier). Its size
        is 4 ** `max_frontier` at most (ResNet, YOLO: 2-3 live layers)."""
        n = len(self.layers)
        in_edges = [[] for _ in range(n)]
        for e, (_, j, _) in enumerate(self.edges):
            in_edges[j].append(e)
        outputs = set(self.outputs)
        # frontier (sorted (layer, axis) pairs) -> (cost, axes of layers 0..i)
        states: dict[tuple, tuple[float, tuple]] = {(): (0.0, ())}
        for i in range(n):
            nxt: dict[tuple, tuple[float, tuple]] = {}
            for front, (cost, path) in states.items():
                axis_of = dict(front)
                for a in opts[i]:
                    c = cost + self.node_cost(i, a)
                    for e in in_edges[i]:
                        p = self.edges[e][0]
                        c += self.edge_cost(e, None if p < 0 else axis_of[p], a)
                    if i in outputs:
                        c += self.output_cost(i, a)
                    keep = tuple((p, b) for p, b in front if self.last_reader[p] > i)
                    if self.last_reader[i] > i:
                        keep = tuple(sorted((*keep, (i, a)), key=lambda x: x[0]))
                    if keep not in nxt or c < nxt[keep][0]:
                        nxt[keep] = (c, (*path, a))
            states = nxt
        return min(states.values(), key=lambda x: x[0])[1]

    def _chain_dp(self, opts) -> tuple[str | None, ...]:
        n = len(self.layers)
        # best[a] = (cost, assignment) of layers 0..i ending with axis a
        best = {a: (self.node_cost(0, a) + self.edge_cost(0, None, a), (a,)) for a in opts[0]}
        for i in range(1, n):
            nxt = {}
            for a in opts[i]:
                nxt[a] = min(((c + self.edge_cost(i, b, a), path) for b, (c, path)
                              in best.items()), key=lambda x: x[0])
                nxt[a] = (nxt[a][0] + self.node_cost(i, a), nxt[a][1] + (a,))
            best = nxt
        last = n - 1
        return min(((c + self.output_cost(last, a), path) for a, (c, path) in best.items()),
                   key=lambda x: x[0])[1]

    def _local_cost(self, i: int, a, assign, in_edges, out_edges) -> float:
        c = self.node_cost(i, a)
        for e in in_edges[i]:
            p = self.edges[e][0]
            c += self.edge_cost(e, None if p < 0 else assign[p], a)
        for e in out_edges[i]:
            c += self.edge_cost(e, a, assign[self.edges[e][1]])
        if i in self.outputs:
            c += self.output_cost(i, a)
        return c

    def _local_search(self, opts, sweeps: int = 20) -> tuple[str | None, ...]:
        n = len(self.layers)
        in_edges = [[] for _ in range(n)]
        out_edges = [[] for _ in range(n)]
        for e, (p, j, _) in enumerate(self.edges):
            in_edges[j].append(e)
            if p >= 0:
                out_edges[p].append(e)
        seeds = []
        greedy: list = [None] * n
        for i in range(n):  # greedy: producers fixed, consumers not yet placed
            greedy[i] = min(opts[i], key=lambda a: self.node_cost(i, a) + sum(
                self.edge_cost(e, None if self.edges[e][0] < 0 else greedy[self.edges[e][0]],
                               a) for e in in_edges[i]))
        seeds.append(greedy)
        for axis in ALL_AXES:  # a fixed order: ties resolve the same way every run
            if any(axis in o for o in opts):
                seeds.append([axis if axis in o else o[0] for o in opts])
        best, best_cost = None, np.inf
        for seed in seeds:
            assign = list(seed)
            for _ in range(sweeps):
                changed = False
                for i in range(n):
                    cur = self._local_cost(i, assign[i], assign, in_edges, out_edges)
                    for a in opts[i]:
                        c = self._local_cost(i, a, assign, in_edges, out_edges)
                        if c < cur - 1e-15:
                            assign[i], cur, changed = a, c, True
                if not changed:
                    break
            cost = self.objective(assign)
            if cost < best_cost:
                best, best_cost = tuple(assign), cost
        return best

    # -- hybrid -------------------------------------------------------------------

    def hybrid_sweep(self, axes: Sequence[str | None] = SPLIT_AXES) -> list[dict]:
        """For every cut L (0..layers): split layers [0, L) (axes chosen among
        `axes`), run the rest whole on the host; each entry has `cut`, `axes`,
        `latency` (simulated) and `objective`."""
        out = []
        n = len(self.layers)
        for cut in range(n + 1):
            fixed = {i: None for i in range(cut, n)}
            assign = self.choose_axes(axes, fixed)
            out.append({"cut": cut, "axes": assign, "latency": self.latency(assign),
                        "objective": self.objective(assign)})
        return out


def best_hybrid(sweep: list[dict]) -> dict:
    return min(sweep, key=lambda r: (r["latency"], r["cut"]))
