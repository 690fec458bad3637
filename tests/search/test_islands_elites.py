"""The island engine's elite cache and the sparse kernel's bound inside it
(jaxplace/search/_islands.py): elites keep the fitness they were scored with, the
bounded sparse kernel (+inf above the worst elite) gives every problem a confirmed,
valid answer, deterministic, and never a best above the unbounded lanes run's start."""

from __future__ import annotations

import numpy as np
import pytest
from random_problems import random_problem

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL
from jaxplace.search._islands import IslandSettings, elites, island_search

SETTINGS = IslandSettings(islands=2, population=16, migrate_every=3, migrants=2)


def _problems():
    rng = np.random.default_rng(0)
    return [random_problem(rng, n, p=0.15, k=k, multi=True, params=True, memory=True)
            for n, k in ((12, 3), (14, 2))]


def test_elite_count_is_brkgas():
    from jaxplace.search.brkga import BRKGA

    for P, e in ((4, 0.2), (16, 0.2), (100, 0.25), (1024, 0.2), (7, 0.5)):
        s = IslandSettings(population=P, elite_fraction=e)
        algo = BRKGA(P, np.zeros(3, np.float32), e)
        assert elites(s) == int(algo.sizes(algo.default_params)[0])


@pytest.mark.heavy
def test_cached_elite_fitness_is_the_rescored_cost():
    """Every history value (a best elite's carried fitness) is the decoder's cost of a
    row; the final best's carried cost equals a fresh score of its priorities."""
    probs = _problems()
    rs = island_search(probs, generations=6, seed=2, settings=SETTINGS)
    for p, r in zip(probs, rs, strict=True):
        fresh = jp.evaluate(p, r.x[None], impl="lanes", window=None)[0]
        assert r.cost == np.float32(fresh) or np.isclose(r.cost, fresh, rtol=FLOAT32_RTOL)
        assert np.all(np.diff(r.history) <= 0)


def test_sparse_bounded_islands_are_valid_and_deterministic():
    probs = _problems()
    s = IslandSettings(islands=2, population=16, migrate_every=3, migrants=2, impl="sparse")
    a = island_search(probs, generations=3, seed=3, settings=s)
    b = island_search(probs, generations=3, seed=3, settings=s)
    for p, r, q in zip(probs, a, b, strict=True):
        assert np.isfinite(r.cost) and r.cost == q.cost and np.array_equal(r.x, q.x)
        want = jp.reference.evaluate_reference(p, r.x[None])[0]
        assert np.isclose(r.cost, want, rtol=FLOAT32_RTOL)
        assert np.all(np.diff(r.history) <= 0)
