"""`Evaluator`: one problem (or a batch of problems) ready to score priority vectors.

Built once, it holds everything a call needs, explicitly: the static `Spec`, the
padded `DeviceGraph` (stacked for several problems), the precision, how populations
are batched over devices (`Batching`) and the window policy (`window.py`). It has a
pure, jittable scorer for use inside other compiled code (`score_fn`) and host entry
points that validate, pad, chunk, shard and return NumPy (`__call__`, `decode`).

Compiled code is shared between evaluators of equal `Spec` (JAX's cache is keyed by
the static arguments and shapes, never by object identity).

    ev = Evaluator(problem)                    # or Evaluator([p1, p2, ...])
    costs = ev(X)                              # (P, n) -> (P,) float64
    fn = ev.score_fn(); jax.jit(fn)(Xp)        # (P, width) -> (P,), pure
    part = ev.decode(X[0])                     # a Partition
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.decoder.batching import (
    DEFAULT_MEMORY_BUDGET,
    Batching,
    plan_chunks,
    run_batched,
)
from jaxplace.decoder.fused import fused_spec
from jaxplace.decoder.kahn import host_priority_keys
from jaxplace.decoder.layout import (
    Spec,
    bucket,
    graph_structure,
    problem_spec,
    stack_graphs,
)
from jaxplace.decoder.partitions import decode_chunk, partitions
from jaxplace.decoder.scoring import (
    check_impl,
    score,
    score_graphs,
    score_keys,
)
from jaxplace.decoder.window import WINDOW_MARGIN, block_bound, block_bounds, window_policy
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

DTYPES = {"float32": jnp.float32, "float64": jnp.float64}
#: `impl` that picks the implementation per platform and problem (`resolve_impl`).
AUTO_IMPL = "auto"
#: Platforms where "auto" picks the fused kernel. On an H200 (`jaxplace bench gpu`,
#: 2026-11-27) it scored 1.1-1.4x the lanes path at n = 200 and 3.3x at n = 1,000, and
#: gave the same costs from call to call with XLA's default flags, where the lanes
#: path's scatter-adds (atomics on a GPU) did not.
FUSED_PLATFORMS = ("gpu",)
#: Bytes of priority keys per compiled call of the fused kernel on a GPU: it keeps its
#: per-candidate state inside the kernel, so a chunk needs only its keys and inputs.
FUSED_CHUNK_BYTES = 256 << 20
#: The Pallas kernels (power-of-two shapes, state inside the kernel).
KERNEL_IMPLS = ("fused", "sparse")


def default_platform(devices: Sequence | None = None) -> str:
    """The platform a call runs on: that of `devices[0]`, else JAX's default backend."""
    if devices:
        return list(devices)[0].platform
    return jax.default_backend()


def resolve_impl(impl: str, spec: Spec | Callable[[], Spec], *,
                 platform: str | None = None, precision: str = "float32") -> str:
    """The implementation that scores `spec`'s graphs: `impl` itself unless it is
    "auto", which picks "fused" on FUSED_PLATFORMS when the kernel takes the graphs
    (`fused.check`: no CPU blocks) in float32 (the precision it was measured in), and
    "lanes" everywhere else (CPUs: the same programs as before "auto" existed).
    `spec` may be a callable giving it, called only when the platform could use the
    kernel."""
    if impl != AUTO_IMPL:
        return impl
    if (platform or default_platform()) not in FUSED_PLATFORMS or precision != "float32":
        return "lanes"
    try:
        check_impl(spec() if callable(spec) else spec, "fused")
    except JaxplaceError:
        return "lanes"
    return "fused"


def fused_chunk_size(spec: Spec, groups: int = 1) -> int:
    """Candidates per compiled call of the fused kernel on a GPU: the largest power
    of two whose keys (N int32 and as many priorities each) fit FUSED_CHUNK_BYTES."""
    rows = FUSED_CHUNK_BYTES // (max(spec.N, spec.width) * 8 * max(groups, 1))
    return 1 << (max(int(rows), 1).bit_length() - 1)


