"""Distribution over priority vectors: independent per-node Gaussians, squashed to (0, 1).

A latent z_v ~ Normal(mean_v, exp(log_std_v)) per node. Kahn's order depends only on
the order of the priorities, and the logistic sigmoid is strictly increasing, so the
priorities x = sigmoid(z) that `sample_priorities` returns give exactly the order of
z. Keeping x in (0, 1) lets them mix with BRKGA's uniform random keys (crossover copies
genes between vectors; REGAL's coupling, Paliwal et al., ICLR 2020, where the GNN's
per-node distributions replace BRKGA's uniform sampling). The log-probability is the
exact Gaussian density of z, which is what training samples and differentiates, so
the score-function (REINFORCE) gradient is unbiased for the distribution sampled.

Means are bounded by the model (|mean| <= 4) and x is computed in float32, so distinct
z stay distinct after squashing (float32 spacing near sigmoid(4 + 3 std) is far below
the gaps of sampled z).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def sample_latent(key, mean, log_std, shape=()) -> jnp.ndarray:
    """(*shape, *mean.shape) float32 latent samples z = mean + std * eps."""
    eps = jax.random.normal(key, tuple(shape) + mean.shape, jnp.float32)
    return mean + jnp.exp(log_std) * eps


def node_log_prob(z, mean, log_std) -> jnp.ndarray:
    """Per-node Gaussian log-densities of z (shapes broadcast)."""
    u = (z - mean) * jnp.exp(-log_std)
    return -0.5 * u * u - log_std - LOG_SQRT_2PI


def log_prob(z, mean, log_std, mask) -> jnp.ndarray:
    """Exact log-density of z under the per-node Gaussians, summed over real nodes.

    Args:
        z: (..., N) latents; mean, log_std: (N,) (or broadcastable); mask: (N,) bool.

    Returns:
        (...,) float32 log p(z).
    """
    return jnp.sum(jnp.where(mask, node_log_prob(z, mean, log_std), 0.0), axis=-1)


def entropy(log_std, mask) -> jnp.ndarray:
    """() mean per-node differential entropy over real nodes."""
    h = log_std + 0.5 + LOG_SQRT_2PI
    return jnp.sum(jnp.where(mask, h, 0.0), -1) / jnp.maximum(jnp.sum(mask, -1), 1)


def squash(z) -> jnp.ndarray:
    """Priorities in (0, 1) with the same order as z."""
    return jax.nn.sigmoid(z)


def sample_priorities(dist, key, num: int) -> jnp.ndarray:
    """(num, n) float32 priority vectors drawn from `dist` (pure JAX, jittable).

    Args:
        dist: a mapping with "mean" and "log_std", each (n,) (NumPy or JAX), as
            returned by `node_distribution`.
        key: a JAX PRNG key.
        num: number of vectors (static).
    """
    mean = jnp.asarray(dist["mean"], jnp.float32)
    log_std = jnp.asarray(dist["log_std"], jnp.float32)
    return squash(sample_latent(key, mean, log_std, (num,)))


def greedy_priorities(dist) -> jnp.ndarray:
    """(n,) float32 priorities of the mode (every node at its mean)."""
    return squash(jnp.asarray(dist["mean"], jnp.float32))
