"""Island BRKGA (jaxplace/search/_islands.py) on the CPU at small sizes."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from host_devices import run_on_host_devices
from random_problems import random_problem

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL
from jaxplace.errors import JaxplaceError
from jaxplace.search._islands import IslandSettings, island_search

SETTINGS = IslandSettings(islands=3, population=16, migrate_every=3, migrants=2)


def _problems():
    rng = np.random.default_rng(0)
    return [random_problem(rng, n, p=0.15, k=k, multi=True, params=True, memory=True)
            for n, k in ((14, 3), (20, 4))]


def test_costs_history_and_grouping():
    probs = _problems()
    rs = island_search(probs, generations=6, seed=1, settings=SETTINGS)
    for p, r in zip(probs, rs, strict=True):
        assert r.x.shape == (p.n,) and r.evaluations == 3 * 16 * 7
        # the reported cost is the decoder's cost of the reported priorities
        want = jp.reference.evaluate_reference(p, r.x[None].astype(np.float32))[0]
        np.testing.assert_allclose(r.cost, want, rtol=FLOAT32_RTOL)
        # elitism: the best never gets worse; the history starts at the initial best
        assert len(r.history) == 7 and np.all(np.diff(r.history) <= 0)
        assert r.history[-1] == np.float32(r.cost)
    # one problem per call (other groups, other padding): the same results
    again = island_search(probs, generations=6, seed=1, settings=SETTINGS,
                          max_problems_per_call=1)
    for a, b in zip(rs, again, strict=True):
        assert a.cost == b.cost and np.array_equal(a.x, b.x)
    other = island_search(probs, generations=6, seed=2, settings=SETTINGS)
    assert any(not np.array_equal(a.x, b.x) for a, b in zip(rs, other, strict=True))


def test_bad_settings():
    with pytest.raises(JaxplaceError, match="migrants"):
        island_search(_problems(), settings=IslandSettings(population=8, migrants=5))
    with pytest.raises(JaxplaceError, match="no problems"):
        island_search([])


SCRIPT = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [TESTS, os.path.join(TESTS, "search")]
    import jax, numpy as np
    from test_islands import SETTINGS, _problems
    from jaxplace.search._islands import island_search
    assert len(jax.devices()) == 4
    probs = _problems() * 3  # 6 problems: padded to 8 over 4 devices
    one = island_search(probs, generations=3, seed=3, settings=SETTINGS,
                        devices=jax.devices()[:1])
    four = island_search(probs, generations=3, seed=3, settings=SETTINGS)
    for a, b in zip(one, four, strict=True):
        assert a.cost == b.cost and np.array_equal(a.x, b.x), (a.cost, b.cost)
        assert np.array_equal(a.history, b.history)
    print("OK")
""")


@pytest.mark.heavy
def test_four_host_devices_equal_one():
    run_on_host_devices(SCRIPT)
