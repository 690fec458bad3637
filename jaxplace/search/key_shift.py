"""The two phases shared by the latency and unequal-device default searches: BRKGA
with a seeded first population, then a (1 + batch) local search on the random keys
(`KeyShift`). Both score through `SearchRequest.fitness`, so they serve any objective
whose decoder is a priority vector."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.progress import bar

LOCAL_BATCH = 64
LOCAL_CHUNK = 8


@dataclass(frozen=True)
class KeyShift:
    """(1 + batch) local search on random keys: a candidate gives `moves` random ops
    (the first always, the others with probability 1/2) the key of another random op
    plus or minus a hair, so Kahn tends to emit them next to it; no-worse candidates
    replace the incumbent (plateau walks)."""

    width: int
    batch: int
    fitness: object
    moves: int = 3

    init_steps = 0

    @property
    def evaluations_per_step(self) -> int:
        return self.batch

    def blank(self, data, key, X0):
        return X0[0], jnp.asarray(jnp.inf, jnp.float32)

    def step(self, data, carry, key):
        x, fx = carry
        P, shape = self.batch, (self.batch, self.moves)
        k_v, k_u, k_s, k_on = jax.random.split(key, 4)
        n = data.nn
        v = jax.random.randint(k_v, shape, 0, n)
        u = jax.random.randint(k_u, shape, 0, n)
        hair = jnp.where(jax.random.bernoulli(k_s, 0.5, shape), 1e-6, -1e-6)
        on = jax.random.bernoulli(k_on, 0.5, shape).at[:, 0].set(True)
        X = jnp.broadcast_to(x, (P, self.width))
        rows = jnp.arange(P)[:, None]
        X = X.at[rows, v].set(jnp.where(on, x[u] + hair, X[rows, v]))
        X = X.at[0].set(jnp.where(jnp.isinf(fx), x, X[0]))  # first step: x itself
        f = self.fitness(data, X)
        i = jnp.argmin(f)
        take = f[i] <= fx
        return (jnp.where(take, X[i], x), jnp.where(take, f[i], fx)), X, f


def brkga_then_shift(req, seeds, *, budget_brkga: int, population: int, patience: int):
    """BRKGA (first population seeded), then the `KeyShift` local search on the rest of
    `req.budget`: the two phases shared by the latency and unequal-device defaults.

    Returns (best_x, best_f, evaluations, history, interrupted, info)."""
    from jaxplace.search.driver import run_program
    from jaxplace.search.methods import evolve
    from jaxplace.search.programs import SearchData

    opt = req.options
    with bar(req.budget, "default", enabled=req.progress) as pb:
        out1 = evolve(req, "BRKGA", budget=budget_brkga, population=population, options={},
                      seeds=seeds, patience=patience, phase="brkga", pbar=pb)
        evals, history = out1.evaluations, out1.history
        best_x, best_f, interrupted = out1.best_x, out1.best_f, out1.interrupted
        batch = opt.get("local_batch", LOCAL_BATCH)
        steps = (req.budget - evals) // batch
        if not (interrupted or req.stop.reached(best_f)) and steps >= LOCAL_CHUNK:
            program = KeyShift(req.spec.width, batch, req.fitness, opt.get("moves", 3))
            data = SearchData(g=req.graph, nn=jnp.asarray(req.problem.n, jnp.int32))
            X0 = np.asarray(best_x, np.float32)[None]
            out2 = run_program(program, data, jax.random.key(req.seed + 1), X0, steps,
                               req.run("local", pbar=pb, evaluations0=evals),
                               chunk=LOCAL_CHUNK, patience=patience)
            evals += out2.evaluations
            history = history.concat(out2.history)
            interrupted = out2.interrupted
            if out2.best_f < best_f:
                best_x, best_f = out2.best_x, out2.best_f
    info = {"brkga_best": out1.best_f, "search_best": best_f}
    return best_x, best_f, evals, history, interrupted, info


__all__ = ["KeyShift", "brkga_then_shift"]