def compute_dtype(precision: str):
    if precision not in DTYPES:
        raise JaxplaceError(f"must be one of {sorted(DTYPES)}, got {precision!r}",
                            field="precision")
    return DTYPES[precision]


@partial(jax.jit, static_argnames=("spec", "use_keys", "impl", "mesh", "window", "multi"))
def score_chunk(spec: Spec, g, Z, *, use_keys: bool, impl: str, mesh, window=None,
                multi: bool = False):
    """Costs of one chunk: (P,) for (P, width) Z, or (G, P) for (G, P, width) with
    `multi`; Z holds int32 unit keys instead of priorities with `use_keys`."""

    def body(g, Z):
        if multi:  # several graphs: always priorities in the compute dtype
            return score_graphs(spec, g, Z, impl=impl)
        fn = score_keys if use_keys else score
        return fn(spec, g, Z, impl=impl, window=window)

    if mesh is None:
        return body(g, Z)
    from jax.sharding import PartitionSpec as P

    pop = P(None, "pop") if multi else P("pop")
    return jax.shard_map(body, mesh=mesh, in_specs=(P(), pop), out_specs=pop,
                         check_vma=False)(g, Z)


def check_X(problem: Problem, X) -> np.ndarray:
    """(P, n) real, NaN-free priorities from X ((n,) is one row), or JaxplaceError."""
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


def host_unit_priorities(problem: Problem, X: np.ndarray) -> np.ndarray:
    """(P, U) unit priorities in X's dtype, as `objectives.throughput.reference.kahn` takes them."""
    units = problem.graph.units
    if units.trivial:
        return X
    key = np.full((X.shape[0], units.num_units), -np.inf,
                  dtype=np.result_type(X.dtype, np.float32))
    np.maximum.at(key.T, units.unit_of, X.T)
    return key.astype(X.dtype) if X.dtype.kind == "f" else key


def fused_spec_of(problems: Sequence[Problem]) -> Spec:
    """The power-of-two Spec of the fused kernel holding every problem."""
    spec = problem_spec(problems[0])
    for p in problems[1:]:
        spec = spec.merge(problem_spec(p))
    return fused_spec(spec)


