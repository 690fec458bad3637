"""Train the priority policy with REINFORCE against the batched decoder.

    python -m jaxplace.policy.train training/policy_regal.json [--steps N] [--out DIR]

Estimator (Williams 1992, as in REGAL, Paliwal et al. ICLR 2020): every step draws G
graphs from a fixed pool and P latent vectors per graph from the policy; the decoder
scores all G x P candidates in one compiled call (`score_graphs` on a common padded
`Spec`). The reward is scale-free, r = -log(cost / L) with L the simple lower bound
(cost capped at `ratio_cap` * L, which also covers infeasible candidates). Each sample's
advantage uses the mean and standard deviation of the *other* P - 1 samples of its
graph (leave-one-out): the baseline and the scale are then independent of the sample,
so per graph the expected update is a positive multiple of the exact policy gradient
(`loo_advantages`). Loss: -mean(adv * log p(z) / n) - entropy_coef * mean entropy,
plus a small penalty on the model's pre-squashing outputs, Adam with global-norm
clipping. With `ppo_epochs` E > 0 the policy-gradient term is PPO's clipped surrogate
(per-node ratios) and each batch of samples gets E updates, the first of them the
REINFORCE one.

The step loop runs in `lax.scan` chunks (`chunk` steps per compiled call); the host
only logs after each chunk (metrics to `metrics.jsonl`, a tqdm bar with step, mean
reward and validation ratio), checkpoints every `checkpoint_every` steps, saves on
Ctrl-C, and resumes from the last checkpoint in the output directory. Given the
config (with its seed), the run is deterministic, resumed or not.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.cost import simple_lower_bound
from jaxplace.objectives.throughput.reference import decode_reference, kahn
from jaxplace.policy import _checkpoint as ck
from jaxplace.policy import features as F
from jaxplace.policy.data import TRAIN_STREAM, VALID_STREAM, DataConfig, problem_set
from jaxplace.policy.distribution import entropy, log_prob, node_log_prob, sample_latent
from jaxplace.policy.model import ModelConfig, PolicyModel, pure_apply
from jaxplace.policy._solutions import load_solutions


@dataclass(frozen=True)
class TrainConfig:
    """A training recipe (JSON-serializable; see training/policy_regal.json).

    Attributes:
        name: the policy's name (the exported folder's default name).
        seed: seeds the data pool, the validation set, the model init and sampling.
        steps: total optimizer steps; chunk: steps per compiled `lax.scan` call.
        graphs, samples: G graphs per step, P samples per graph.
        pool: training problems generated once; validation: held-out problems.
        lr, warmup, lr_final: Adam learning rate, linear warmup steps, final fraction
            of the cosine decay.
        clip: global gradient-norm clip.
        entropy_coef, entropy_final: entropy bonus, decayed linearly to the final one.
            Off by default: Adam turns any small constant gradient into a full-speed
            drift, which drove log-stds to the top of their range and froze the
            policy in a trial run; the bounded log-std range is the entropy control.
        output_l2: penalty on the squared pre-squashing outputs per node, so the
            bounded mean and log-std maps stay out of saturation (where their
            gradients vanish and the policy stops learning).
        ratio_cap: costs above ratio_cap * L (and infeasible ones) count as this.
        imitation: weight of the self-imitation term (0: off). Each training problem
            keeps the latent of the best sample drawn for it so far (in the training
            state, so checkpoints resume it); the term pulls the policy's means towards
            it (squared distance in units of the current std, which is held fixed
            there, per node). REINFORCE alone moves the means slowly because 16
            samples per visit carry little signal; the memory accumulates the best of
            all visits. A biased auxiliary objective: the REINFORCE part stays the
            unbiased estimator it was.
        expert: optional path of search solutions of the training pool
            (`jaxplace.policy.experts`, same seed, pool and data); the self-imitation
            memory then starts at them (their latents in canonical form, their
            rewards), so the imitation term pulls the policy towards what a search
            found until its own samples do better. Needs imitation > 0.
        expert_labels: how a solution becomes the latent the policy imitates. "order"
            (default): the node at position i of its order gets a latent spread evenly
            by position, so the policy is asked for that one order among many of the
            same cost. "block": every node gets its block's level, scale *
            (1 - 2 (b + 1/2) / blocks), the same for every order that gives the same
            blocks; Kahn's order of such a latent keeps the blocks contiguous, so it
            slices at least as well as the solution. Block labels are fixed: sampled
            latents (not in block form) do not replace them, and REINFORCE alone has
            to do better than them.
        ppo_epochs: 0 for plain REINFORCE (one update per batch); E > 0 for PPO's
            clipped surrogate (Schulman et al. 2017), E updates on each batch of
            samples. The ratio is taken per node (the policy is a product of per-node
            Gaussians; the joint ratio of ~200 nodes leaves the clip range at once),
            so the first update is exactly the REINFORCE one and later ones reuse the
            samples (biased, as in every PPO). The learning-rate schedule then counts
            E updates per step.
        ppo_clip: the clip range epsilon of the per-node ratio.
        init: optional policy directory whose weights start the run (fine-tuning; same
            model config); the optimizer starts fresh.
        tie_probe: 0 keeps every pool problem; S > 0 scores S random orders (standard
            normal latents, the untrained policy's distribution) per pool problem and
            drops the problems where all S cost the same. Such problems (most DNN-like
            graphs: chains where every order slices alike) give zero advantage at every
            step, so only the output penalty acts on them and holds the policy at its
            prior there; dropping them spends the batch on problems with a signal. A
            problem whose S orders tie but some other order differs is dropped too.
        max_nodes, max_degree: the common padded shape (nodes, in/out degree); pool
            problems that do not fit are skipped (and counted in the log).
        checkpoint_every: steps between checkpoints (a multiple of chunk).
        validate_every: steps between validations (a multiple of chunk).
        val_samples: samples per validation graph for the best-of figure.
    """

    name: str = "gnn-v1"
    seed: int = 0
    steps: int = 3000
    chunk: int = 25
    graphs: int = 8
    samples: int = 32
    pool: int = 1024
    validation: int = 32
    lr: float = 3e-4
    warmup: int = 100
    lr_final: float = 0.1
    clip: float = 1.0
    entropy_coef: float = 0.0
    entropy_final: float = 0.0
    output_l2: float = 1e-3
    ratio_cap: float = 8.0
    imitation: float = 0.0
    expert: str | None = None
    expert_labels: str = "order"
    ppo_epochs: int = 0
    ppo_clip: float = 0.2
    init: str | None = None
    tie_probe: int = 0
    max_nodes: int = 200
    max_degree: int = 24
    checkpoint_every: int = 250
    validate_every: int = 250
    val_samples: int = 32
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)

    def to_json(self) -> dict:
        d = asdict(self)
        d["model"], d["data"] = self.model.to_json(), self.data.to_json()
        return d

    @classmethod
    def from_json(cls, d: dict) -> TrainConfig:
        d = dict(d)
        names = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - names)
        if bad:
            raise JaxplaceError(f"unknown training option {bad[0]!r}", field="config")
        imitation = d.get("imitation", 0.0)
        if isinstance(imitation, bool) or not isinstance(imitation, (int, float)) \
                or not math.isfinite(imitation) or imitation < 0:
            raise JaxplaceError(f"must be a non-negative number, got {imitation!r}",
                                field="imitation")
        expert = d.get("expert")
        if expert is not None and (not isinstance(expert, str) or not imitation):
            raise JaxplaceError("must be a file path, used with imitation > 0, got "
                                f"{expert!r}", field="expert")
        if d.get("expert_labels", "order") not in ("order", "block"):
            raise JaxplaceError(f"must be 'order' or 'block', got "
                                f"{d['expert_labels']!r}", field="expert_labels")
        epochs = d.get("ppo_epochs", 0)
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
            raise JaxplaceError(f"must be a non-negative integer, got {epochs!r}",
                                field="ppo_epochs")
        probe = d.get("tie_probe", 0)
        if isinstance(probe, bool) or not isinstance(probe, int) or probe < 0 or probe == 1:
            raise JaxplaceError(f"must be 0 or an integer >= 2, got {probe!r}",
                                field="tie_probe")
        init = d.get("init")
        if init is not None and not isinstance(init, str):
            raise JaxplaceError(f"must be a policy directory, got {init!r}", field="init")
        d["model"] = ModelConfig(**d.get("model", {}))
        d["data"] = DataConfig.from_json(d.get("data", {}))
        return cls(**d)


# -- estimator --------------------------------------------------------------------------


def rewards(costs, lb, ratio_cap: float):
    """(G, P) r = -log(min(cost / L, ratio_cap)); +inf (infeasible) counts as the cap."""
    ratio = jnp.where(jnp.isfinite(costs), costs / lb[:, None], ratio_cap)
    return -jnp.log(jnp.clip(ratio, 1e-6, ratio_cap))


def loo_advantages(r, normalize: bool = True, eps: float = 1e-3):
    """(G, P) advantages: r minus the mean of the other samples of the same graph,
    divided (with `normalize`) by their standard deviation + eps.

    The baseline and scale of sample i do not depend on sample i, so
    E[adv_i grad log p(z_i)] = E[1 / s_i] grad E[r]: unbiased up to a positive factor
    per graph (exactly unbiased without `normalize`).
    """
    P = r.shape[-1]
    tot = r.sum(-1, keepdims=True)
    base = (tot - r) / (P - 1)
    adv = r - base
    if not normalize:
        return adv
    sq = (r * r).sum(-1, keepdims=True)
    var = (sq - r * r) / (P - 1) - base * base
    return adv / (jnp.sqrt(jnp.maximum(var, 0.0)) + eps)


def imitation_loss(mean, log_std, target, mask):
    """() mean over graphs of the per-node squared distance of `target` (G, N) from
    the means in units of the (fixed) std: the mean-dependent part of -log p(target)."""
    u = (jax.lax.stop_gradient(target) - mean) * jnp.exp(-jax.lax.stop_gradient(log_std))
    n = jnp.maximum(mask.sum(-1), 1)
    return jnp.mean(jnp.sum(jnp.where(mask, 0.5 * u * u, 0.0), -1) / n)


def update_memory(memory, idx, z, r):
    """Keep, per pool problem, the latent of its best sample so far.

    memory: ((pool, N) latents, (pool,) rewards, -inf when never visited); idx: (G,)
    problems of this step; z: (G, P, N); r: (G, P). Returns (memory, (G, N) targets).
    """
    mz, mr = memory
    best = jnp.argmax(r, -1)
    bz, br = z[jnp.arange(z.shape[0]), best], r.max(-1)
    better = br > mr[idx]
    target = jnp.where(better[:, None], bz, mz[idx])
    return (mz.at[idx].set(target), mr.at[idx].set(jnp.maximum(br, mr[idx]))), target


def canonical_latents(problem, x, width: int, scale: float = 3.0) -> np.ndarray:
    """(width,) latent whose order is Kahn(x)'s: the node at position i of the order
    gets scale * (1 - 2 i / (n - 1)), evenly spread inside the model's mean range."""
    order = kahn(problem.graph, np.asarray(x, np.float64)[:problem.n])
    n = problem.n
    z = np.zeros(width, np.float32)
    z[order] = scale * (1.0 - 2.0 * np.arange(n) / max(n - 1, 1))
    return z


def block_latents(problem, x, width: int, scale: float = 3.0) -> np.ndarray:
    """(width,) latent that gives every node of block b of decode(x) the level
    scale * (1 - 2 (b + 1/2) / blocks): one label for all orders with these blocks."""
    part = decode_reference(problem, np.asarray(x, np.float64)[:problem.n])
    z = np.zeros(width, np.float32)
    z[:problem.n] = scale * (1.0 - 2.0 * (part.assignment + 0.5) / part.num_blocks)
    return z


def expert_memory(path, problems, indices, lb, width: int, ratio_cap: float,
                  labels: str = "order"):
    """Self-imitation memory (latents, rewards) started at the search solutions in
    `path` for the kept pool problems `indices` of the generated pool `problems`."""
    sol = load_solutions(path, len(problems))
    latents = block_latents if labels == "block" else canonical_latents
    z = np.stack([latents(problems[i], sol["x"][i], width) for i in indices])
    cost = np.asarray(sol["cost"], np.float64)[list(indices)]
    r = rewards(jnp.asarray(cost, jnp.float32)[:, None], jnp.asarray(lb), ratio_cap)[:, 0]
    return jnp.asarray(z), r.astype(jnp.float32)


def init_memory(pool_size: int, width: int):
    return (jnp.zeros((pool_size, width), jnp.float32),
            jnp.full((pool_size,), -jnp.inf, jnp.float32))


def ppo_surrogate(mean, log_std, z, adv, mask, lp_old, clip: float):
    """() PPO's clipped surrogate with per-node ratios, as a loss.

    lp_old: (G, P, N) per-node log-densities of z under the policy that sampled it.
    At mean, log_std equal to that policy's, the gradient is `surrogate`'s.
    """
    lp = node_log_prob(jax.lax.stop_gradient(z), mean[:, None], log_std[:, None])
    ratio = jnp.exp(lp - lp_old)
    a = jax.lax.stop_gradient(adv)[..., None]
    obj = jnp.minimum(ratio * a, jnp.clip(ratio, 1.0 - clip, 1.0 + clip) * a)
    n = jnp.maximum(mask.sum(-1), 1)[:, None]
    return -jnp.mean(jnp.sum(jnp.where(mask[:, None], obj, 0.0), -1) / n)


def surrogate(mean, log_std, z, adv, mask):
    """() loss whose gradient in (mean, log_std) is the REINFORCE estimate.

    mean, log_std: (G, N); z: (G, P, N) sampled latents; adv: (G, P); mask: (G, N).
    """
    lp = log_prob(jax.lax.stop_gradient(z), mean[:, None], log_std[:, None], mask[:, None])
    n = jnp.maximum(mask.sum(-1), 1)[:, None]
    return -jnp.mean(jax.lax.stop_gradient(adv) * lp / n)


# -- data on device -----------------------------------------------------------------------


def fits(problem, max_nodes: int, max_degree: int) -> bool:
    """Whether `problem` fits the training decoder: at most `max_nodes` nodes, the
    decoder's padded degrees (event slots and successors per unit, as `problem_spec`
    measures them; for plain graphs the in- and out-degrees) at most `max_degree`, at
    most one CPU block, every node supported on accelerators."""
    from jaxplace.decoder.layout import graph_structure

    g = problem.graph
    if g.num_nodes > max_nodes or problem.cpus > 1 or not bool(problem.supported.all()):
        return False
    st = graph_structure(g)
    return (int(np.diff(st["slot_ptr"]).max(initial=0)) <= max_degree
            and int(np.diff(st["succ_ptr"]).max(initial=0)) <= max_degree)


def training_spec(cfg: TrainConfig, problems):
    """The one decoder Spec every batch of this run uses (so the step compiles once):
    nodes and tensors up to `max_nodes`, degrees up to `max_degree`, k up to the top
    of `k_range`, parameter terms on, one CPU block when some problem has one (the
    others ask for none at run time), and placement units (colocation classes) when
    some problem has them: then the policy's node latents become unit priorities
    inside the decoder (`unit_priorities`, the max over each unit's members), as in
    the search methods, and plain problems are units of one node."""
    from jaxplace.decoder import Spec

    N = F.bucket(cfg.max_nodes, minimum=8)
    T = max(N, F.bucket(max(p.graph.num_tensors for p in problems), minimum=8))
    K = max([cfg.data.k_range[1], *(p.k for p in problems)])
    C = 1 if any(p.cpus for p in problems) else 0
    NX = 0 if all(p.graph.units.trivial for p in problems) else N
    return Spec(N=N, T=T, D=cfg.max_degree, S=cfg.max_degree, K=K, use_param=True, C=C,
                NX=NX)


def device_pool(problems, spec, sizes: F.Sizes, anchor: bool = False) -> dict:
    """Stacked padded model inputs (`anchor`: with DFS ranks), decoder graphs and
    lower bounds, on device."""
    from jaxplace.decoder import stack_graphs
    _, inputs = F.stack([F.featurize(p, anchor) for p in problems], sizes)
    _, graphs = stack_graphs(problems, spec=spec)
    lb = np.array([simple_lower_bound(p) for p in problems], np.float32)
    return {"inputs": jax.tree.map(jnp.asarray, inputs), "graphs": graphs,
            "lb": jnp.asarray(lb)}


def tied(spec, pool: dict, samples: int, key, chunk: int = 256) -> np.ndarray:
    """(pool,) bool: True where `samples` standard normal latents all give the same
    cost (relative spread below 1e-6; infeasible candidates count as +inf)."""
    from jaxplace.decoder import score_graphs

    n = int(pool["lb"].shape[0])
    scorer = jax.jit(lambda g, z: score_graphs(spec, g, z))
    out = []
    for i, lo in enumerate(range(0, n, chunk)):
        idx = jnp.minimum(jnp.arange(lo, lo + chunk), n - 1)  # one shape: one compile
        z = jax.random.normal(jax.random.fold_in(key, i), (chunk, samples, spec.width))
        c = np.asarray(scorer(_take(pool["graphs"], idx), z), np.float64)[:n - lo]
        out.append(np.isclose(c.max(-1), c.min(-1), rtol=1e-6, atol=0.0))  # inf == inf
    return np.concatenate(out) if out else np.zeros(0, bool)


def build_data(cfg: TrainConfig, problems=None):
    """(spec, sizes, train pool, validation pool, dropped count: pool problems that do
    not fit plus, with `tie_probe`, those that tie). `problems`: an optional
    (train, validation) pair of Problem lists replacing the generated ones."""
    if problems is None:
        train = problem_set(cfg.seed, cfg.pool, cfg.data, TRAIN_STREAM)
        val = problem_set(cfg.seed, cfg.validation, cfg.data, VALID_STREAM)
    else:
        train, val = (list(x) for x in problems)
    kept = [i for i, p in enumerate(train) if fits(p, cfg.max_nodes, cfg.max_degree)]
    keep = [train[i] for i in kept]
    val = [p for p in val if fits(p, cfg.max_nodes, cfg.max_degree)]
    spec = training_spec(cfg, keep + val)
    sizes = F.Sizes(spec.width, 1, 1, 1)
    for p in keep + val:
        sizes = sizes.merge(F.featurize(p).sizes)
    sizes = dataclasses.replace(sizes, N=spec.width)
    anchor = bool(cfg.model.dfs_anchor)
    pool = device_pool(keep, spec, sizes, anchor)
    if cfg.tie_probe:  # the validation set keeps its ties: it measures the task as given
        sel = np.flatnonzero(~tied(spec, pool, cfg.tie_probe,
                                   jax.random.fold_in(jax.random.key(cfg.seed), 0x7E5)))
        pool = _take(pool, jnp.asarray(sel))
        kept = [kept[i] for i in sel]
    if cfg.expert:  # host-side: train() takes it out before the compiled steps
        pool["expert"] = expert_memory(cfg.expert, train, kept, pool["lb"], spec.width,
                                       cfg.ratio_cap, cfg.expert_labels)
    return (spec, sizes, pool, device_pool(val, spec, sizes, anchor),
            len(train) - len(kept))


# -- compiled step ------------------------------------------------------------------------


def _schedule(cfg: TrainConfig):
    e = max(cfg.ppo_epochs, 1)  # optimizer updates per step
    decay = max(e * (cfg.steps - cfg.warmup), 1)
    return optax.warmup_cosine_decay_schedule(0.0, cfg.lr, max(e * cfg.warmup, 1),
                                              e * cfg.warmup + decay, cfg.lr * cfg.lr_final)


def make_optimizer(cfg: TrainConfig):
    return optax.chain(optax.clip_by_global_norm(cfg.clip), optax.adam(_schedule(cfg)))


def _take(tree, idx):
    return jax.tree.map(lambda a: a[idx], tree)


def make_train_chunk(graphdef, spec, optimizer, cfg: TrainConfig, length: int,
                     dp=None):
    """jit(state, pool) -> (state, metrics): `length` steps in one `lax.scan`.

    `dp` (a `distributed.DataParallel`, for runs over several processes) splits each
    step's graphs over its devices and sums their parameter gradients in one flat
    all-reduce."""
    from jaxplace.decoder import score_graphs

    apply = jax.vmap(pure_apply(graphdef, with_raw=True), in_axes=(None, 0))
    shard = (lambda x: x) if dp is None else dp.shard
    param_vjp = ((lambda p, inputs: jax.vjp(lambda q: apply(q, inputs), p)) if dp is None
                 else partial(dp.vjp, apply))
    G, P = cfg.graphs, cfg.samples
    fixed_labels = bool(cfg.expert) and cfg.expert_labels == "block"

    def step(pool, state, _):
        params, opt_state, kd, t, *memory = state
        key, k_idx, k_z = jax.random.split(jax.random.wrap_key_data(kd), 3)
        npool = pool["lb"].shape[0]
        idx = shard(jax.random.choice(k_idx, npool, (G,), replace=npool < G))
        inputs, graphs, lb = _take(pool["inputs"], idx), _take(pool["graphs"], idx), \
            pool["lb"][idx]
        mask = inputs["mask"]
        (mean, log_std, raw), vjp = param_vjp(params, inputs)
        z = shard(jnp.swapaxes(sample_latent(k_z, mean, log_std, (P,)), 0, 1))  # (G, P, N)
        costs = score_graphs(spec, graphs, z)
        r = rewards(costs, lb, cfg.ratio_cap)
        adv = loo_advantages(r)
        if memory and fixed_labels:
            target = memory[0][0][idx]
        elif memory:  # self-imitation (cfg.imitation > 0)
            memory[0], target = update_memory(memory[0], idx, z, r)
        frac = jnp.minimum(t / max(cfg.steps, 1), 1.0)
        coef = cfg.entropy_coef + (cfg.entropy_final - cfg.entropy_coef) * frac
        lp_old = (jax.lax.stop_gradient(node_log_prob(z, mean[:, None], log_std[:, None]))
                  if cfg.ppo_epochs else None)

        def loss(m, s, w):
            l2 = jnp.sum(jnp.where(mask[..., None], w * w, 0.0)) / jnp.sum(mask)
            pg = (ppo_surrogate(m, s, z, adv, mask, lp_old, cfg.ppo_clip)
                  if cfg.ppo_epochs else surrogate(m, s, z, adv, mask))
            out = pg - coef * jnp.mean(entropy(s, mask)) + cfg.output_l2 * l2
            if memory:
                out = out + cfg.imitation * imitation_loss(m, s, target, mask)
            return out

        def update(p, o, g):
            u, o = optimizer.update(g, o, p)
            return optax.apply_updates(p, u), o

        # the first update reuses the sampling forward pass (with PPO it is the
        # REINFORCE one); PPO's further epochs need a fresh forward each
        (grads,) = vjp(jax.grad(loss, argnums=(0, 1, 2))(mean, log_std, raw))
        params, opt_state = update(params, opt_state, grads)
        if cfg.ppo_epochs > 1:
            def grad(p):
                if dp is None:
                    return jax.grad(lambda q: loss(*apply(q, inputs)))(p)
                out, back = param_vjp(p, inputs)
                return back(jax.grad(loss, argnums=(0, 1, 2))(*out))[0]

            def epoch(carry, _):
                p, o = carry
                return update(p, o, grad(p)), None

            (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), None,
                                                  length=cfg.ppo_epochs - 1)
        grad_norm = optax.tree.norm(grads)
        metrics = {"reward": r.mean(), "best_reward": r.max(-1).mean(),
                   "entropy": jnp.mean(entropy(log_std, mask)),
                   "raw_rms": jnp.sqrt(jnp.sum(jnp.where(mask[..., None], raw * raw, 0.0))
                                       / (2 * jnp.sum(mask))),
                   "grad_norm": grad_norm,
                   "infeasible": jnp.mean(~jnp.isfinite(costs))}
        return (params, opt_state, jax.random.key_data(key), t + 1, *memory), metrics

    @jax.jit
    def run(state, pool):
        return jax.lax.scan(partial(step, pool), state, None, length=length)

    return run


