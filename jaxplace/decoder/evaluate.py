"""Population scoring: SliceGraph(Kahn(x)) for every row of X, jitted and batched.

Two layers:

- Pure, jittable functions on padded device arrays, for use inside other jitted code
  (e.g. a `lax.scan` over search generations): `make_evaluator(problem)` returns
  `(fn, graph)` where `fn(X)` maps a (P, n) priority array to (P,) costs; and
  `score(spec, graph, X)` / `score_graphs(spec, graphs, X)` take the padded
  `DeviceGraph` (or a stack of them) explicitly.
- Host entry points `evaluate(problem, X)` and `decode(problem, x)`: validate input,
  pad the population to a bucketed size, split it into memory-bounded chunks, shard
  each chunk across devices, and return NumPy results.

Precision: float32 by default. The float32 decoder agrees with the float64 NumPy
reference within a relative tolerance of `FLOAT32_RTOL` on the bottleneck cost
(segment costs are sums of up to n float32 terms; worst-case error about n * 2**-24
relative to the larger of the terms, typically far smaller). With
`precision="float64"` the computation runs with jax x64 enabled in a scoped context
(the global setting is left alone) and agrees with the reference to rounding (~1e-12).
Ties in priorities are always broken exactly as the reference does, in the dtype of
the given X: when X's dtype differs from the compute dtype, the tie-breaking keys are
computed on the host in X's own dtype.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.decoder._layout import DeviceGraph, Spec, bucket, device_graph, stack_graphs
from jaxplace.decoder.kahn import host_priority_keys, kahn_one, priority_keys
from jaxplace.decoder.slicing import FEWER, slice_one
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem
from jaxplace.reference import Partition

#: Stated relative tolerance of float32 costs against the float64 reference.
FLOAT32_RTOL = 1e-5
#: Default device-memory budget for one chunk of the population, in bytes.
DEFAULT_MEMORY_BUDGET = 1 << 30

_DTYPES = {"float32": jnp.float32, "float64": jnp.float64}

#: Per-chunk DP-table size the default chunking aims for (it is reread every step, so
#: it should stay in cache; measured best on a 2-core EPYC with 1 MiB L2, 32 MiB L3).
CACHE_BYTES = 4 << 20

#: Default implementation of the population scorer.
IMPL = "lanes"

#: Number of times a host entry point was traced (compiled); for no-recompile tests.
TRACE_COUNT = {"evaluate": 0, "decode": 0}


# -- pure, jittable layer ------------------------------------------------------------


def score_one_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """() bottleneck cost of one candidate given its (N,) int32 Kahn keys."""
    return slice_one(spec, g, kahn_one(spec, g, keys))


def score_one(spec: Spec, g: DeviceGraph, x: jnp.ndarray) -> jnp.ndarray:
    """() bottleneck cost of one candidate given its (N,) padded priorities."""
    return score_one_keys(spec, g, priority_keys(x, g.n))


def score_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray, *,
               impl: str = IMPL, window: int | None = None) -> jnp.ndarray:
    """(P,) costs for (P, N) int32 keys. `impl`: "lanes" (fast) or "simple" (vmap)."""
    _check_impl(spec, impl)
    if impl == "simple":
        return jax.vmap(partial(score_one_keys, spec), in_axes=(None, 0))(g, keys)
    from jaxplace.decoder import lanes

    return lanes.score_prio(spec, g, keys, window)


def unit_priorities(spec: Spec, g: DeviceGraph, X: jnp.ndarray) -> jnp.ndarray:
    """(P, N) unit priorities (the max over each unit's members) of (P, width) X."""
    if not spec.NX:
        return X
    return jax.ops.segment_max(X.T, g.unit_of, num_segments=spec.N + 1)[:spec.N].T


def _check_impl(spec: Spec, impl: str) -> None:
    if impl not in ("lanes", "simple"):
        raise JaxplaceError(f"must be 'lanes' or 'simple', got {impl!r}", field="impl")
    if impl == "simple" and (spec.NX or spec.C or spec.use_bad):
        raise JaxplaceError("the simple decoder handles plain graphs only (no "
                            "colocation, training graphs, CPUs or unsupported nodes)",
                            field="impl")


def score(spec: Spec, g: DeviceGraph, X: jnp.ndarray, *, impl: str = IMPL,
          window: int | None = None) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, spec.width) padded node priorities.

    Columns >= n are ignored. Pure and jittable; `spec` must be static. Use
    `device_graph(problem)` for `(spec, g)`. `window` (static, lanes only): allow
    blocks of at most that many units; exact only for the lanes whose cost is below
    `block_bound(problem, window)` (see `evaluate`, which checks and recomputes).
    """
    _check_impl(spec, impl)
    U = unit_priorities(spec, g, X)
    if impl == "lanes":
        from jaxplace.decoder import lanes

        return lanes.score_prio(spec, g, U, window)
    keys = jax.vmap(priority_keys, in_axes=(0, None))(U, g.n)
    return score_keys(spec, g, keys, impl=impl)


def score_graphs(spec: Spec, graphs: DeviceGraph, X: jnp.ndarray, *,
                 impl: str = IMPL) -> jnp.ndarray:
    """(G, P) costs for a stack of G graphs (`stack_graphs`) and (G, P, N) priorities.

    One compiled function scores candidates for many graphs at once; graph i uses
    X[i, :, :n_i]. Pure and jittable.
    """
    return jax.vmap(partial(score, spec, impl=impl))(graphs, X)


def make_evaluator(problem: Problem, *, precision: str = "float32", impl: str = IMPL
                   ) -> tuple[Callable[[jnp.ndarray], jnp.ndarray], DeviceGraph]:
    """A pure function X (P, n) -> (P,) costs for `problem`, and its DeviceGraph.

    The function is not jitted and performs no host work, so it can be traced inside
    `jax.jit`, `lax.scan` or `vmap` (e.g. a whole search generation loop). It closes
    over the padded graph arrays; the returned DeviceGraph is the same data, for
    callers that prefer to pass it explicitly to `score(spec, graph, X)` (get `spec`
    from `problem_spec(problem)`). X must already be in the compute dtype (float32,
    or float64 inside a `jax.enable_x64(True)` context for precision="float64").
    P may be any size; padded columns are added inside.

    Example:
        fn, _ = make_evaluator(problem)
        costs = jax.jit(fn)(X)  # (P,) float32
    """
    dtype = _dtype(precision)
    spec, g = device_graph(problem, dtype=dtype)
    n = problem.n

    def fn(X: jnp.ndarray) -> jnp.ndarray:
        X = jnp.asarray(X)
        Xp = jnp.pad(X, ((0, 0), (0, spec.width - n)))
        return score(spec, g, Xp, impl=impl)

    return fn, g


# -- host entry points ---------------------------------------------------------------


def _dtype(precision: str):
    if precision not in _DTYPES:
        raise JaxplaceError(f"must be one of {sorted(_DTYPES)}, got {precision!r}",
                            field="precision")
    return _DTYPES[precision]


def _check_X(problem: Problem, X) -> np.ndarray:
    X = np.asarray(X)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != problem.n:
        raise JaxplaceError(f"has shape {X.shape}, expected (P, {problem.n})", field="X")
    if X.dtype.kind not in "fiub":
        raise JaxplaceError(f"must hold real numbers, got {X.dtype}", field="X")
    if X.dtype.kind == "f" and np.isnan(X).any():
        raise JaxplaceError("must not contain NaN", field="X")
    return X


_graph_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached_graph(problem: Problem, precision: str) -> tuple[Spec, DeviceGraph]:
    per = _graph_cache.setdefault(problem, {})
    if precision not in per:
        per[precision] = device_graph(problem, dtype=_DTYPES[precision])
    return per[precision]


def bytes_per_candidate(spec: Spec, itemsize: int) -> int:
    """Estimated device bytes one candidate needs while being scored."""
    from jaxplace.decoder import lanes

    # the simple (vmapped) path holds about as much per candidate as the lanes one
    return 2 * lanes.bytes_per_candidate(spec, itemsize)


def chunk_size_for(spec: Spec, itemsize: int, budget: int = DEFAULT_MEMORY_BUDGET,
                   multiple: int = 1) -> int:
    """Largest power-of-two chunk (a multiple of `multiple`) within `budget` bytes."""
    c = max(budget // max(bytes_per_candidate(spec, itemsize), 1), 1)
    # keep one chunk's DP table within CACHE_BYTES: the DP rereads it every step
    from jaxplace.decoder.lanes import table_rows

    c = min(c, max(CACHE_BYTES // (table_rows(spec) * (spec.N + 1) * itemsize), 8))
    c = 1 << (int(c).bit_length() - 1)
    return max(c, multiple) // multiple * multiple


def _mesh(devices):
    from jax.sharding import Mesh

    devs = list(jax.devices() if devices is None else devices)
    return Mesh(np.array(devs), ("pop",)), len(devs)


@partial(jax.jit, static_argnames=("spec", "use_keys", "impl", "mesh", "window"))
def _run(spec, g, Z, *, use_keys, impl, mesh, window=None):
    TRACE_COUNT["evaluate"] += 1

    def body(g, Z):
        if use_keys:
            return score_keys(spec, g, Z, impl=impl, window=window)
        return score(spec, g, Z, impl=impl, window=window)

    if mesh is None:
        return body(g, Z)
    from jax.sharding import PartitionSpec as P

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("pop")), out_specs=P("pop"),
                         check_vma=False)(g, Z)


def _pop_batches(P: int, chunk: int, multiple: int) -> tuple[int, int]:
    """(padded chunk length, number of chunks) for a population of P."""
    if P <= chunk:
        size = min(bucket(P, minimum=multiple), chunk) if P > multiple else multiple
        size = -(-size // multiple) * multiple
        return size, 1
    return chunk, -(-P // chunk)


def _prepare(problem: Problem, X, precision: str):
    if not isinstance(problem, Problem):
        raise JaxplaceError(f"expected a Problem, got {type(problem).__name__}",
                            field="problem")
    dtype = _dtype(precision)
    X = _check_X(problem, X)
    spec, g = _cached_graph(problem, precision)
    use_keys = np.dtype(X.dtype) != np.dtype(dtype)
    n = problem.n
    if use_keys:
        Z = host_priority_keys(_host_unit_priorities(problem, X), g_units(problem), spec.N)
    else:
        Z = np.zeros((X.shape[0], spec.width), dtype=X.dtype)
        Z[:, :n] = X
    return spec, g, Z, use_keys


def g_units(problem: Problem) -> int:
    return problem.graph.units.num_units


def _host_unit_priorities(problem: Problem, X: np.ndarray) -> np.ndarray:
    """(P, U) unit priorities in X's dtype, as `jaxplace.reference.kahn` takes them."""
    units = problem.graph.units
    if units.trivial:
        return X
    key = np.full((X.shape[0], units.num_units), -np.inf,
                  dtype=np.result_type(X.dtype, np.float32))
    np.maximum.at(key.T, units.unit_of, X.T)
    return key.astype(X.dtype) if X.dtype.kind == "f" else key


