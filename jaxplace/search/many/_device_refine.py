"""Refinement on the device: cut moves of every unit, all scored in one decoder call.

The island search's answers are refined where the decoder runs (jitted, vmapped over
the problems of a group, sharded like it), instead of waiting for a host-side MIP:

1. Each problem's incumbent order (Kahn of its priorities) and its blocks (the
   accelerator DP's traceback, `slicing.slice_one`: exact cuts on plain graphs, a
   guide elsewhere; moves are always scored by the real decoder).
2. Two closure moves per unit u at position p in block [s, e]: u with its
   descendants inside (p, e] moved right after e (into the next block), or u with its
   ancestors inside [s, p) moved right before s (into the previous block). Both keep
   the order topological (a unit left behind never depends on a moved one), and the
   descendants and ancestors come from the unit DAG's transitive closure, computed
   once per call.
3. Every moved order is encoded as priorities (minus its position, so Kahn returns
   exactly that order) and the 2N moves of every problem are scored in one decoder
   call; the best strictly improving move is applied (ties: the first in unit order),
   for at most `steps` rounds (a round without an improving move ends it). A cost
   never gets worse, the result does not depend on the device count or the other
   problems of the group, and it is deterministic.

The priorities it returns reproduce the refined order; the caller confirms the cost
with the float64 reference as for every search answer.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxplace.decoder.kahn import kahn_one, priority_keys
from jaxplace.decoder.layout import DeviceGraph, Spec, stack_graphs
from jaxplace.decoder.scoring import score, unit_priorities
from jaxplace.decoder.slicing import FEWER, slice_one
from jaxplace.errors import JaxplaceError

#: Largest padded unit count: keys up to 2 N^2 must stay exact in float32.
MAX_UNITS = 2048


def closure(spec: Spec, g: DeviceGraph, order: jnp.ndarray) -> jnp.ndarray:
    """(N, N) bool: reach[u, v] when v is u or a descendant of u in the unit DAG
    (`order`: any topological order, scanned backwards)."""
    N = spec.N
    eye = jnp.eye(N, dtype=bool)

    def step(reach, p):
        u = order[p]
        s = g.succ[u]  # (S,), padded with N
        below = jnp.any(jnp.where((s < N)[:, None], reach[jnp.minimum(s, N - 1)], False),
                        axis=0)
        return reach.at[u].set(eye[u] | below), None

    reach, _ = lax.scan(step, jnp.zeros((N, N), bool), jnp.arange(N - 1, -1, -1))
    return reach


def blocks(spec: Spec, g: DeviceGraph, order: jnp.ndarray):
    """((N,) start, (N,) end) of the block holding each position of `order`, from
    the accelerator DP's traceback."""
    N, K = spec.N, spec.K
    _, ch = slice_one(spec, g, order, with_choice=True)
    n = g.n

    def back(i, st):
        j, t, starts = st
        c = ch[jnp.maximum(j - 1, 0), t]
        live = t > 0
        cut = live & (c != FEWER)
        starts = jnp.where(cut, starts.at[jnp.maximum(c, 0)].set(True), starts)
        t = jnp.where(cut, c, t)
        j = jnp.where(live, j - 1, j)
        return j, t, starts

    starts0 = jnp.zeros(N + 1, bool).at[0].set(True)
    _, _, starts = lax.fori_loop(0, 2 * K + 1, back,
                                 (jnp.minimum(g.k, K), n, starts0))
    pos = jnp.arange(N)
    start = lax.cummax(jnp.where(starts[:N], pos, 0))
    nxt = lax.cummin(jnp.where(starts[1:], pos, N - 1)[::-1])[::-1]  # next start - 1
    end = jnp.minimum(nxt, n - 1)
    return start, end


def moves(spec: Spec, g: DeviceGraph, order: jnp.ndarray, reach: jnp.ndarray):
    """((2N, N) float32 unit priorities of every move, (2N,) bool valid): row u moves
    unit u (with its descendants in its block) into the next block, row N + u (with
    its ancestors) into the previous one."""
    N = spec.N
    n = g.n
    pos = jnp.zeros(N, jnp.int32).at[order].set(jnp.arange(N, dtype=jnp.int32))
    start, end = blocks(spec, g, order)
    pu = pos  # (N,) position of each unit u
    s_u, e_u = start[pu], end[pu]
    pv = pos[None, :]  # (1, N) position of each unit v
    scale = 2 * N
    base = pv * scale
    real = jnp.arange(N) < n
    fwd_set = reach & (pv >= pu[:, None]) & (pv <= e_u[:, None])
    fwd = jnp.where(fwd_set, e_u[:, None] * scale + 1 + (pv - pu[:, None]), base)
    bwd_set = reach.T & (pv >= s_u[:, None]) & (pv <= pu[:, None])
    bwd = jnp.where(bwd_set, s_u[:, None] * scale - scale + 1 + (pv - s_u[:, None]), base)
    keys = jnp.concatenate([fwd, bwd])  # (2N, N)
    valid = jnp.concatenate([real & (e_u < n - 1), real & (s_u > 0)])
    return -keys.astype(jnp.float32), valid


