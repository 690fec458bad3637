"""Kahn's topological sort with node priorities, in JAX, for one candidate.

The highest-priority ready node is emitted first, ties to the smaller node index
(Archer et al., ICML 2024). Priorities are first turned into unique integer
keys (`priority_keys`), so the tie rule is carried by integers and every step is an
argmax over a masked integer vector.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplace.decoder.layout import DeviceGraph, Spec

#: Key of a node that is not ready (every real or padded key is >= 0).
NOT_READY = -1
#: Remaining in-degree given to an emitted node so it is never ready again.
EMITTED = 1 << 30


def priority_keys(x: jnp.ndarray, n: jnp.ndarray) -> jnp.ndarray:
    """Unique int32 keys, higher first: real nodes by (priority desc, index asc).

    Args:
        x: (N,) priorities; entries at index >= n are padding and ignored.
        n: () number of real nodes.

    Returns:
        (N,) int32 keys in 0..N-1; every real node has a larger key than every padded
        node, and key order is the Kahn tie order.
    """
    N = x.shape[0]
    iota = jnp.arange(N, dtype=jnp.int32)
    pad = (iota >= n).astype(jnp.int32)
    neg = jnp.where(iota < n, -x, 0) + 0  # + 0 turns -0.0 into +0.0, as == compares
    _, _, perm = lax.sort((pad, neg, iota), num_keys=2, is_stable=True)
    rank = jnp.zeros(N, jnp.int32).at[perm].set(iota)
    return (N - 1) - rank


def host_priority_keys(X: np.ndarray, n: int, N: int) -> np.ndarray:
    """NumPy version of `priority_keys` for a (P, n) batch, comparing in X's dtype.

    Returns (P, N) int32 keys (padded nodes get the lowest keys).
    """
    P = X.shape[0]
    neg = -X + 0  # priorities are compared in their own dtype, like the reference
    idx = np.broadcast_to(np.arange(n), X.shape)
    perm = np.lexsort((idx, neg), axis=-1)
    keys = np.empty((P, N), dtype=np.int32)
    rows = np.arange(P)[:, None]
    keys[rows, perm] = (N - 1) - np.arange(n, dtype=np.int32)
    keys[:, n:] = (N - 1 - n) - np.arange(N - n, dtype=np.int32)
    return keys


def kahn_one(spec: Spec, g: DeviceGraph, keys: jnp.ndarray) -> jnp.ndarray:
    """(N,) int32 topological order of one candidate given its (N,) int32 keys."""

    def step(indeg, _):
        score = jnp.where(indeg == 0, keys, NOT_READY)
        u = jnp.argmax(score).astype(jnp.int32)
        indeg = indeg.at[g.succ[u]].add(-1, mode="drop")
        indeg = indeg.at[u].set(EMITTED)
        return indeg, u

    _, order = lax.scan(step, g.indeg, None, length=spec.N)
    return order


def positions(order: jnp.ndarray) -> jnp.ndarray:
    """(N,) int32 position of every node in `order`."""
    N = order.shape[0]
    return jnp.zeros(N, jnp.int32).at[order].set(jnp.arange(N, dtype=jnp.int32))


__all__ = ["EMITTED", "NOT_READY", "host_priority_keys", "kahn_one", "positions",
           "priority_keys"]
