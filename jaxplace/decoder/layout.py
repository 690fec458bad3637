"""Public decoder types and layout: a Problem padded into fixed-shape device arrays.

`Spec` (static shapes of one compiled decoder) and `DeviceGraph` (the padded arrays,
a pytree) are the types every fast path shares.

Shapes are rounded up to buckets (`bucket`) so that graphs of similar size, and
repeated calls, share one compiled function. Padded nodes have no work, no edges and
the lowest priority, so Kahn emits them after every real node and they add nothing
to any segment; padded tensors have size 0; padded adjacency slots hold a sentinel
that scatters and gathers ignore (`mode="drop"` / `fill`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

#: Buckets grow geometrically with this many steps per doubling (<= 12.5% padding).
STEPS_PER_OCTAVE = 8


def bucket(x: int, minimum: int = 8) -> int:
    """Smallest size >= x of the form m * 2**e with 8 <= m < 16 (or `minimum`).

    At most STEPS_PER_OCTAVE buckets per doubling, so a stream of graphs of different
    sizes compiles O(log n) times, while padding wastes at most 1/8.
    """
    x = max(int(x), minimum)
    if x <= 16:
        return x if minimum >= 16 else (8 if x <= 8 else 16)
    step = 2 ** (math.floor(math.log2(x)) - 3)
    return -(-x // step) * step


def pow2(x: int) -> int:
    """Smallest power of two >= max(x, 1)."""
    return 1 << max(int(x) - 1, 0).bit_length()


def deg_bucket(x: int) -> int:
    """Degree bucket: exact up to 4, then 4 sizes per doubling (<= 25% padding)."""
    x = max(int(x), 1)
    if x <= 4:
        return x
    step = 2 ** (math.floor(math.log2(x)) - 2)
    return -(-x // step) * step


@dataclass(frozen=True)
class Spec:
    """Static (hashable) shape configuration of one compiled decoder.

    Orders and DP positions are over placement units (`jaxplace.units`): one unit per
    node for plain graphs, colocation classes (and the cycles they create) contracted
    otherwise.

    Attributes:
        N: padded number of units (positions in an order).
        T: padded number of tensors; index T is a size-0 dummy tensor.
        D: padded number of event slots per unit: tensors the unit is a member of
            (consumes, or produces when a consumer may come first) whose transfer
            ranges change when the unit is emitted. For plain graphs: the tensors a
            node consumes.
        S: padded number of successors per unit (max out-degree of the unit DAG).
        K: accelerator rows of the DP table, min(k, N).
        use_param: whether any graph has an overflow budget or a hard capacity.
        C: CPU blocks of the DP table, min(cpus, N) (0: accelerators only).
        NX: padded number of nodes when units differ from nodes (0: X is per unit).
        use_bad: whether some node is not supported on accelerators.
    """

    N: int
    T: int
    D: int
    S: int
    K: int
    use_param: bool
    C: int = 0
    NX: int = 0
    use_bad: bool = False

    @property
    def width(self) -> int:
        """Columns of the padded priority array X (nodes)."""
        return self.NX or self.N

    def merge(self, other: Spec) -> Spec:
        nx = max(self.NX, other.NX)
        if nx:
            nx = max(nx, self.N, other.N)
        return Spec(max(self.N, other.N), max(self.T, other.T), max(self.D, other.D),
                    max(self.S, other.S), max(self.K, other.K),
                    self.use_param or other.use_param, max(self.C, other.C), nx,
                    self.use_bad or other.use_bad)


@struct.dataclass
class DeviceGraph:
    """A problem as padded device arrays (a pytree; stack several with `stack_graphs`).

    Costs are pre-divided by the bandwidth B where the cost model divides them.
    Shapes below are for one graph; a stacked batch of G graphs adds a leading axis.
    Per-"node" arrays are per placement unit (== node for plain graphs).
    """

    work: jnp.ndarray  # (N,) float: work of each unit (0 for padding)
    out_size: jnp.ndarray  # (N,) float: sum of the unit's member output tensors / B
    param: jnp.ndarray  # (N,) float: size_param of the unit
    indeg: jnp.ndarray  # (N,) int32: number of predecessors in the unit DAG
    succ: jnp.ndarray  # (N, S) int32: unit-DAG successors, padded with N (dropped)
    in_t: jnp.ndarray  # (N, D) int32: event slots (tensors), padded with T (dummy)
    t_size: jnp.ndarray  # (T+1,) float: tensor size / B; the dummy T has size 0
    t_prod: jnp.ndarray  # (T+1,) int32: producer unit of each tensor (dummy: 0)
    n: jnp.ndarray  # () int32: real number of units
    k: jnp.ndarray  # () int32: number of accelerator blocks asked for
    memory: jnp.ndarray  # () float: overflow budget M (inf: none)
    capacity: jnp.ndarray  # () float: hard parameter limit per block (inf: none)
    inv_bw: jnp.ndarray  # () float: 1 / B (overflow is divided by B)
    plus: jnp.ndarray  # (N,) float: work + sizes of every member tensor / B
    t_init: jnp.ndarray  # (T+1,) int32: 1 when the producer always comes first
    bad: jnp.ndarray  # (N,) int32: 1 when the unit holds an unsupported node
    cpu: jnp.ndarray  # (N,) float: summed cpu_latency of the unit
    unit_of: jnp.ndarray  # (width,) int32: unit of each node, padding -> N (dropped)
    cpus: jnp.ndarray  # () int32: number of CPU blocks asked for


def _direct_pairs(units) -> set:
    ptr, idx = units.succ_ptr, units.succ_idx
    src = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    return set(zip(src.tolist(), idx.tolist(), strict=True))


def graph_structure(graph) -> dict:
    """Unit-level arrays of a graph that do not depend on the Problem.

    O(tensors) host work: an `Evaluator` computes it once and passes it along
    (`structure=`) to `problem_spec`, `host_graph` and the window bounds.

    Member tensors: a tensor whose members (producer and consumer units) span at
    least two units and whose size is positive; only they cost transfers. Every
    member unit gets an event slot for it, except the producer when all consumer
    units are its direct unit-DAG successors (then it always comes first: t_init).
    """
    units = graph.units
    U = units.num_units
    uof = units.unit_of
    T = graph.num_tensors
    t_prod = uof[graph.tensor_producer] if T else np.zeros(0, dtype=np.int64)
    slots = [[] for _ in range(U)]
    t_init = np.zeros(T, dtype=bool)
    size_units = np.zeros(U)  # sum of member tensor sizes (not yet / B)
    out_units = np.zeros(U)
    trivial = units.trivial
    direct = None if trivial else _direct_pairs(units)
    sizes = graph.tensor_size
    for t in range(T):
        s = float(sizes[t])
        cons = graph.consumers(t)
        if s == 0 or len(cons) == 0:
            continue
        pu = int(t_prod[t])
        cu = np.unique(uof[cons])
        cu = cu[cu != pu]
        if len(cu) == 0:
            continue
        first = trivial or all((pu, int(c)) in direct for c in cu)
        t_init[t] = first
        if not first:
            slots[pu].append(t)
        for c in cu.tolist():
            slots[c].append(t)
        size_units[pu] += s
        size_units[cu] += s
        out_units[pu] += s
    counts = np.array([len(x) for x in slots], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    idx = np.array([t for x in slots for t in x], dtype=np.int64)
    out = dict(
        U=U, unit_of=uof, trivial=trivial, slot_ptr=ptr, slot_idx=idx, t_prod=t_prod,
        t_init=t_init, size_units=size_units, out_units=out_units,
        work=np.bincount(uof, weights=graph.work, minlength=U),
        param=np.bincount(uof, weights=graph.size_param, minlength=U),
        indeg=np.diff(units.pred_ptr), succ_ptr=units.succ_ptr, succ_idx=units.succ_idx)
    return out


def problem_spec(problem: Problem, structure: dict | None = None) -> Spec:
    """The smallest bucketed Spec that holds `problem`."""
    g = problem.graph
    st = structure or graph_structure(g)
    U = st["U"]
    N = bucket(U)
    T = bucket(max(g.num_tensors, 1))
    D = deg_bucket(int(np.diff(st["slot_ptr"]).max(initial=0)))
    S = deg_bucket(int(np.diff(st["succ_ptr"]).max(initial=0)))
    K = min(problem.k, N)
    use_param = problem.memory is not None or problem.capacity is not None
    C = min(problem.cpus, N)
    NX = 0 if st["trivial"] else max(bucket(g.num_nodes), N)
    use_bad = bool(np.any(~problem.supported))
    return Spec(N, T, D, S, K, use_param, C, NX, use_bad)


def coarse(x: int, steps: int = 2, minimum: int = 16) -> int:
    """Smallest size >= x of the form m * 2**e with `steps` sizes per doubling (2:
    16, 24, 32, 48, 64, 96, ...)."""
    x = max(int(x), minimum)
    e = max(x - 1, 1).bit_length() - 1  # 2**e < x <= 2**(e+1)
    step = max((1 << e) // steps, 1)
    return -(-x // step) * step


def search_spec(problem: Problem, structure: dict | None = None,
                steps: int = 2) -> Spec:
    """A coarser Spec than `problem_spec`, for compiled search programs: a program
    compiled for it serves every graph of its class (far fewer compiles over a stream
    of graphs, at up to 1/steps of padding). Units in `steps` buckets per doubling,
    tensors at least as many as units, event slots and successors powers of two at
    least DEGREE_FLOOR and SUCCESSOR_FLOOR, k rounded up to a power of two (the DP
    reads the real k from the data, so the extra table rows are never used). None of
    this changes a cost: padded slots, successors and rows are ignored by the
    decoder."""
    exact = problem_spec(problem, structure)
    N = coarse(exact.N, steps)
    NX = coarse(exact.NX, steps) if exact.NX else 0
    return Spec(N, max(coarse(exact.T, steps), N), max(pow2(exact.D), DEGREE_FLOOR),
                max(pow2(exact.S), SUCCESSOR_FLOOR), min(pow2(exact.K), N),
                exact.use_param, min(pow2(exact.C), N) if exact.C else 0,
                max(NX, N) if NX else 0, exact.use_bad)


#: Smallest padded event-slot width of `search_spec`: most REGAL-like graphs (in-degree
#: 5-8) share one width, while every padded slot costs gathers and scatters in the
#: decoder's per-position transfer ranges (at 16 instead of 8, 20-40% more CPU a step).
DEGREE_FLOOR = 8
#: Smallest padded successor width: successors are one scatter a position in Kahn's
#: loop, so 16 instead of 8 costs 0-10% a step, and graphs whose out-degree is 9-16
#: share the class of those under 8 (regal-time suite: 22 -> 18 programs).
SUCCESSOR_FLOOR = 16


def _padded_csr(ptr: np.ndarray, idx: np.ndarray, rows: int, width: int,
                fill: int) -> np.ndarray:
    out = np.full((rows, width), fill, dtype=np.int32)
    counts = np.diff(ptr)
    r = np.repeat(np.arange(len(counts)), counts)
    c = np.arange(len(idx)) - np.repeat(ptr[:-1], counts)
    out[r, c] = idx
    return out


def host_graph(problem: Problem, spec: Spec, structure: dict | None = None
               ) -> dict[str, np.ndarray]:
    """NumPy float64 arrays of the DeviceGraph of `problem` padded to `spec`."""
    g, B = problem.graph, problem.bandwidth
    st = structure or graph_structure(g)
    n, U, N, T = g.num_nodes, st["U"], spec.N, spec.T
    W = spec.width
    if U > N or n > W or g.num_tensors > T or problem.k < 1:
        raise JaxplaceError(f"graph (n={n}, units={U}, tensors={g.num_tensors}) does not "
                            f"fit the padded shape (N={N}, width={W}, T={T})", field="spec")
    if np.diff(st["slot_ptr"]).max(initial=0) > spec.D or np.diff(st["succ_ptr"]).max(
            initial=0) > spec.S:
        raise JaxplaceError("graph degree exceeds the padded shape", field="spec")
    if (problem.cpus and not spec.C) or (not spec.NX and not st["trivial"]) or (
            not spec.use_bad and not problem.supported.all()):
        raise JaxplaceError("the padded shape lacks CPU rows, units or unsupported-node "
                            "handling this problem needs", field="spec")
    uof = st["unit_of"]
    pad = lambda a: np.concatenate([a, np.zeros(N - U)])  # noqa: E731
    t_size = np.zeros(T + 1)
    t_size[:g.num_tensors] = g.tensor_size / B
    t_prod = np.zeros(T + 1, dtype=np.int32)
    t_prod[:g.num_tensors] = st["t_prod"]
    t_init = np.zeros(T + 1, dtype=np.int32)
    t_init[:g.num_tensors] = st["t_init"]
    indeg = np.zeros(N, dtype=np.int32)
    indeg[:U] = st["indeg"]
    unit_of = np.full(W, N, dtype=np.int32)
    unit_of[:n] = uof
    bad = np.zeros(N, dtype=np.int32)
    bad[:U] = np.bincount(uof, weights=~problem.supported, minlength=U) > 0
    return dict(
        work=pad(st["work"]), out_size=pad(st["out_units"] / B), param=pad(st["param"]),
        indeg=indeg, succ=_padded_csr(st["succ_ptr"], st["succ_idx"], N, spec.S, N),
        in_t=_padded_csr(st["slot_ptr"], st["slot_idx"], N, spec.D, T),
        t_size=t_size, t_prod=t_prod,
        n=np.int32(U), k=np.int32(problem.k),
        memory=np.float64(np.inf if problem.memory is None else problem.memory),
        capacity=np.float64(problem.capacity_limit),
        inv_bw=np.float64(1.0 / B),
        plus=pad(st["work"] + st["size_units"] / B), t_init=t_init, bad=bad,
        cpu=pad(np.bincount(uof, weights=problem.cpu_latency, minlength=U)),
        unit_of=unit_of, cpus=np.int32(problem.cpus))


def device_graph(problem: Problem, spec: Spec | None = None, dtype=jnp.float32,
                 structure: dict | None = None) -> tuple[Spec, DeviceGraph]:
    """Pad `problem` to `spec` (default: its own bucket) as device arrays of `dtype`."""
    st = structure or graph_structure(problem.graph)
    spec = problem_spec(problem, st) if spec is None else spec
    h = host_graph(problem, spec, st)
    return spec, _to_device(h, dtype)


def _to_device(h: dict[str, np.ndarray], dtype) -> DeviceGraph:
    fields = {}
    for key, a in h.items():
        a = np.asarray(a)
        fields[key] = jnp.asarray(a, dtype=dtype if a.dtype.kind == "f" else jnp.int32)
    return DeviceGraph(**fields)


def stack_graphs(problems, dtype=jnp.float32, spec: Spec | None = None
                 ) -> tuple[Spec, DeviceGraph]:
    """Pad several problems to one common Spec and stack them: leading axis G.

    k may differ per problem (the DP keeps max k rows); so may bandwidth, memory and
    capacity.
    """
    problems = list(problems)
    if not problems:
        raise JaxplaceError("no problems to stack", field="problems")
    structs = [graph_structure(p.graph) for p in problems]
    if spec is None:
        spec = problem_spec(problems[0], structs[0])
        for p, st in zip(problems[1:], structs[1:], strict=True):
            spec = spec.merge(problem_spec(p, st))
    hs = [host_graph(p, spec, st) for p, st in zip(problems, structs, strict=True)]
    return spec, _to_device({k: np.stack([h[k] for h in hs]) for k in hs[0]}, dtype)


__all__ = ["DeviceGraph", "Spec", "bucket", "coarse", "deg_bucket", "device_graph",
           "graph_structure", "host_graph", "pow2", "problem_spec", "search_spec",
           "stack_graphs"]
