"""Search methods driven by a learned priority policy (`jaxplace.policy`).

- "policy": the policy's mode (greedy) plus budget - 1 samples, best kept (one-shot
  priority sampling, Jeon et al., ICLR 2023).
- "policy+brkga": BRKGA whose first population is the mode plus samples and whose
  mutants are drawn from the policy instead of uniformly (REGAL's coupling, Paliwal
  et al., ICLR 2020). `budget` counts decoder evaluations in both methods.

Which policy a problem gets, the DFS anchor of "policy" and the heuristic orders in
"policy+brkga"'s first population (both on graphs with free units) are decided in
`jaxplace.policy.routing`; options `policy=PATH` (`--policy` on the command line),
`dfs_anchor` and `heuristic_seeds` override them, and `Result.info["dfs_anchor"]`
records a non-zero anchor. The policy's per-node distribution is computed once on the
host, padded to the decoder's width and passed in `SearchData.dist`, so the compiled
programs sample from it on device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.policy.routing import (
    DFS_ANCHOR,
    anchor_value,
    dfs_anchor_for,
    heuristic_seeds_apply,
)
from jaxplace.search.baselines import seed_priorities
from jaxplace.search.driver import run_program
from jaxplace.search.methods import DEFAULT_POPULATION
from jaxplace.search.programs import DecodeFitness, EvosaxProgram, SearchData
from jaxplace.search.request import SearchRequest, finish


def _sample(dist, key, num: int) -> jnp.ndarray:
    from jaxplace.policy import sample_priorities

    return sample_priorities(dist, key, num)


@dataclass(frozen=True)
class PolicySampleProgram:
    """`batch` samples of the policy per step; the first step also scores X0[0]."""

    width: int
    batch: int
    fitness: Any

    init_steps = 1

    @property
    def evaluations_per_step(self) -> int:
        return self.batch

    def blank(self, data, key, X0):
        return X0[0], jnp.asarray(True)

    def step(self, data, carry, key):
        x0, first = carry
        X = _sample(data.dist, key, self.batch)
        X = X.at[0].set(jnp.where(first, x0, X[0]))  # the mode, once
        return (x0, jnp.asarray(False)), X, self.fitness(data, X)


@dataclass(frozen=True)
class PolicyBRKGAProgram(EvosaxProgram):
    """BRKGA whose mutants are policy samples (rows [elites, elites + mutants))."""

    def step(self, data, carry, key):
        state, X0, first = carry
        k_ask, k_tell, k_init, k_mut = jax.random.split(key, 4)
        params = data.params
        X, asked = self.algo.ask(k_ask, state, params)
        ne, nm = self.algo.sizes(params)
        row = jnp.arange(self.population)[:, None]
        mutants = _sample(data.dist, k_mut, self.population)
        X = jnp.where((row >= ne) & (row < ne + nm), mutants, X)
        X = jnp.where(first, X0, X)
        f = self.fitness(data, X)
        told, _ = self.algo.tell(k_tell, X, f, asked, params)
        fresh = self._algo_init(k_init, X, jnp.where(jnp.isnan(f), jnp.inf, f), params)
        state = jax.tree.map(lambda a, b: jnp.where(first, a, b), fresh, told)
        return (state, X0, jnp.asarray(False)), X, f


def padded_distribution(req: SearchRequest, policy, anchor: float = 0.0) -> dict:
    """The loaded `policy`'s per-node distribution for req.problem, padded to the
    width (`anchor`: see `jaxplace.policy.node_distribution`)."""
    from jaxplace.policy import node_distribution

    dist = node_distribution(policy, req.problem, anchor)
    width, n = req.spec.width, req.problem.n
    out = {}
    for name, a in dist.items():
        p = np.zeros(width, np.float32)
        p[:n] = np.asarray(a, np.float32)[:n]
        out[name] = jnp.asarray(p)
    return out


def policy_label(req: SearchRequest, path) -> str:
    """What `Result.info["policy"]` records: the checkpoint path given, else the
    shipped policy's name (`jaxplace.policy.default_policy_name`)."""
    from jaxplace.policy import default_policy_name

    return str(path) if path is not None else default_policy_name(req.problem)