#: Windows are chosen so that the bound exceeds the last call's largest cost by this.
WINDOW_SLACK = 1.05
#: A restricted window is used only when it is at most this fraction of N.
WINDOW_MAX_FRACTION = 0.85
#: Relative margin of the exactness check of a restricted window (float32 rounding).
WINDOW_MARGIN = 1e-4

_window_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def block_bounds(problem: Problem) -> np.ndarray:
    """(U,) float64: entry L is a lower bound on the cost of any block of L+1 units.

    An accelerator block costs at least its work (transfers and overflow are >= 0,
    infeasible blocks cost +inf), a CPU block its summed CPU latency, so any L+1
    units cost at least the sum of the L+1 smallest unit works (or CPU latencies).
    """
    from jaxplace.decoder._layout import graph_structure

    st = graph_structure(problem.graph)
    b = np.cumsum(np.sort(st["work"]))
    if problem.cpus:
        cpu = np.bincount(st["unit_of"], weights=problem.cpu_latency, minlength=st["U"])
        b = np.minimum(b, np.cumsum(np.sort(cpu)))
    return b


def block_bound(problem: Problem, window: int | None) -> float:
    """Lower bound on the cost of a block of window+1 units (+inf: no restriction)."""
    b = block_bounds(problem)
    return float(b[window]) if window is not None and window < len(b) else np.inf