class Evaluator:
    """Scores (P, n) priority arrays for one problem, or (G, P, n_max) for several.

    Args:
        problems: a `Problem`, or a sequence of them (one padded Spec, stacked graphs).
        precision: "float32" (within FLOAT32_RTOL of the reference) or "float64"
            (x64 enabled around each call only; agrees with the reference to rounding).
        window: "auto" (an `AdaptiveWindow` owned by this evaluator), "sample" (a
            `SampledWindow`: per call), None (full DP), an int, or a `WindowPolicy`.
            Single problem, lanes only.
        impl: "auto" (`resolve_impl`: "fused" on GPUs where it applies, else
            "lanes"), "lanes" (population-minor fast path), "simple" (vmapped oracle)
            or "fused" (one Pallas kernel per block of candidates, `fused.py`; full DP,
            "sparse": `sparse_fused.py`, the same doing only the work it needs;
            no CPU blocks; interpret mode off GPUs). `self.impl` is the one resolved.
        chunk_size, devices, memory_budget, threads: see `Batching` (the fused kernel
            on a GPU: `fused_chunk_size` by default).
        spec: pad to this Spec instead of the smallest bucket (shares compiled code).
    """

    def __init__(self, problems: Problem | Sequence[Problem], *, precision: str = "float32",
                 window="auto", impl: str = AUTO_IMPL, chunk_size: int | None = None,
                 devices: Sequence | None = None,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET, spec: Spec | None = None,
                 threads: int | None = None):
        self.multi = not isinstance(problems, Problem)
        self.problems = list(problems) if self.multi else [problems]
        if not self.problems or not all(isinstance(p, Problem) for p in self.problems):
            raise JaxplaceError("expected a Problem or a non-empty list of them",
                                field="problem")
        self.precision = precision
        self.dtype = compute_dtype(precision)
        platform = default_platform(devices)
        impl = resolve_impl(impl, lambda: spec or fused_spec_of(self.problems),
                            platform=platform, precision=precision)
        self.impl = impl
        if chunk_size is None and impl in KERNEL_IMPLS and platform in FUSED_PLATFORMS:
            chunk_size = fused_chunk_size(spec or fused_spec_of(self.problems),
                                          len(self.problems) if self.multi else 1)
        self.batching = Batching.of(chunk_size, devices, memory_budget, threads)
        self.window = window_policy(window)
        with jax.enable_x64(precision == "float64"):
            self.spec, self.graph = self._build(spec)
        check_impl(self.spec, impl)
        self._bounds = None

    def _build(self, spec):
        if spec is None and self.impl in KERNEL_IMPLS:  # the kernels' power-of-two shapes
            spec = fused_spec_of(self.problems)
        if self.multi:
            return stack_graphs(self.problems, dtype=self.dtype, spec=spec)
        from jaxplace.decoder.layout import device_graph

        p = self.problems[0]
        self.structure = graph_structure(p.graph)
        return device_graph(p, spec, self.dtype, self.structure)

    @property
    def problem(self) -> Problem:
        """The problem (single-problem evaluators)."""
        if self.multi:
            raise JaxplaceError("this evaluator holds several problems", field="problem")
        return self.problems[0]

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    # -- pure layer ----------------------------------------------------------------

    def score_fn(self) -> Callable[[jnp.ndarray], jnp.ndarray]:
        """Pure `fn(X) -> costs`, closing over the padded graph(s); jittable.

        Single problem: (P, n..width) -> (P,); several: (G, P, n_max..width) ->
        (G, P). Columns are zero-padded to `spec.width` inside. X must be in the
        compute dtype (float64 only inside `jax.enable_x64(True)`).
        """
        spec, g, impl, multi = self.spec, self.graph, self.impl, self.multi

        def fn(X):
            X = jnp.asarray(X)
            pad = [(0, 0)] * (X.ndim - 1) + [(0, spec.width - X.shape[-1])]
            Xp = jnp.pad(X, pad)
            return score_graphs(spec, g, Xp, impl=impl) if multi else score(
                spec, g, Xp, impl=impl)

        return fn

    # -- host layer ----------------------------------------------------------------

    def __call__(self, X) -> np.ndarray:
        """float64 costs: (P,) for a (P, n) or (n,) X; (G, P) for several problems."""
        with jax.enable_x64(self.precision == "float64"):
            if self.multi:
                return self._evaluate_graphs(X)
            Z, use_keys = self._rows(X)
            return self._evaluate(Z, use_keys)

    def _rows(self, X) -> tuple[np.ndarray, bool]:
        """Padded (P, width) priorities, or (P, N) keys when X's dtype differs from the
        compute dtype (ties are then broken in X's own dtype, as the reference)."""
        p = self.problem
        X = check_X(p, X)
        if np.dtype(X.dtype) != np.dtype(self.dtype):
            keys = host_priority_keys(host_unit_priorities(p, X),
                                      p.graph.units.num_units, self.spec.N)
            return keys, True
        Z = np.zeros((X.shape[0], self.spec.width), dtype=X.dtype)
        Z[:, :p.n] = X
        return Z, False

    def _pad_row(self, use_keys: bool):
        return np.arange(self.spec.N - 1, -1, -1, dtype=np.int32) if use_keys else None

    def _score_rows(self, Z: np.ndarray, use_keys: bool, window: int | None) -> np.ndarray:
        def run(z, mesh):
            return score_chunk(self.spec, self.graph, z, use_keys=use_keys,
                               impl=self.impl, mesh=mesh, window=window)

        return run_batched(run, Z, spec=self.spec, itemsize=self.itemsize,
                           batching=self.batching, pad_row=self._pad_row(use_keys))

    def _evaluate(self, Z: np.ndarray, use_keys: bool) -> np.ndarray:
        if self.impl != "lanes":
            costs = self._score_rows(Z, use_keys, None)
            self.window.observe(costs)
            return costs
        if self._bounds is None:
            self._bounds = block_bounds(self.problem, self.structure)
        L = self.window.choose(self._bounds, self.spec)
        head = self._sample_rows(len(Z)) if L is None else 0
        if head:  # a SampledWindow: its rows with the full DP pick the rest's window
            first = self._score_rows(Z[:head], use_keys, None)
            L = self.window.after_sample(self._bounds, self.spec, first)
            costs = np.concatenate([first, self._windowed(Z[head:], use_keys, L)])
        else:
            costs = self._windowed(Z, use_keys, L)
        self.window.observe(costs)
        return costs

    def _sample_rows(self, rows: int) -> int:
        sample_rows = getattr(self.window, "sample_rows", None)
        if sample_rows is None:
            return 0
        plan = plan_chunks(rows, spec=self.spec, itemsize=self.itemsize,
                           batching=self.batching)
        return sample_rows(rows, plan.size * plan.threads)

    def _windowed(self, Z: np.ndarray, use_keys: bool, L: int | None) -> np.ndarray:
        """Costs with blocks of at most L units, recomputed with the full DP where
        the restriction may not be exact."""
        costs = self._score_rows(Z, use_keys, L)
        if L is not None:
            bound = block_bound(self.problem, L, self._bounds)
            redo = ~(costs < bound * (1 - WINDOW_MARGIN))
            if redo.any():
                costs[redo] = self._score_rows(Z[redo], use_keys, None)
        return costs

    def _evaluate_graphs(self, X) -> np.ndarray:
        X = np.asarray(X)
        if X.ndim != 3 or X.shape[0] != len(self.problems):
            raise JaxplaceError(f"has shape {X.shape}, expected (G, P, n_max) with G = "
                                f"{len(self.problems)}", field="X")
        Z = np.zeros(X.shape[:2] + (self.spec.width,), dtype=np.dtype(self.dtype))
        for i, p in enumerate(self.problems):
            Z[i, :, :p.n] = check_X(p, X[i, :, :p.n])

        def run(z, mesh):
            return score_chunk(self.spec, self.graph, z, use_keys=False, impl=self.impl,
                               mesh=mesh, multi=True)

        return run_batched(run, Z, spec=self.spec, itemsize=self.itemsize,
                           batching=self.batching, axis=1)

    def decode(self, x):
        """The `Partition` of one (n,) vector, or a list of them for a (P, n) batch.

        `Partition.cost` is recomputed in float64 from the assignment. In float32,
        near-ties between splits may resolve differently from the float64 reference
        (cost within FLOAT32_RTOL); in float64 the partition equals the reference's.
        Heterogeneous problems: unit orders in JAX, split by the reference's
        device-typed DP on the host (`jaxplace.objectives.throughput.reference.slice_order`).
        """
        single = np.ndim(x) == 1
        spec = self.spec
        with jax.enable_x64(self.precision == "float64"):
            Z, use_keys = self._rows(x)
            P = Z.shape[0]
            size = bucket(P, minimum=1) if P > 1 else 1
            Zp = np.zeros((size, Z.shape[1]), dtype=Z.dtype)
            Zp[:P] = Z
            if use_keys:
                Zp[P:] = self._pad_row(True)
            plain = not (spec.NX or spec.C or spec.use_bad)
            out = decode_chunk(spec, self.graph, Zp, use_keys=use_keys,
                               orders_only=not plain)
            parts = partitions(self.problem, spec, out, P)
        return parts[0] if single else parts


__all__ = ["AUTO_IMPL", "DTYPES", "FUSED_CHUNK_BYTES", "FUSED_PLATFORMS", "Evaluator",
           "check_X", "compute_dtype", "default_platform", "fused_chunk_size",
           "fused_spec_of", "host_unit_priorities", "resolve_impl", "score_chunk"]
