"""The basic search methods: evosax algorithms (BRKGA first), random, DFS, MLA.

Each is a function `run(req: SearchRequest) -> Result`, registered in
`jaxplace.search.registry.METHODS`.
"""

from __future__ import annotations

from dataclasses import replace

import jax

from jaxplace.search.baselines import dfs_order, order_to_priorities
from jaxplace.search.driver import LoopOutcome, run_program
from jaxplace.search.programs import (
    ArrangementFitness,
    EvosaxProgram,
    RandomProgram,
    SearchData,
    arrangement_edges,
)
from jaxplace.search.request import SearchRequest, finish, initial_population
from jaxplace.search.result import History

#: Population of the population methods unless asked otherwise.
DEFAULT_POPULATION = 100


def evolve(req: SearchRequest, name: str, *, budget: int | None = None,
           population: int | None = None, fitness=None, data: SearchData | None = None,
           seeds=None, phase: str | None = None, patience: int | None = None,
           chunk: int | None = None, pbar=None, evaluations0: int = 0,
           surrogate: bool = False, options: dict | None = None) -> LoopOutcome:
    """Evosax algorithm `name` for budget // population generations (driver outcome).

    `surrogate`: the fitness is not the partition cost (no target, no observer);
    `options`: algorithm keywords (default: the request's).
    """
    spec = req.spec
    P = population or req.population_size or DEFAULT_POPULATION
    options = tuple(sorted((req.options if options is None else options).items()))
    fitness = fitness or req.fitness
    program = EvosaxProgram(name, P, spec.width, fitness, options)
    if data is None:
        data = SearchData(g=req.graph)
    data = data.replace(params=program.algo.default_params)
    k_init, k_run = jax.random.split(req.key)
    X0 = initial_population(k_init, P, spec.width, req.seeds if seeds is None else seeds)
    steps = max((budget or req.budget) // P - 1, 0)
    run = req.run(phase or name, pbar=pbar, evaluations0=evaluations0)
    if surrogate:
        run.stop, run.observer, run.lb = replace(run.stop, target=None), None, None
    return run_program(program, data, k_run, X0, steps, run, chunk=chunk, patience=patience)


def evosax_method(name: str, label: str | None = None):
    """A method running evosax algorithm `name` on the decoder."""

    def run(req: SearchRequest):
        out = evolve(req, name, phase=label or name)
        return finish(req, label or name, out.best_x, out.evaluations, out.history,
                      out.interrupted)

    run.__name__ = f"run_{name}"
    return run


def random_search(req: SearchRequest):
    """Best of `budget` independent uniform priority vectors (random-T)."""
    spec, budget = req.spec, req.budget
    batch = -(-budget // -(-budget // 512))  # <= 512 per step, the budget in equal steps
    k_init, k_run = jax.random.split(req.key)
    X0 = initial_population(k_init, batch, spec.width, None)
    out = run_program(RandomProgram(spec.width, batch, req.fitness),
                      SearchData(g=req.graph), k_run, X0, (budget - batch) // batch,
                      req.run("random"))
    return finish(req, "random", out.best_x, out.evaluations, out.history, out.interrupted)


def dfs_search(req: SearchRequest):
    """The DFS linearization, sliced optimally once (Tarnawski et al.)."""
    x = order_to_priorities(dfs_order(req.problem.graph))
    return finish(req, "dfs", x, 1, History.empty(), False)


def arrangement_method(weighted: bool):
    """BRKGA on the (weighted) linear-arrangement cost, then one decode."""
    label = "mla-weighted" if weighted else "mla"

    def run(req: SearchRequest):
        spec = req.spec
        data = SearchData(g=req.graph, la=arrangement_edges(req.problem, weighted))
        out = evolve(req, "BRKGA", fitness=ArrangementFitness(spec), data=data,
                     phase=label, surrogate=True)
        # the arrangement cost is not the objective: no target, history of the surrogate
        return finish(req, label, out.best_x, out.evaluations + 1, out.history,
                      out.interrupted, info={"arrangement_cost": out.best_f})

    run.__name__ = f"run_{label.replace('-', '_')}"
    return run


__all__ = ["DEFAULT_POPULATION", "arrangement_method", "dfs_search", "evolve",
           "evosax_method", "random_search"]