def choose_window(problem: Problem, spec: Spec, expected_max: float | None) -> int | None:
    """Static window (max units per block) that is exact for costs up to
    WINDOW_SLACK * expected_max, rounded up to a bucket; None for the full DP."""
    if expected_max is None or not np.isfinite(expected_max) or expected_max <= 0:
        return None
    b = block_bounds(problem)
    L = int(np.searchsorted(b, WINDOW_SLACK * expected_max, side="right"))
    step = max(8, (1 << max(spec.N - 1, 1).bit_length()) // 32)
    L = -(-max(L, 1) // step) * step
    if L >= len(b) or L > WINDOW_MAX_FRACTION * spec.N:
        return None
    return L


def _score_rows(problem, spec, g, Z, use_keys, *, precision, chunk_size, devices,
                memory_budget, impl, window):
    mesh, ndev = _mesh(devices)
    if ndev == 1:
        mesh = None
    itemsize = np.dtype(_DTYPES[precision]).itemsize
    chunk = chunk_size or chunk_size_for(spec, itemsize, memory_budget, ndev)
    chunk = -(-chunk // ndev) * ndev
    size, count = _pop_batches(Z.shape[0], chunk, ndev)
    P = Z.shape[0]
    Zp = np.zeros((size * count, Z.shape[1]), dtype=Z.dtype)
    Zp[:P] = Z
    if use_keys:  # padded rows still need valid unique keys
        Zp[P:] = np.arange(spec.N - 1, -1, -1, dtype=np.int32)
    out = []
    for i in range(count):
        z = Zp[i * size:(i + 1) * size]
        if mesh is not None:
            from jax.sharding import NamedSharding
            from jax.sharding import PartitionSpec as PS

            z = jax.device_put(z, NamedSharding(mesh, PS("pop")))
        out.append(_run(spec, g, z, use_keys=use_keys, impl=impl, mesh=mesh,
                        window=window))
    return np.concatenate([np.asarray(o, dtype=np.float64) for o in out])[:P]


def evaluate(problem: Problem, X, *, precision: str = "float32",
             chunk_size: int | None = None, devices: Sequence | None = None,
             memory_budget: int = DEFAULT_MEMORY_BUDGET, impl: str = IMPL,
             window: int | str | None = "auto") -> np.ndarray:
    """(P,) float64 bottleneck costs of SliceGraph(Kahn(x)) for every row x of X.

    Same semantics as `jaxplace.evaluate_reference`: ties to the smaller node index,
    overflow, hard capacity -> +inf, multi-tensor hyperedges, k > n allowed; with
    placement units, CPU blocks and unsupported nodes as in the reference.

    Args:
        problem: the instance.
        X: (P, n) priorities (a single (n,) vector is treated as P = 1).
        precision: "float32" (default, within FLOAT32_RTOL of the reference) or
            "float64" (x64 enabled for this call only; agrees to rounding).
        chunk_size: candidates per compiled call; default: the largest power of two
            whose working set fits `memory_budget`.
        devices: devices to shard each chunk's population over (default: all of
            `jax.devices()`); the chunk is padded to a multiple of their number.
        memory_budget: bytes of device memory one chunk may use.
        impl: "lanes" (population-minor fast path) or "simple" (vmapped oracle).
        window: "auto" (default): after a first call, blocks are restricted to at most
            L units where any L+1 units cost more than 1.05x the previous call's
            largest cost (`choose_window`); lanes whose restricted cost is not below
            that bound are recomputed with the full DP, so results stay exact.
            None: always the full DP; an int: that window (with the same check).

    Multi-host (see docs/decoder.md): after `jax.distributed.initialize()`, call it in
    each process on that host's rows with `devices=jax.local_devices()`; one array
    sharded over all hosts is not supported here (results are fetched to NumPy).
    """
    with jax.enable_x64(precision == "float64"):
        spec, g, Z, use_keys = _prepare(problem, X, precision)
        kw = dict(precision=precision, chunk_size=chunk_size, devices=devices,
                  memory_budget=memory_budget, impl=impl)
        state = _window_state.setdefault(problem, {})
        if impl != "lanes":
            L = None
        elif window == "auto":
            L = choose_window(problem, spec, state.get(precision))
        elif window is None:
            L = None
        else:
            L = int(window)
            L = None if L >= spec.N else max(L, 1)
        costs = _score_rows(problem, spec, g, Z, use_keys, window=L, **kw)
        if L is not None:
            bound = block_bound(problem, L)
            redo = ~(costs < bound * (1 - WINDOW_MARGIN))
            if redo.any():
                costs[redo] = _score_rows(problem, spec, g, Z[redo], use_keys, window=None,
                                          **kw)
        fin = costs[np.isfinite(costs)]
        if len(fin):
            state[precision] = float(fin.max())
    return costs


# -- decode ----------------------------------------------------------------------------


@partial(jax.jit, static_argnames=("spec", "use_keys", "orders_only"))
def _decode_run(spec, g, Z, *, use_keys, orders_only=False):
    TRACE_COUNT["decode"] += 1

    def one(z):
        keys = z if use_keys else priority_keys(unit_priorities(spec, g, z[None])[0], g.n)
        order = kahn_one(spec, g, keys)
        if orders_only:
            return order
        cost, ch = slice_one(spec, g, order, with_choice=True)
        return order, cost, ch

    return jax.vmap(one)(Z)


def _traceback(problem: Problem, order: np.ndarray, ch: np.ndarray) -> Partition:
    n = problem.n
    j, t = min(problem.k, n), n
    starts = []
    while t > 0:
        c = int(ch[j - 1, t])
        if c == FEWER:
            j -= 1
            continue
        starts.append(c)
        t, j = c, j - 1
    cuts = tuple(sorted(s for s in starts if s > 0))
    assignment = np.empty(n, dtype=np.int64)
    for b, block in enumerate(np.split(order, list(cuts))):
        assignment[block] = b
    from jaxplace.cost import evaluate_partition

    cost = evaluate_partition(problem, assignment).bottleneck
    return Partition(order, cuts, assignment, cost)


def decode(problem: Problem, x, *, precision: str = "float32"):
    """Full partition of SliceGraph(Kahn(x)): a `jaxplace.reference.Partition`.

    `x` is one (n,) vector (returns a Partition) or a (P, n) batch (returns a list).
    `Partition.cost` is recomputed in float64 by `jaxplace.evaluate_partition` from
    the assignment, so it is exact for the partition found; per-block costs are
    `jaxplace.evaluate_partition(problem, p.assignment)`. In float32, near-ties
    between splits may be resolved differently from the float64 reference (the cost
    then agrees within FLOAT32_RTOL); in float64 the partition equals the reference's.

    Heterogeneous problems (placement units, CPU blocks, unsupported nodes): the
    unit order is computed in JAX and split by `jaxplace.reference.slice_order` on
    the host (float64, O(U^2 (k+1)(cpus+1)) per vector), so the Partition is exactly
    the reference's for that order (members of a unit contiguous, accelerator blocks
    0..k-1, CPU blocks k..).
    """
    single = np.ndim(x) == 1
    with jax.enable_x64(precision == "float64"):
        spec, g, Z, use_keys = _prepare(problem, x, precision)
        P = Z.shape[0]
        size = bucket(P, minimum=1) if P > 1 else 1
        Zp = np.zeros((size, Z.shape[1]), dtype=Z.dtype)
        Zp[:P] = Z
        if use_keys:
            Zp[P:] = np.arange(spec.N - 1, -1, -1, dtype=np.int32)
        plain = not (spec.NX or spec.C or spec.use_bad)
        out = _decode_run(spec, g, Zp, use_keys=use_keys, orders_only=not plain)
        if plain:
            order, _, ch = (np.asarray(a) for a in out)
        else:
            order = np.asarray(out)
    n = problem.n
    if plain:
        parts = [_traceback(problem, order[i, :n].astype(np.int64), ch[i])
                 for i in range(P)]
    else:  # units, CPUs: the device-typed DP of the reference on the host, float64
        from jaxplace.reference import slice_order

        units = problem.graph.units
        U = units.num_units
        parts = [slice_order(problem, np.concatenate(
            [units.unit_members(int(u)) for u in order[i, :U]]).astype(np.int64))
            for i in range(P)]
    return parts[0] if single else parts


def evaluate_graphs(problems: Sequence[Problem], X, *, precision: str = "float32"
                    ) -> np.ndarray:
    """(G, P) costs for G problems at once, X (G, P, n_max) (row i uses its first n_i).

    Pads all graphs to one Spec (`stack_graphs`) and runs one compiled function.
    """
    problems = list(problems)
    dtype = _dtype(precision)
    X = np.asarray(X)
    if X.ndim != 3 or X.shape[0] != len(problems):
        raise JaxplaceError(f"has shape {X.shape}, expected (G, P, n_max)", field="X")
    for i, p in enumerate(problems):
        _check_X(p, X[i, :, :p.n])
    with jax.enable_x64(precision == "float64"):
        spec, gs = stack_graphs(problems, dtype=dtype)
        Xp = np.zeros(X.shape[:2] + (spec.N,), dtype=np.dtype(dtype))
        for i, p in enumerate(problems):
            Xp[i, :, :p.n] = X[i, :, :p.n]
        out = _run_graphs(spec, gs, Xp)
        return np.asarray(out, dtype=np.float64)


@partial(jax.jit, static_argnames=("spec",))
def _run_graphs(spec, gs, X):
    return score_graphs(spec, gs, X)
