"""`search(problem, "islands")`: one problem through search_many's island mode
(`islands_mode`), as a method of the registry (`jaxplace.search.registry`)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.objectives.throughput.reference import decode_reference
from jaxplace.search._islands import IslandGroup, check_problems
from jaxplace.search.many.api import ManySettings, prepare, seed_result
from jaxplace.search.many.buckets import Bucket
from jaxplace.search.many.islands_mode import (
    ISLAND_OPTIONS,
    generations_of,
    island_budget,
    island_settings,
    run_group,
)
from jaxplace.search.result import Result


def islands_search(req) -> Result:
    """The request's budget, seed, time limit, target and cancel event;
    `population_size`: per island; options `islands`, `migrate_every`, `migrants`,
    `elite_fraction`, `mutant_fraction`, `rho`, `impl`, `refine_steps` (the device
    refinement's rounds on the best; default: the platform's). The first island starts from
    the better of the best heuristic order and the request's first seed row. No MIP
    polish (the default method has it)."""
    p = req.problem
    check_problems([p], field="problem")
    unknown = sorted(set(req.options) - set(ISLAND_OPTIONS))
    if unknown:
        raise JaxplaceError(f"unknown option(s) {', '.join(unknown)}; known: "
                            f"{', '.join(sorted(ISLAND_OPTIONS))}", field="options")
    opts = dict(req.options)
    if req.population_size is not None:
        opts["population"] = int(req.population_size)
    s = island_settings(opts)
    s = replace(s, window=req.window if s.impl in ("lanes", "auto") else None)
    m = prepare(p, 0, coupled=False)
    if req.seeds is not None and len(req.seeds):
        x = np.asarray(req.seeds[0], np.float32)[:p.n]
        f = float(decode_reference(p, x).cost)
        if f < m.f_seed:
            m.x_seed, m.f_seed = x, f
    target = req.stop.target if req.stop.target is not None else -np.inf
    group = IslandGroup(s.engine(), req.spec, [p], [0], req.seed,
                        [generations_of(req.budget, s)], seeds=[m.x_seed], targets=[target])
    group.refine_steps = s.refine_steps  # the device refinement (`run_group`)
    cancel = req.stop.cancel or threading.Event()
    settings = ManySettings(seed=req.seed, budget=req.budget,
                            time_limit=req.stop.time_limit, polish=False)
    deadline = None if req.stop.time_limit is None else req.start + req.stop.time_limit
    out = list(run_group(Bucket(req.spec, [0]), [m], group, settings, cancel, req.start,
                         deadline))
    res = out[0][1] if out else seed_result(m, req.start)  # empty: Ctrl-C at the start
    info = {k: v for k, v in res.info.items() if k != "bucket"}
    return replace(res, method="islands", info=info,
                   wall_time=time.perf_counter() - req.start)


def default_islands_budget(problem) -> int:
    """The method's default budget: the platform's island settings'."""
    return island_budget(problem, None, island_settings({}))


__all__ = ["default_islands_budget", "islands_search"]
