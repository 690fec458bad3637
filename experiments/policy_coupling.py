"""A/B of policy-coupled search variants on the held-out REGAL-like set (issue 12).

    python experiments/policy_coupling.py VARIANTS BUDGET [COUNT] [SEED]

VARIANTS, comma-separated, the first is the yardstick of the ratios:
  brkga, policy+brkga, default            `jp.search` methods (default ignores BUDGET)
  default-b, default+policy               the default search at BUDGET, policy off / on
  pb[:P=..][:elite_fraction=..][:mutant_fraction=..][:rho=..]
                                          policy+brkga with other BRKGA settings
  cem[:P=..][:e=..][:a=..][:s=..]         a cross-entropy method in the policy's latent
                                          space: starts at the policy's Gaussians, moves
                                          mean and std towards the e best seen (rate a,
                                          std floor s) - per-instance adaptation of the
                                          policy's output (active-search style)
Rows go to /tmp/policy_coupling_BUDGET_SEED.json.
"""

import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.bench.policy import held_out_problems
from jaxplace.policy import greedy_priorities, load_policy
from jaxplace.search.api import _stop_rule
from jaxplace.search.driver import run_program
from jaxplace.search.policy import PolicyBRKGAProgram, _sample, padded_distribution
from jaxplace.search.programs import DecodeFitness, SearchData
from jaxplace.search.request import SearchRequest, finish


@dataclass(frozen=True)
class CEMProgram:
    width: int
    population: int
    fitness: Any
    elites: int = 10
    alpha: float = 0.3
    min_std: float = 0.05
    init_steps = 1

    @property
    def evaluations_per_step(self):
        return self.population

    def blank(self, data, key, X0):
        mu = jnp.asarray(data.dist["mean"])
        ls = jnp.asarray(data.dist["log_std"])
        Ez = jnp.zeros((self.elites, self.width))
        Ef = jnp.full((self.elites,), jnp.inf)
        return mu, jnp.exp(ls), Ez, Ef, X0, jnp.asarray(True)

    def step(self, data, carry, key):
        mu, sd, Ez, Ef, X0, first = carry
        z = mu + sd * jax.random.normal(key, (self.population, self.width))
        z0 = jnp.log(X0) - jnp.log1p(-X0)
        z = jnp.where(first, z0, z)
        X = jax.nn.sigmoid(z)
        f = self.fitness(data, X)
        f = jnp.where(jnp.isnan(f), jnp.inf, f)
        Z = jnp.concatenate([Ez, z])
        F = jnp.concatenate([Ef, f])
        idx = jnp.argsort(F)[: self.elites]
        Ez, Ef = Z[idx], F[idx]
        a = self.alpha
        mu = (1 - a) * mu + a * Ez.mean(0)
        sd = jnp.maximum((1 - a) * sd + a * Ez.std(0), self.min_std)
        return (mu, sd, Ez, Ef, X0, jnp.asarray(False)), X, f


def request(p, seed, budget):
    return SearchRequest(
        p,
        seed,
        budget,
        _stop_rule(p, None, None, None),
        None,
        False,
        None,
        None,
        {},
        time.perf_counter(),
        True,
    )


def run_variant(p, name, budget, seed):
    if name in ("brkga", "policy+brkga", "default"):
        kw = {} if name == "default" else {"budget": budget}
        m = None if name == "default" else name
        r = jp.search(p, m, seed=seed, progress=False, **kw)
        return r.cost, r.evaluations
    if name == "default+policy":
        r = jp.search(p, seed=seed, progress=False, budget=budget, use_policy=True)
        return r.cost, r.evaluations
    if name == "default-b":
        r = jp.search(p, seed=seed, progress=False, budget=budget, use_policy=False)
        return r.cost, r.evaluations
    req = request(p, seed, budget)
    dist = padded_distribution(req, load_policy(problem=req.problem))
    mode = np.asarray(greedy_priorities(dist), np.float32)
    fit = DecodeFitness(req.spec, req.window)
    k_init, k_run = jax.random.split(req.key)
    parts = name.split(":")
    kind, opts = parts[0], dict(kv.split("=") for kv in parts[1:])
    P = int(opts.pop("P", 100))
    X0 = np.array(_sample(dist, k_init, P), np.float32)
    X0[0] = mode
    if kind == "pb":
        prog = PolicyBRKGAProgram("BRKGA", P, req.spec.width, fit, ())
        params = prog.algo.default_params.replace(**{k: float(v) for k, v in opts.items()})
        data = SearchData(g=req.graph, dist=dist, params=params)
    elif kind == "cem":
        prog = CEMProgram(
            req.spec.width,
            P,
            fit,
            int(opts.get("e", 10)),
            float(opts.get("a", 0.3)),
            float(opts.get("s", 0.05)),
        )
        data = SearchData(g=req.graph, dist=dist)
    out = run_program(prog, data, k_run, X0, max(budget // P - 1, 0), req.run(name))
    r = finish(req, name, out.best_x, out.evaluations, out.history, out.interrupted)
    return r.cost, r.evaluations


if __name__ == "__main__":
    variants = sys.argv[1].split(",")
    budget = int(sys.argv[2])
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 12
    seed0 = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    probs = held_out_problems(count, seed0, regal_fraction=1.0)
    rows = []
    only = os.environ.get("ONLY")  # e.g. ONLY=11: just these problem indices
    for i, p in enumerate(probs):
        if only and str(i) not in only.split(","):
            continue
        for v in variants:
            t = time.perf_counter()
            c, e = run_variant(p, v, budget, seed0 + i)
            rows.append(dict(i=i, n=p.n, k=p.k, v=v, cost=c, evals=e, wall=time.perf_counter() - t))
        print(
            i,
            p.n,
            p.k,
            " ".join(f"{r['v']}={r['cost']:.4f}/{r['wall']:.1f}s" for r in rows[-len(variants) :]),
            flush=True,
        )
    json.dump(rows, open(f"/tmp/policy_coupling_{budget}_{seed0}.json", "w"))
    base = variants[0]
    for v in variants:
        for k in (4, 8, 16):
            a = [r["cost"] for r in rows if r["v"] == v and r["k"] == k]
            b = [r["cost"] for r in rows if r["v"] == base and r["k"] == k]
            g = np.exp(np.mean(np.log(np.array(a) / np.array(b))))
            print(f"{v:30s} k={k:2d} vs {base}: {g:.4f}")
        a = [r["cost"] for r in rows if r["v"] == v]
        b = [r["cost"] for r in rows if r["v"] == base]
        print(
            f"{v:30s} all  : {np.exp(np.mean(np.log(np.array(a) / np.array(b)))):.4f}  "
            f"wall {np.median([r['wall'] for r in rows if r['v'] == v]):.1f}"
        )
