"""Gradient descent on the surrogate: many restarts in one vmap, annealed in lax.scan.

Each restart holds logits (UP, K) per placement unit (`RelaxConfig.mode`). The loss
at step t is

    smooth_max_b(total_b / L, tau_max(t)) + back(t) * E[backward edges]
        + capacity_weight * sum_b excess_b / capacity

with the softmax temperature tau(t), the smooth-max temperature tau_max(t) and the
backward-edge weight back(t) annealed geometrically from their start to their end
values, so the soft assignments sharpen into an (almost) one-hot, acyclic one. Costs
are divided by the simple lower bound L, so the temperatures are relative.

Restart r starts from a contiguous split (cut at equal work) of a topological order
(`start_orders`: the DFS linearization, randomized DFS orders, Kahn orders of random
priorities), its logits peaked at the split plus noise; optax's Adam updates all
restarts at once. The start orders matter: restarts from depth-sorted orders only
got stuck in their start's basin.

`candidates` turns the soft solutions into priority vectors for the exact decoder:
the expected stage at a few snapshots of the descent, and stages sampled from the
final distributions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxplace.objectives.throughput.reference import kahn
from jaxplace.relax.surrogate import (
    RelaxGraph,
    backward_mass,
    expected_stage,
    smooth_max,
    soft_costs,
    stage_priorities,
    unit_log_probs,
)


@dataclass(frozen=True)
class RelaxConfig:
    """Static settings of the descent (hashable: a jit static argument).

    Attributes:
        restarts: independent descents (vmapped).
        steps: Adam steps per restart.
        snapshots: times the expected-stage priorities are recorded (evenly spaced,
            the last at the end).
        mode: "logits": free logits per unit and block at softmax temperature `tau`;
            "position": every unit has a real stage coordinate y and accelerator
            logits -(y - b - 1/2)^2 / (2 width^2) (a soft binning of a continuous
            order; worse on REGAL graphs in our runs). CPU blocks
            have free logits in both.
        lr: Adam learning rate.
        init_noise: std of the noise on the initial logits (stage units for y).
        init_sharpness: "logits" mode: initial logits -init_sharpness (b + 1/2 - y0)^2.
        tau: softmax temperature of free logits (start, end).
        width: "position" mode: binning width in stages (start, end).
        tau_max: smooth-max temperature relative to L (start, end).
        back: penalty per expected backward edge, relative to L (start, end).
        tau_overflow: softplus temperature of the overflow, relative to L.
        capacity_weight: penalty per unit of relative excess over the capacity.
    """

    restarts: int = 32
    steps: int = 400
    snapshots: int = 4
    mode: str = "logits"
    lr: float = 0.1
    init_noise: float = 0.1
    init_sharpness: float = 0.5
    tau: tuple[float, float] = (1.0, 0.2)
    width: tuple[float, float] = (0.5, 0.1)
    tau_max: tuple[float, float] = (0.1, 0.005)
    back: tuple[float, float] = (0.001, 1.0)
    tau_overflow: float = 0.02
    capacity_weight: float = 10.0


def _geo(pair, s):
    a, b = pair
    return a * (b / a) ** s


def unit_logits(rg: RelaxGraph, params, s, cfg: RelaxConfig):
    """(UP, K) logits (temperature applied) of one restart's params at schedule s:
    {"theta": (UP, K) free logits, "y": (UP,) stage coordinates}."""
    tau = _geo(cfg.tau, s)
    free = params["theta"] / tau
    if cfg.mode == "logits":
        return free
    w = _geo(cfg.width, s)
    c = jnp.arange(rg.K, dtype=free.dtype) + 0.5
    pos = -((params["y"][:, None] - c[None, :]) ** 2) / (2 * w * w)
    return jnp.where(rg.is_cpu[None, :], free, pos)


def node_probs(rg: RelaxGraph, params, s, cfg: RelaxConfig):
    """(log P, log(1 - P)), each (N, K), of one restart at schedule position s."""
    lp_u, l1_u = unit_log_probs(rg, unit_logits(rg, params, s, cfg))
    return lp_u[rg.unit_of], l1_u[rg.unit_of]


def loss_fn(rg: RelaxGraph, params, s, cfg: RelaxConfig):
    """(loss, metrics) of one restart's params at schedule position s in [0, 1]."""
    logp, log1mp = node_probs(rg, params, s, cfg)
    L = rg.scale
    c = soft_costs(rg, logp, log1mp, cfg.tau_overflow * L)
    bott = smooth_max(c["total"] / L, _geo(cfg.tau_max, s))
    back = backward_mass(rg, logp)
    cap = cfg.capacity_weight * jnp.sum(c["excess"]) / jnp.where(
        jnp.isinf(rg.capacity), 1.0, jnp.maximum(rg.capacity, 1e-30))
    loss = bott + _geo(cfg.back, s) * back + cap
    return loss, {"bottleneck": jnp.max(c["total"]), "backward": back, "loss": loss}