def policy_evolve(req: SearchRequest, *, budget: int, population: int, path=None,
                  seeds=None, phase: str = "policy+brkga", patience: int | None = None,
                  pbar=None, evaluations0: int = 0):
    """The coupled policy+BRKGA loop for `budget` evaluations (driver outcome): the
    first population is the policy's mode, `seeds` and policy samples; mutants are
    policy samples. Used by "policy+brkga" and by the default search's first phase."""
    from jaxplace.policy import greedy_priorities, load_policy

    dist = padded_distribution(req, load_policy(path, problem=req.problem))

    mode = np.asarray(greedy_priorities(dist), np.float32)
    P = population
    program = PolicyBRKGAProgram("BRKGA", P, req.spec.width, DecodeFitness(req.spec,
                                 req.window), ())
    k_init, k_run = jax.random.split(req.key)
    X0 = np.array(_sample(dist, k_init, P), np.float32)
    X0[0] = mode
    if seeds is not None and len(seeds):
        s = np.asarray(seeds, np.float32)[:P - 1]
        X0[1:1 + len(s), :s.shape[1]] = s
        X0[1:1 + len(s), s.shape[1]:] = 0.0
    data = SearchData(g=req.graph, dist=dist, params=program.algo.default_params)
    run = req.run(phase, pbar=pbar, evaluations0=evaluations0)
    return run_program(program, data, k_run, X0, max(budget // P - 1, 0), run,
                       patience=patience)


def _to_keys(x) -> np.ndarray:
    """Priorities mapped into (0, 1), BRKGA's key range, keeping their order and ties."""
    values, rank = np.unique(np.asarray(x), return_inverse=True)
    return ((rank + 1) / (len(values) + 1)).astype(np.float32)


def policy_search(req: SearchRequest, coupled: bool):
    """See the module doc. Options: `policy` (checkpoint path)."""
    opts = dict(req.options)
    path = opts.pop("policy", None)
    heuristic = opts.pop("heuristic_seeds", None)
    from jaxplace.policy import greedy_priorities, load_policy

    policy = load_policy(path, problem=req.problem)
    anchor = dfs_anchor_for(req.problem, opts.pop("dfs_anchor", None), coupled,
                            policy.config.dfs_anchor)
    dist = padded_distribution(req, policy, anchor)

    mode = np.asarray(greedy_priorities(dist), np.float32)
    spec, budget = req.spec, req.budget
    fitness = DecodeFitness(spec, req.window)
    k_init, k_run = jax.random.split(req.key)
    if coupled:
        label = "policy+brkga"
        P = req.population_size or DEFAULT_POPULATION
        program = PolicyBRKGAProgram("BRKGA", P, spec.width, fitness,
                                     tuple(sorted(opts.items())))
        X0 = np.array(_sample(dist, k_init, P), np.float32)
        X0[0] = mode
        rows = [] if req.seeds is None else list(req.seeds)
        if heuristic_seeds_apply(req.problem, heuristic):
            rows += [_to_keys(x) for x in seed_priorities(req.problem.graph)]
        if rows:
            rows = np.asarray(rows, np.float32)[:P - 1]
            X0[1:1 + len(rows), :req.problem.n] = rows
        data = SearchData(g=req.graph, dist=dist, params=program.algo.default_params)
        steps = max(budget // P - 1, 0)
    else:
        label = "policy"
        batch = max(1, min(budget, 512))
        batch = -(-budget // -(-budget // batch))  # the budget in equal steps
        program = PolicySampleProgram(spec.width, batch, fitness)
        X0, data = mode[None], SearchData(g=req.graph, dist=dist)
        steps = max(budget // batch - 1, 0)
    out = run_program(program, data, k_run, X0, steps, req.run(label))
    return finish(req, label, out.best_x, out.evaluations, out.history, out.interrupted,
                  info={"policy": policy_label(req, path),
                        **({"dfs_anchor": anchor} if anchor else {})})


__all__ = ["DFS_ANCHOR", "PolicyBRKGAProgram", "PolicySampleProgram", "anchor_value",
           "dfs_anchor_for", "heuristic_seeds_apply", "padded_distribution",
           "policy_evolve", "policy_label", "policy_search"]