def make_validate(graphdef, spec, samples: int):
    """jit(params, pool, key) -> (greedy ratios (V,), best-of-`samples` ratios (V,))."""
    from jaxplace.decoder import score_graphs

    apply = jax.vmap(pure_apply(graphdef), in_axes=(None, 0))

    @jax.jit
    def validate(params, pool, key):
        mean, log_std = apply(params, pool["inputs"])
        z = jnp.swapaxes(sample_latent(key, mean, log_std, (samples,)), 0, 1)
        X = jnp.concatenate([mean[:, None], z], axis=1)
        ratio = score_graphs(spec, pool["graphs"], X) / pool["lb"][:, None]
        return ratio[:, 0], ratio[:, 1:].min(-1)

    return validate


def _geomean(x) -> float:
    x = np.asarray(x, np.float64)
    return float(np.exp(np.mean(np.log(np.where(np.isfinite(x), x, 1e9)))))


# -- the loop -------------------------------------------------------------------------------


def _adds_attention(base: ModelConfig, model: ModelConfig) -> bool:
    """True when `model` is `base` plus global attention blocks."""
    return (base.attention_layers == 0 < model.attention_layers
            and replace(model, attention_layers=0, attention_heads=base.attention_heads)
            == base)


def init_state(cfg: TrainConfig, optimizer):
    """(graphdef, state): state = (params, optimizer state, key data, step)."""
    model = PolicyModel(cfg.model, nnx.Rngs(cfg.seed))
    graphdef, params = nnx.split(model)
    if cfg.init:
        config, loaded, _ = ck.read_policy(cfg.init)
        if replace(config, dfs_anchor=cfg.model.dfs_anchor) == cfg.model:
            params = loaded  # same weights; a new anchor only shifts the means
        elif _adds_attention(config, cfg.model):
            # the new attention blocks start as the identity, the rest as the init's
            pure = nnx.to_pure_dict(params)
            pure.update(nnx.to_pure_dict(loaded))
            nnx.replace_by_pure_dict(params, pure)
        else:
            raise JaxplaceError(f"has model {config}, the recipe asks for {cfg.model}",
                                source=cfg.init, field="init")
    key = jax.random.fold_in(jax.random.key(cfg.seed), 1)
    return graphdef, (params, optimizer.init(params), jax.random.key_data(key),
                      jnp.asarray(0, jnp.int32))