def node_priorities(spec: Spec, g: DeviceGraph, U: jnp.ndarray) -> jnp.ndarray:
    """(..., width) node priorities giving every node its unit's priority ((..., N))."""
    if not spec.NX:
        return U
    lowest = jnp.finfo(U.dtype).min
    pad = jnp.concatenate([U, jnp.full(U.shape[:-1] + (1,), lowest, U.dtype)], axis=-1)
    return jnp.take(pad, g.unit_of, axis=-1)


def refine_one(spec: Spec, impl: str, steps: int, g: DeviceGraph, x: jnp.ndarray):
    """(x, f, moves applied) after `steps` rounds for one problem from its (width,)
    priorities x; f: the decoder cost of the returned x (the full DP)."""
    f = score(spec, g, x[None], impl=impl)[0]
    f = jnp.where(jnp.isnan(f), jnp.inf, f)

    def order_of(x):
        return kahn_one(spec, g, priority_keys(unit_priorities(spec, g, x[None])[0], g.n))

    reach = closure(spec, g, order_of(x))

    def rnd(st):
        x, f, applied, i, _ = st
        order = order_of(x)
        U, valid = moves(spec, g, order, reach)
        X = node_priorities(spec, g, U)
        c = score(spec, g, X, impl=impl)
        c = jnp.where(valid & ~jnp.isnan(c), c, jnp.inf)
        i = jnp.argmin(c)
        better = c[i] < f
        x = jnp.where(better, X[i], x)
        f = jnp.where(better, c[i], f)
        return x, f, applied + better.astype(jnp.int32), i + 1, better

    # a round without an improving move leaves the order as it was: later rounds
    # would repeat it, so the loop stops there (under vmap: when every problem has)
    x, f, applied, _, _ = lax.while_loop(lambda st: (st[3] < steps) & st[4], rnd,
                                         (x, f, jnp.int32(0), jnp.int32(0), True))
    return x, f, applied


@partial(jax.jit, static_argnames=("spec", "impl", "steps", "mesh"))
def refine_group(spec: Spec, impl: str, steps: int, graphs, X, *, mesh=None):
    """`refine_one` for a stack of G problems ((G, width) X): (X, F, applied), sharded
    over `mesh` (axis "prob") when given."""
    check_size(spec)
    body = jax.vmap(partial(refine_one, spec, impl, steps))
    if mesh is None:
        return body(graphs, X)
    from jax.sharding import PartitionSpec as PS

    prob = PS("prob")
    return jax.shard_map(body, mesh=mesh, in_specs=(prob,) * 2, out_specs=(prob,) * 3,
                         check_vma=False)(graphs, X)


def check_size(spec: Spec) -> None:
    if spec.N > MAX_UNITS:
        raise JaxplaceError(f"device refinement takes at most {MAX_UNITS} units, got "
                            f"{spec.N}", field="spec")


def refine(problems, X, *, steps: int, impl: str = "lanes", spec: Spec | None = None,
           mesh=None):
    """Refine each problem's priorities (a list of (n,) arrays): ((G, width) float32
    priorities, (G,) float32 decoder costs, (G,) moves applied). `spec`: the padded
    shape (default: the problems' merged one)."""
    spec, graphs = stack_graphs(problems, spec=spec)
    check_size(spec)
    G = len(problems)
    Xp = np.zeros((G, spec.width), np.float32)
    for i, x in enumerate(X):
        x = np.asarray(x, np.float32).ravel()[:spec.width]
        Xp[i, :len(x)] = x
    Xr, Fr, applied = refine_group(spec, impl, int(steps), graphs, jnp.asarray(Xp),
                                   mesh=mesh)
    return np.asarray(Xr), np.asarray(Fr), np.asarray(applied)


__all__ = ["MAX_UNITS", "blocks", "check_size", "closure", "moves", "node_priorities", "refine",
           "refine_group", "refine_one"]
