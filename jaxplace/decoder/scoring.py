"""Pure, jittable scoring: SliceGraph(Kahn(x)) costs of padded priority arrays.

Everything here takes the static `Spec` and the padded `DeviceGraph` explicitly and
does no host work, so it can be traced inside `jax.jit`, `lax.scan` or `vmap` (a
whole search generation loop, a policy-gradient step). Host batching lives in
`batching.py`, the user-facing object in `evaluator.py`.

Precision: float32 costs agree with the float64 NumPy reference within a relative
tolerance of `FLOAT32_RTOL` (segment costs are sums of up to n float32 terms).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jaxplace.decoder import fused, _lanes as lanes, sparse_fused
from jaxplace.decoder.kahn import kahn_one, priority_keys
from jaxplace.decoder.layout import DeviceGraph, Spec
from jaxplace.decoder.slicing import slice_one
from jaxplace.errors import JaxplaceError

#: Stated relative tolerance of float32 costs against the float64 reference.
FLOAT32_RTOL = 1e-5
#: Default implementation of the population scorer.
IMPL = "lanes"
IMPLS = ("lanes", "simple", "fused", "sparse")


def check_impl(spec: Spec, impl: str) -> None:
    """Raise when `impl` is unknown or cannot handle the graphs of `spec`."""
    if impl not in IMPLS:
        raise JaxplaceError(f"must be one of {', '.join(IMPLS)}, got {impl!r}", field="impl")
    if impl in ("fused", "sparse"):
        fused.check(spec)
    if impl == "simple" and (spec.NX or spec.C or spec.use_bad):
        raise JaxplaceError("the simple decoder handles plain graphs only (no "
                            "colocation, training graphs, CPUs or unsupported nodes)",
                            field="impl")


def score_one_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """() bottleneck cost of one candidate given its (N,) int32 Kahn keys."""
    return slice_one(spec, g, kahn_one(spec, g, keys))


def score_one(spec: Spec, g: DeviceGraph, x: jnp.ndarray) -> jnp.ndarray:
    """() bottleneck cost of one candidate given its (N,) padded priorities."""
    return score_one_keys(spec, g, priority_keys(x, g.n))


def unit_priorities(spec: Spec, g: DeviceGraph, X: jnp.ndarray) -> jnp.ndarray:
    """(P, N) unit priorities (the max over each unit's members) of (P, width) X."""
    if not spec.NX:
        return X
    return jax.ops.segment_max(X.T, g.unit_of, num_segments=spec.N + 1)[:spec.N].T


def score_keys(spec: Spec, g: DeviceGraph, keys: jnp.ndarray, *, impl: str = IMPL,
               window: int | None = None) -> jnp.ndarray:
    """(P,) costs for (P, N) int32 unit keys. `impl`: "lanes" (fast), "simple" (the
    vmapped oracle) "fused" (one Pallas kernel, fused.py) or "sparse" (the kernel doing only
    the work it needs, sparse_fused.py)."""
    check_impl(spec, impl)
    if impl == "simple":
        return jax.vmap(partial(score_one_keys, spec), in_axes=(None, 0))(g, keys)
    if impl == "fused":
        return fused.score_prio(spec, g, keys)
    if impl == "sparse":
        return sparse_fused.score_prio(spec, g, keys)
    return lanes.score_prio(spec, g, keys, window)


def score(spec: Spec, g: DeviceGraph, X: jnp.ndarray, *, impl: str = IMPL,
          window: int | None = None, tau=None) -> jnp.ndarray:
    """(P,) bottleneck costs for (P, spec.width) padded node priorities.

    Columns >= n are ignored. `window` (static, lanes only): blocks of at most that
    many units; exact only for lanes whose cost is below `window.block_bound`
    (`Evaluator` checks and recomputes). `tau` (sparse only; a scalar, None: none):
    candidates provably above it cost +inf, the others their exact cost.
    """
    check_impl(spec, impl)
    U = unit_priorities(spec, g, X)
    if impl == "lanes":
        return lanes.score_prio(spec, g, U, window)
    if impl == "fused":  # always the full DP
        return fused.score_prio(spec, g, U)
    if impl == "sparse":
        return sparse_fused.score_prio(spec, g, U, tau=tau)
    keys = jax.vmap(priority_keys, in_axes=(0, None))(U, g.n)
    return score_keys(spec, g, keys, impl=impl)


def score_orders(spec: Spec, g: DeviceGraph, X: jnp.ndarray, *,
                 window: int | None = None) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`score` (the lanes decoder) and the (N, P) int32 Kahn orders of units it sliced:
    order[:, p] is `kahn_one` of candidate p, for a caller that needs the order of a
    scored candidate without a second Kahn in its program."""
    return lanes.score_prio_orders(spec, g, unit_priorities(spec, g, X), window)


def score_graphs(spec: Spec, graphs: DeviceGraph, X: jnp.ndarray, *,
                 impl: str = IMPL) -> jnp.ndarray:
    """(G, P) costs for a stack of G graphs (`stack_graphs`) and (G, P, spec.width) X.

    One compiled function scores candidates for many graphs at once; graph i uses
    X[i, :, :n_i] (pad to `spec.width`, which exceeds `spec.N` for graphs with
    placement units).
    """
    return jax.vmap(partial(score, spec, impl=impl))(graphs, X)


__all__ = ["FLOAT32_RTOL", "IMPL", "IMPLS", "check_impl", "score", "score_graphs",
           "score_keys", "score_one", "score_one_keys", "score_orders",
           "unit_priorities"]