class MetricsLog:
    """Append-only JSONL metrics; on resume, lines after the resumed step are dropped
    (they came from a run that did not reach its next checkpoint)."""

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        self.wall = 0.0
        keep = []
        if path.exists() and resume_step > 0:
            for line in path.read_text().splitlines():
                d = json.loads(line)
                if d.get("step", 0) <= resume_step:
                    keep.append(line)
                    self.wall = max(self.wall, float(d.get("wall", 0.0)))
        path.write_text("".join(s + "\n" for s in keep))

    def write(self, record: dict) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")


def _resume(out: Path, cfg: TrainConfig, state):
    path = ck.latest_checkpoint(out)
    if path is None:
        return state, 0
    state = ck.load_train_state(path, state, cfg.to_json())
    params, opt, kd, t, *memory = state
    memory = jax.tree.map(jnp.asarray, memory)
    return (params, opt, jnp.asarray(kd), jnp.asarray(t, jnp.int32), *memory), int(t)


def _validate(validate, params, pool, cfg: TrainConfig) -> dict:
    key = jax.random.fold_in(jax.random.key(cfg.seed), 2)
    greedy, best = validate(params, pool, key)
    return {"val_greedy": _geomean(greedy), f"val_best{cfg.val_samples}": _geomean(best)}


def _export(out: Path, cfg: TrainConfig, params, step: int, wall: float,
            val: dict, export: Path | None) -> Path:
    meta = {"name": cfg.name, "steps": step, "wall_s": round(wall, 1), **val,
            "train_config": cfg.to_json()}
    target = export or out / "policy"
    ck.save_policy(target, cfg.model, params, meta)
    if export is not None and (out / "metrics.jsonl").exists():
        (target / "metrics.jsonl").write_text((out / "metrics.jsonl").read_text())
    return target


