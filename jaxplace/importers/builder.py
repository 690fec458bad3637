"""Shared graph assembly for the importers: nodes, tensors (hyperedges) and
parameters, turned into a CompGraph with roofline costs in microseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.devices import DeviceProfile

#: Microseconds per second: the time unit of imported graphs (work, tensor link times) is
#: the microsecond (the one definition; the importers and llm/ convert with it).
US = 1e6


@dataclass
class _Node:
    name: str
    op_type: str
    flops: float
    bytes_moved: float
    time_s: float
    out_bytes: float = 0.0
    param_bytes: float = 0.0


@dataclass
class GraphBuilder:
    """Accumulates ops and tensors; `build()` makes the CompGraph.

    Parameters are charged to the first op (in program order) that reads them: every
    parameter is counted once in `size_param`, in the stage that first needs it.
    """

    device: DeviceProfile
    nodes: list[_Node] = field(default_factory=list)
    tensors: list[list] = field(default_factory=list)  # [producer, bytes, set(consumers)]
    param_names: list[str] = field(default_factory=list)
    param_bytes: list[float] = field(default_factory=list)
    param_owner: list[int] = field(default_factory=list)  # first consumer node or -1

    def add_param(self, name: str, nbytes: float) -> int:
        self.param_names.append(name)
        self.param_bytes.append(float(nbytes))
        self.param_owner.append(-1)
        return len(self.param_names) - 1

    def add_node(self, name: str, op_type: str, flops: float, bytes_moved: float,
                 time_s: float, *, in_tensors=(), in_params=(),
                 out_bytes: list[float] = ()) -> tuple[int, list[int]]:
        """Add an op reading `in_tensors` (tensor ids) and `in_params` (param ids),
        producing one tensor per entry of `out_bytes`. Returns (node, tensor ids)."""
        v = len(self.nodes)
        node = _Node(name, op_type, float(flops), float(bytes_moved), float(time_s),
                     out_bytes=float(sum(out_bytes)))
        self.nodes.append(node)
        for t in in_tensors:
            self.tensors[t][2].add(v)
        for p in in_params:
            if self.param_owner[p] < 0:
                self.param_owner[p] = v
                node.param_bytes += self.param_bytes[p]
        tids = []
        for b in out_bytes:
            self.tensors.append([v, float(b), set()])
            tids.append(len(self.tensors) - 1)
        return v, tids

    def build(self, meta: dict) -> CompGraph:
        if not self.nodes:
            raise JaxplaceError("the model has no operations to partition")
        dev = self.device
        work = [n.time_s * US for n in self.nodes]
        tensors = [(p, b / dev.link_bw * US, sorted(cs)) for p, b, cs in self.tensors if cs]
        size_out = np.asarray([n.out_bytes for n in self.nodes]) / dev.link_bw * US
        unused = [i for i, o in enumerate(self.param_owner) if o < 0]
        meta = dict(meta)
        meta.update({
            "time_unit": "us",
            "work_unit": "us (roofline time on the device)",
            "size_out_unit": "us (bytes / link bandwidth); use bandwidth=1",
            "size_param_unit": "bytes",
            # problem defaults read by jaxplace.formats.problem_from_graph: sizes are
            # already link times, and a stage cannot hold more weights than the device
            "bandwidth": 1.0,
            "capacity": dev.memory_bytes,
            "device": dev.to_meta(),
            "num_params": len(self.param_names),
            "param_bytes_total": float(sum(self.param_bytes)),
            "unused_param_bytes": float(sum(self.param_bytes[i] for i in unused)),
        })
        attrs = {
            "flops": np.asarray([n.flops for n in self.nodes], dtype=np.float64),
            "bytes_moved": np.asarray([n.bytes_moved for n in self.nodes], dtype=np.float64),
            "out_bytes": np.asarray([n.out_bytes for n in self.nodes], dtype=np.float64),
            "param_bytes": np.asarray([n.param_bytes for n in self.nodes], dtype=np.float64),
        }
        names = _unique([n.name for n in self.nodes])
        return CompGraph(work, (), [n.param_bytes for n in self.nodes], size_out,
                         tensors=tensors, names=names,
                         op_types=[n.op_type for n in self.nodes], node_ids=names,
                         node_attrs=attrs, meta=meta)


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for s in names:
        if s in seen:
            seen[s] += 1
            s = f"{s}#{seen[s]}"
        seen.setdefault(s, 0)
        out.append(s)
    return out