def depth_fractions(rg: RelaxGraph, key) -> jnp.ndarray:
    """(N,) work fraction before every node (its middle) in a random topological order:
    nodes sorted by depth plus uniform noise."""
    N = rg.unit_of.shape[0]
    real = jnp.arange(N) < rg.n
    key_ = jnp.where(real, rg.depth + 0.99 * jax.random.uniform(key, (N,)), jnp.inf)
    return order_fractions(rg, jnp.argsort(key_))


def order_fractions(rg: RelaxGraph, order) -> jnp.ndarray:
    """(N,) work fraction before every node (its middle) in `order` (N,), padding
    last; zero-work nodes still advance a little."""
    real = jnp.arange(rg.unit_of.shape[0]) < rg.n
    w = rg.work + 1e-6 * jnp.sum(rg.work) / rg.n * real
    cum = jnp.cumsum(w[order])
    return jnp.zeros_like(w).at[order].set((cum - 0.5 * w[order]) / cum[-1])


def initial_params(rg: RelaxGraph, key, frac, cfg: RelaxConfig):
    """A contiguous split of an order cut at equal work: y0 = k * frac (the work
    fraction before each node, (N,)), as stage coordinates ("position") or logits
    peaked there ("logits"), plus noise."""
    k_noise, k_y = jax.random.split(key)
    N = rg.unit_of.shape[0]
    UP = rg.allowed.shape[0]
    cnt = jnp.maximum(jax.ops.segment_sum(jnp.ones(N, frac.dtype), rg.unit_of, UP), 1)
    y0 = rg.k * jax.ops.segment_sum(frac, rg.unit_of, UP) / cnt  # (UP,) unit mean
    b = jnp.arange(rg.K, dtype=frac.dtype) + 0.5
    theta = -cfg.init_sharpness * (b[None, :] - y0[:, None]) ** 2
    theta = jnp.where(rg.is_cpu[None, :], -2.0, theta)
    if cfg.mode == "logits":
        theta = theta + cfg.init_noise * jax.random.normal(k_noise, theta.shape,
                                                           frac.dtype)
    y = y0 + cfg.init_noise * jax.random.normal(k_y, y0.shape, frac.dtype)
    return {"theta": theta, "y": y}


def start_orders(problem, count: int, N: int, seed: int = 0) -> np.ndarray:
    """(count, N) int32 topological orders to start restarts from (padding nodes
    last): the DFS linearization, randomized DFS orders (successors in random
    order: chains stay together) and Kahn orders of uniform random priorities,
    alternating."""
    from jaxplace.search.baselines import dfs_order

    g = problem.graph
    rng = np.random.default_rng(seed)
    out = np.tile(np.arange(N, dtype=np.int32), (count, 1))
    for r in range(count):
        if r == 0:
            o = dfs_order(g)
        elif r % 2:
            o = random_dfs_order(g, rng)
        else:
            o = kahn(g, rng.random(g.num_nodes))
        out[r, :g.num_nodes] = o
    return out


def random_dfs_order(graph, rng) -> np.ndarray:
    """(n,) reverse postorder of a DFS from the sources, sources and successors
    visited in random order (a topological order)."""
    n = graph.num_nodes
    ptr, idx = graph.succ_ptr, graph.succ_idx
    seen = np.zeros(n, bool)
    post = []
    for s in rng.permutation(np.flatnonzero(np.diff(graph.pred_ptr) == 0)):
        seen[s] = True
        stack = [(int(s), list(rng.permutation(np.array(idx[ptr[s]:ptr[s + 1]]))))]
        while stack:
            v, rest = stack[-1]
            while rest and seen[rest[-1]]:
                rest.pop()
            if rest:
                w = int(rest.pop())
                seen[w] = True
                stack.append((w, list(rng.permutation(np.array(idx[ptr[w]:ptr[w + 1]])))))
            else:
                post.append(v)
                stack.pop()
    return np.asarray(post[::-1], np.int64)