def _run_chunks(cfg, out, run, validate, state, pools, log, t0, bar, stop_at,
                primary: bool = True):
    """The chunk loop up to step `stop_at`; returns (state, last validation dict).
    Saves on Ctrl-C. Only the `primary` process validates, logs and saves."""
    train_pool, val_pool = pools
    val: dict = {}
    step = int(state[3])
    try:
        while step < stop_at:
            new, metrics = run(state, train_pool)
            metrics = {k: float(np.mean(v)) for k, v in jax.device_get(metrics).items()}
            state, step = new, int(new[3])
            rec = {"step": step, "wall": round(log.wall + time.perf_counter() - t0, 2),
                   **{k: round(v, 6) for k, v in metrics.items()}}
            if primary and (step % cfg.validate_every == 0 or step >= stop_at):
                val = _validate(validate, state[0], val_pool, cfg)
                rec.update({k: round(v, 6) for k, v in val.items()})
            log.write(rec)
            bar.update(cfg.chunk)
            bar.set_postfix(reward=f"{metrics['reward']:.4f}",
                            val=f"{val.get('val_greedy', float('nan')):.4f}")
            if primary and (step % cfg.checkpoint_every == 0 or step >= stop_at):
                ck.save_train_state(ck.checkpoint_path(out, step), state, cfg.to_json())
    except KeyboardInterrupt:
        if primary:
            ck.save_train_state(ck.checkpoint_path(out, step), state, cfg.to_json())
            print(f"\ninterrupted: saved step {step} to {out}", file=sys.stderr)
    return state, val


