"""Host-side layout: a Problem padded into fixed-shape device arrays (a DeviceGraph).

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


@dataclass(frozen=True)
class Spec:
    """Static (hashable) shape configuration of one compiled decoder.

    Attributes:
        N: padded number of nodes (positions in an order).
        T: padded number of tensors; index T is a size-0 dummy tensor.
        D: padded number of tensors consumed per node (max in-degree in tensors).
        S: padded number of successors per node (max out-degree).
        K: rows of the DP table, min(k, N) (more blocks than nodes never help).
        use_param: whether any graph has an overflow budget or a hard capacity.
    """

    N: int
    T: int
    D: int
    S: int
    K: int
    use_param: bool

    def merge(self, other: Spec) -> Spec:
        return Spec(max(self.N, other.N), max(self.T, other.T), max(self.D, other.D),
                    max(self.S, other.S), max(self.K, other.K),
                    self.use_param or other.use_param)


@struct.dataclass
class DeviceGraph:
    """A problem as padded device arrays (a pytree; stack several with `stack_graphs`).

    Costs are pre-divided by the bandwidth B where the cost model divides them.
    Shapes below are for one graph; a stacked batch of G graphs adds a leading axis.
    """

    work: jnp.ndarray  # (N,) float: work of each node (0 for padding)
    out_size: jnp.ndarray  # (N,) float: sum of the node's consumed output tensors / B
    param: jnp.ndarray  # (N,) float: size_param
    indeg: jnp.ndarray  # (N,) int32: number of predecessors
    succ: jnp.ndarray  # (N, S) int32: successors, padded with N (dropped)
    in_t: jnp.ndarray  # (N, D) int32: tensors each node consumes, padded with T (dummy)
    t_size: jnp.ndarray  # (T+1,) float: tensor size / B; the dummy T has size 0
    t_prod: jnp.ndarray  # (T+1,) int32: producer node of each tensor (dummy: 0)
    n: jnp.ndarray  # () int32: real number of nodes
    k: jnp.ndarray  # () int32: number of blocks asked for
    memory: jnp.ndarray  # () float: overflow budget M (inf: none)
    capacity: jnp.ndarray  # () float: hard parameter limit per block (inf: none)
    inv_bw: jnp.ndarray  # () float: 1 / B (overflow is divided by B)


def problem_spec(problem: Problem) -> Spec:
    """The smallest bucketed Spec that holds `problem`."""
    g = problem.graph
    n = g.num_nodes
    N = bucket(n)
    T = bucket(max(g.num_tensors, 1))
    D = pow2(max(int(np.diff(g.in_ptr).max(initial=0)), 1))
    S = pow2(max(int(np.diff(g.succ_ptr).max(initial=0)), 1))
    K = min(problem.k, N)
    use_param = problem.memory is not None or problem.capacity is not None
    return Spec(N, T, D, S, K, use_param)


def _padded_csr(ptr: np.ndarray, idx: np.ndarray, rows: int, width: int,
                fill: int) -> np.ndarray:
    out = np.full((rows, width), fill, dtype=np.int32)
    counts = np.diff(ptr)
    r = np.repeat(np.arange(len(counts)), counts)
    c = np.arange(len(idx)) - np.repeat(ptr[:-1], counts)
    out[r, c] = idx
    return out


def host_graph(problem: Problem, spec: Spec) -> dict[str, np.ndarray]:
    """NumPy float64 arrays of the DeviceGraph of `problem` padded to `spec`."""
    g, B = problem.graph, problem.bandwidth
    n, N, T = g.num_nodes, spec.N, spec.T
    if n > N or g.num_tensors > T or problem.k < 1:
        raise JaxplaceError(f"graph (n={n}, tensors={g.num_tensors}) does not fit the "
                            f"padded shape (N={N}, T={T})", field="spec")
    if np.diff(g.in_ptr).max(initial=0) > spec.D or np.diff(g.succ_ptr).max(
            initial=0) > spec.S:
        raise JaxplaceError("graph degree exceeds the padded shape", field="spec")
    has_cons = np.diff(g.tensor_ptr) > 0
    out_size = np.zeros(N)
    out_size[:n] = np.bincount(g.tensor_producer, weights=g.tensor_size * has_cons,
                               minlength=n) / B
    pad = lambda a: np.concatenate([a, np.zeros(N - n)])  # noqa: E731
    t_size = np.zeros(T + 1)
    t_size[:g.num_tensors] = g.tensor_size / B
    t_prod = np.zeros(T + 1, dtype=np.int32)
    t_prod[:g.num_tensors] = g.tensor_producer
    indeg = np.zeros(N, dtype=np.int32)
    indeg[:n] = np.diff(g.pred_ptr)
    return dict(
        work=pad(g.work), out_size=out_size, param=pad(g.size_param), indeg=indeg,
        succ=_padded_csr(g.succ_ptr, g.succ_idx, N, spec.S, N),
        in_t=_padded_csr(g.in_ptr, g.in_tensors, N, spec.D, T),
        t_size=t_size, t_prod=t_prod,
        n=np.int32(n), k=np.int32(problem.k),
        memory=np.float64(np.inf if problem.memory is None else problem.memory),
        capacity=np.float64(np.inf if problem.capacity is None else problem.capacity),
        inv_bw=np.float64(1.0 / B))


def device_graph(problem: Problem, spec: Spec | None = None,
                 dtype=jnp.float32) -> tuple[Spec, DeviceGraph]:
    """Pad `problem` to `spec` (default: its own bucket) as device arrays of `dtype`."""
    spec = problem_spec(problem) if spec is None else spec
    h = host_graph(problem, spec)
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
    common = problem_spec(problems[0])
    for p in problems[1:]:
        common = common.merge(problem_spec(p))
    spec = common if spec is None else spec
    hs = [host_graph(p, spec) for p in problems]
    return spec, _to_device({k: np.stack([h[k] for h in hs]) for k in hs[0]}, dtype)