@partial(jax.jit, static_argnums=(2,))
def optimize(rg: RelaxGraph, key, cfg: RelaxConfig, orders=None):
    """Run `cfg.restarts` descents of `cfg.steps` Adam steps, restart r starting from
    `orders[r]` ((R, N) int32 topological orders, see `start_orders`; None: nodes
    sorted by depth with random ties).

    Returns:
        params: {"theta": (R, UP, K), "y": (R, UP)} final parameters.
        snaps: (S, R, N) float32 expected-stage priorities at the snapshots.
        metrics: dict of (steps, R) loss, bottleneck (float costs of the soft
            assignment) and backward (expected backward edges).
    """
    R, S = cfg.restarts, cfg.snapshots
    opt = optax.adam(cfg.lr)
    k_init, k_ord = jax.random.split(key)
    if orders is None:
        frac = jax.vmap(lambda k: depth_fractions(rg, k))(jax.random.split(k_ord, R))
    else:
        frac = jax.vmap(lambda o: order_fractions(rg, o))(orders)
    params = jax.vmap(lambda k, f: initial_params(rg, k, f, cfg))(
        jax.random.split(k_init, R), frac)
    state = opt.init(params)
    per = max(cfg.steps // S, 1)
    total = per * S
    grad = jax.vmap(jax.grad(loss_fn, argnums=1, has_aux=True), in_axes=(None, 0, None, None))

    def step(carry, t):
        params, state = carry
        s = t / jnp.maximum(total - 1, 1)
        g, m = grad(rg, params, s, cfg)
        upd, state = opt.update(g, state, params)
        return (optax.apply_updates(params, upd), state), m

    def snapshot(carry, i):
        carry, m = jax.lax.scan(step, carry, i * per + jnp.arange(per))
        s = ((i + 1) * per - 1) / jnp.maximum(total - 1, 1)
        return carry, (jax.vmap(lambda p: priorities(rg, p, s, cfg))(carry[0]), m)

    (params, _), (snaps, m) = jax.lax.scan(snapshot, (params, state), jnp.arange(S))
    m = jax.tree.map(lambda a: a.reshape(total, R), m)
    return params, snaps, m


def priorities(rg: RelaxGraph, params, s, cfg: RelaxConfig):
    """(N,) float32 priorities of one restart: its expected stage ("position" mode: an
    accelerator's stage is the coordinate y itself, clipped, so the order inside a
    stage follows y)."""
    logp, _ = node_probs(rg, params, s, cfg)
    if cfg.mode == "logits":
        return stage_priorities(rg, expected_stage(rg, logp))
    P = jnp.exp(logp)
    y = jnp.clip(params["y"] - 0.5, 0.0, rg.k - 1)[rg.unit_of]
    pos = jnp.where(rg.is_cpu, jnp.arange(rg.K, dtype=P.dtype), 0.0)
    stage = jnp.sum(P * pos, axis=1) + jnp.sum(jnp.where(rg.is_cpu, 0.0, P), axis=1) * y
    return stage_priorities(rg, stage)


@partial(jax.jit, static_argnums=(3, 4))
def sample_priorities(rg: RelaxGraph, key, params, num: int, cfg: RelaxConfig, temp=1.0):
    """(R, num, N) priorities of stages sampled per unit from each restart's final
    distribution, its logits divided by `temp` (the first sample: the argmax)."""
    def one(key, p):
        lp_u, _ = unit_log_probs(rg, unit_logits(rg, p, 1.0, cfg) / temp)
        g = jax.random.gumbel(key, (num,) + lp_u.shape, lp_u.dtype)
        g = g.at[0].set(0.0)
        stage_u = jnp.argmax(lp_u[None] + g, axis=-1)  # (num, UP)
        stage = stage_u[:, rg.unit_of].astype(lp_u.dtype)
        return jax.vmap(lambda st: stage_priorities(rg, st))(stage)

    R = params["y"].shape[0]
    return jax.vmap(one)(jax.random.split(key, R), params)


def candidates(rg: RelaxGraph, key, cfg: RelaxConfig, budget: int, temp=3.0,
               orders=None):
    """Optimize, then at most `budget` (>= 1) priority vectors, (B, N) float32, ordered
    so that any prefix mixes restarts: the final expected stages first, then earlier
    snapshots, then samples (logits / temp); and the descent's metrics."""
    k_opt, k_s = jax.random.split(key)
    params, snaps, m = optimize(rg, k_opt, cfg, orders)
    rows = [snaps[::-1].reshape(-1, snaps.shape[-1])]  # (S R, N), last snapshot first
    R, S = cfg.restarts, cfg.snapshots
    extra = -(-max(budget - R * S, 0) // R)
    if extra:
        smp = sample_priorities(rg, k_s, params, extra, cfg, temp)
        rows.append(jnp.swapaxes(smp, 0, 1).reshape(-1, smp.shape[-1]))
    return jnp.concatenate(rows)[:budget], m


__all__ = ["RelaxConfig", "candidates", "depth_fractions", "initial_params",
           "order_fractions", "random_dfs_order", "start_orders", "loss_fn", "node_probs",
           "optimize", "priorities", "sample_priorities", "unit_logits"]