#: Nested recipe sections merged key by key when a recipe extends another.
_SECTIONS = ("model", "data")


def read_recipe(path, _seen: tuple = ()) -> dict:
    """A recipe file's options with its `extends` chain applied.

    A recipe may name another recipe file in `extends` (a path relative to its own
    folder); its options override those of that recipe, the `model` and `data`
    sections key by key. So recipes are a shared base plus small named overrides,
    and a fine-tune's recipe states only what differs from its parent's."""
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise JaxplaceError(f"cannot read training config ({e})", source=str(path),
                            field="config") from None
    if not isinstance(d, dict):
        raise JaxplaceError("must be a JSON object", source=str(path), field="config")
    parent = d.pop("extends", None)
    if parent is None:
        return d
    if not isinstance(parent, str):
        raise JaxplaceError(f"must be a recipe file path, got {parent!r}",
                            source=str(path), field="extends")
    target = (path.parent / parent).resolve()
    if target in _seen or target == path.resolve():
        raise JaxplaceError(f"recipes extend each other in a cycle ({parent})",
                            source=str(path), field="extends")
    merged = read_recipe(target, _seen + (path.resolve(),))
    for key, value in d.items():
        if key in _SECTIONS and isinstance(value, dict):
            merged[key] = {**merged.get(key, {}), **value}
        else:
            merged[key] = value
    return merged


