"""Search methods on the relaxation: "relax" and "relax+brkga".

- "relax": gradient descent on the surrogate (`jaxplace.relax.optimize`), then the
  soft solutions' priority vectors (expected stages at a few snapshots, stages sampled
  from the final distributions) decoded exactly by SliceGraph(Kahn(x)); the best is
  kept. `budget` counts decoder evaluations; the gradient steps (restarts x steps)
  are reported in `Result.info["gradient_steps"]`.
- "relax+brkga": "relax" with a share of the budget (RELAX_SHARE), then BRKGA
  (population 100) whose first population holds the best distinct relaxed vectors
  (BRKGA_SEEDS of them), for the rest of the budget.

Options (`jp.search(..., restarts=16, steps=100)`): any field of `RelaxConfig`,
`relax_share` and `brkga_seeds` (relax+brkga).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.relax.optimize import RelaxConfig, candidates, start_orders
from jaxplace.relax.surrogate import relax_graph
from jaxplace.search.driver import run_program
from jaxplace.search.programs import DecodeFitness, SearchData
from jaxplace.search.request import SearchRequest, finish

#: Decoder evaluations of "relax" unless asked otherwise (its registry entry reads it;
#: the other methods' default is `search.registry.DEFAULT_BUDGET`).
RELAX_BUDGET = 256
#: Share of the budget "relax+brkga" spends decoding relaxed vectors.
RELAX_SHARE = 0.05
#: Relaxed vectors (best first, distinct orders) put into BRKGA's first population.
BRKGA_SEEDS = 20
#: Candidates decoded per compiled step.
BATCH = 128


@dataclass(frozen=True)
class CandidatesProgram:
    """Scores the rows of X0, `batch` per step, in order (no search of its own); the
    carry keeps every cost: (X0, step, (rows,) costs)."""

    width: int
    batch: int
    fitness: Any

    init_steps = 0

    @property
    def evaluations_per_step(self) -> int:
        return self.batch

    def blank(self, data, key, X0):
        return X0, jnp.zeros((), jnp.int32), jnp.full(X0.shape[0], jnp.inf, jnp.float32)

    def step(self, data, carry, key):
        X0, i, F = carry
        X = jax.lax.dynamic_slice_in_dim(X0, i * self.batch, self.batch)
        f = self.fitness(data, X)
        F = jax.lax.dynamic_update_slice_in_dim(F, f.astype(F.dtype), i * self.batch, 0)
        return (X0, i + 1, F), X, f


#: Options of "relax+brkga" besides the RelaxConfig fields.
BRKGA_OPTIONS = ("relax_share", "brkga_seeds", "elite_fraction", "mutant_fraction", "rho")


def relax_config(options: dict, extra: tuple = ()) -> RelaxConfig:
    """A RelaxConfig from the search options; a JaxplaceError names an option that is
    neither one of its fields nor in `extra`."""
    names = [f.name for f in dataclasses.fields(RelaxConfig)]
    bad = sorted(set(options) - set(names) - set(extra))
    if bad:
        raise JaxplaceError(f"unknown option {bad[0]!r}; the relaxation takes "
                            f"{', '.join(names + list(extra))}", field="options")
    kw = {k: v for k, v in options.items() if k in names}
    for k in ("tau", "tau_max", "back", "width"):
        if k in kw:
            kw[k] = tuple(float(x) for x in kw[k])
    try:
        return RelaxConfig(**kw)
    except TypeError as e:
        raise JaxplaceError(str(e), field="options") from e


@dataclass
class Relaxed:
    """The decoded relaxation: best priorities, costs of every candidate."""

    X: np.ndarray  # (B, n) float32 candidate priorities
    f: np.ndarray  # (B,) float32 decoder costs (inf where not scored)
    best_x: np.ndarray
    best_f: float
    evaluations: int
    history: Any
    interrupted: bool
    info: dict


def run_relax(req: SearchRequest, budget: int, phase: str = "relax", pbar=None,
              extra: tuple = ()) -> Relaxed:
    """Optimize the surrogate and decode `budget` candidates (see the module doc)."""
    # the surrogate is the identical-device bottleneck: another model would be
    # searched under the wrong cost
    req.problem.objective_impl.require("identical_devices", field="method")
    problem, spec = req.problem, req.spec
    cfg = relax_config(req.options, extra)
    rg = relax_graph(problem)
    orders = start_orders(problem, cfg.restarts, rg.unit_of.shape[0], req.seed)
    X, metrics = candidates(rg, req.key, cfg, budget, orders=jnp.asarray(orders))
    X = np.asarray(X, np.float32)[:, :problem.n]
    B = len(X)
    batch = min(BATCH, B)
    steps = -(-B // batch)
    X0 = np.zeros((steps * batch, spec.width), np.float32)
    X0[:B, :problem.n] = X
    X0[B:] = X0[0]  # padding rows repeat the first candidate
    run = req.run(phase, pbar=pbar)
    out = run_program(CandidatesProgram(spec.width, batch, DecodeFitness(spec, req.window)),
                      SearchData(g=req.graph), jax.random.key(0), X0, steps, run,
                      chunk=steps)
    f = np.full(B, np.inf, np.float32)
    if out.carry is not None:
        f = np.asarray(out.carry[2], np.float32)[:B]
    soft = np.asarray(metrics["bottleneck"])[-1]
    info = {"gradient_steps": cfg.restarts * (cfg.steps // cfg.snapshots) * cfg.snapshots,
            "restarts": cfg.restarts, "relax_evaluations": min(out.evaluations, B),
            "soft_bottleneck": float(np.min(soft))}
    return Relaxed(X, f, out.best_x[:problem.n], out.best_f, min(out.evaluations, B),
                   out.history, out.interrupted, info)


def relax_search(req: SearchRequest):
    """The "relax" method (module doc)."""
    r = run_relax(req, req.budget)
    return finish(req, "relax", r.best_x, r.evaluations, r.history, r.interrupted,
                  info=r.info)


def distinct_best(X: np.ndarray, f: np.ndarray, count: int) -> np.ndarray:
    """Up to `count` rows of X, best cost first, with distinct priority orders."""
    out, seen = [], set()
    for i in np.argsort(f, kind="stable"):
        if not np.isfinite(f[i]):
            break
        key = np.argsort(-X[i], kind="stable").tobytes()
        if key in seen:
            continue
        seen.add(key)
        out.append(X[i])
        if len(out) >= count:
            break
    return np.asarray(out, np.float32).reshape(-1, X.shape[1])


def relax_brkga_search(req: SearchRequest):
    """The "relax+brkga" method (module doc)."""
    from jaxplace.search.methods import evolve

    opt = req.options
    share = float(opt.get("relax_share", RELAX_SHARE))
    n_relax = max(1, min(req.budget - 1, int(round(share * req.budget))))
    r = run_relax(req, n_relax, extra=BRKGA_OPTIONS)
    info = dict(r.info, relax_best=r.best_f)
    if r.interrupted or req.stop.reached(r.best_f):
        return finish(req, "relax+brkga", r.best_x, r.evaluations, r.history,
                      r.interrupted, info=info)
    seeds = distinct_best(r.X, r.f, int(opt.get("brkga_seeds", BRKGA_SEEDS)))
    brkga_opts = {k: v for k, v in opt.items() if k in BRKGA_OPTIONS[2:]}
    out = evolve(req, "BRKGA", budget=req.budget - r.evaluations, seeds=seeds,
                 phase="brkga", evaluations0=r.evaluations, options=brkga_opts)
    best_x, best_f = (r.best_x, r.best_f) if r.best_f <= out.best_f else (
        out.best_x[:req.problem.n], out.best_f)
    info["brkga_best"] = out.best_f
    return finish(req, "relax+brkga", best_x, r.evaluations + out.evaluations,
                  r.history.concat(out.history), out.interrupted, info=info)


__all__ = ["BATCH", "BRKGA_SEEDS", "RELAX_BUDGET", "RELAX_SHARE", "CandidatesProgram",
           "distinct_best", "relax_brkga_search", "relax_search", "run_relax"]