def load_config(config) -> TrainConfig:
    """A TrainConfig from itself, a dict, or a JSON recipe file (`read_recipe`)."""
    if isinstance(config, TrainConfig):
        return config
    if isinstance(config, dict):
        return TrainConfig.from_json(config)
    path = Path(config)
    d = read_recipe(path)
    try:
        return TrainConfig.from_json(d)
    except JaxplaceError as e:
        raise e.with_source(str(path)) from None


def train(config, out=None, *, export=None, progress: bool | None = None,
          quiet: bool = False, problems=None, stop_at: int | None = None) -> Path:
    """Train (or resume) a policy; returns the exported policy directory.

    Args:
        config: a TrainConfig, its JSON dict, or a path to a JSON file.
        out: run directory for checkpoints and metrics.jsonl (default runs/<name>);
            an existing one is resumed from its last checkpoint.
        export: where to write the final policy (default <out>/policy).
        progress: tqdm bar (None: only on a terminal).
        quiet: no summary lines on stderr.
        problems: optional (train, validation) lists of Problems instead of the
            generated pool and validation set of `config.data`.
        stop_at: stop (checkpoint and export) after this step, a multiple of chunk,
            keeping the learning-rate schedule of `config.steps`; the result is the
            same as the full run's checkpoint at that step.

    Under `jax.distributed` with several processes (`jaxplace.policy.distributed`)
    every process calls this with the same arguments; each step's graphs are split
    over all their devices, and process 0 alone writes `out` and the export (the
    others return the export's path too).
    """
    from tqdm import tqdm

    from jaxplace.policy import distributed

    cfg = load_config(config)
    stop_at = cfg.steps if stop_at is None else min(int(stop_at), cfg.steps)
    if cfg.steps % cfg.chunk or cfg.checkpoint_every % cfg.chunk or \
            cfg.validate_every % cfg.chunk or stop_at % cfg.chunk:
        raise JaxplaceError("steps, stop_at, checkpoint_every and validate_every must "
                            "be multiples of chunk", field="config")
    if cfg.expert:  # a bad solution file stops the run before anything is written
        load_solutions(cfg.expert, cfg.pool if problems is None else len(problems[0]))
    dp = distributed.DataParallel.for_run(cfg.to_json())
    primary = dp is None or dp.primary
    optimizer = make_optimizer(cfg)
    graphdef, state = init_state(cfg, optimizer)  # so does a bad starting policy
    out = Path(out or Path("runs") / cfg.name)
    if primary:
        out.mkdir(parents=True, exist_ok=True)
        (out / "train_config.json").write_text(json.dumps(cfg.to_json(), indent=2) + "\n")
    t_data = time.perf_counter()
    spec, sizes, train_pool, val_pool, skipped = build_data(cfg, problems)
    if cfg.imitation > 0:
        memory = train_pool.pop("expert", None) or init_memory(
            int(train_pool["lb"].shape[0]), spec.width)
        state = (*state, memory)
    if primary:
        state, start = _resume(out, cfg, state)
    if dp is not None:  # process 0's (resumed) state everywhere, on the same pool
        state = dp.sync(state)
        start = int(state[3])
        dp.check_equal(train_pool, "pool")
    log = MetricsLog(out / "metrics.jsonl", start) if primary else distributed.NoLog()
    run = make_train_chunk(graphdef, spec, optimizer, cfg, cfg.chunk, dp)
    validate = make_validate(graphdef, spec, cfg.val_samples)
    if dp is not None:
        run, train_pool = dp.wrap(run), dp.replicate(train_pool)
    quiet = quiet or not primary
    if not quiet:
        print(f"{cfg.name}: {int(train_pool['lb'].shape[0])} training problems "
              f"({skipped} skipped{' or tied' if cfg.tie_probe else ''}), "
              f"{int(val_pool['lb'].shape[0])} validation, {spec}, "
              f"data {time.perf_counter() - t_data:.1f} s, from step {start}",
              file=sys.stderr)
    if start == 0 and primary:
        log.write({"step": 0, "wall": 0.0, **_validate(validate, state[0], val_pool, cfg)})
    t0 = time.perf_counter()
    disable = (not sys.stderr.isatty()) if progress is None else not progress
    disable = disable or not primary
    with tqdm(total=cfg.steps, desc=cfg.name, unit="step", disable=disable,
              file=sys.stderr, dynamic_ncols=True) as bar:
        bar.update(start)
        state, val = _run_chunks(cfg, out, run, validate, state, (train_pool, val_pool),
                                 log, t0, bar, stop_at, primary)
    wall = log.wall + time.perf_counter() - t0
    if dp is not None:
        dp.check_equal(state[0], "params")
    if not primary:
        return Path(export) if export else out / "policy"
    path = _export(out, cfg, state[0], int(state[3]), wall, val,
                   Path(export) if export else None)
    if not quiet:
        print(f"{cfg.name}: step {int(state[3])}, {wall:.0f} s, {val}, policy {path}",
              file=sys.stderr)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxplace.policy.train",
                                description="train the priority policy (a JSON recipe)")
    p.add_argument("config", help="training recipe, e.g. training/policy_regal.json")
    p.add_argument("--out", default=None, help="run directory (resumed if it exists)")
    p.add_argument("--export", default=None, help="policy directory to write at the end")
    p.add_argument("--steps", type=int, default=None, help="override the step count")
    p.add_argument("--stop-at", type=int, default=None,
                   help="stop after this step, keeping the schedule of the full run")
    args = p.parse_args(argv)
    try:
        cfg = load_config(args.config)
        if args.steps is not None:
            cfg = dataclasses.replace(cfg, steps=args.steps)
        train(cfg, args.out, export=args.export, stop_at=args.stop_at)
    except JaxplaceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
