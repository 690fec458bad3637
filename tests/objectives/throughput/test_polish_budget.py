"""The default budget where the MIP polish follows (objective.POLISHED_BUDGET_SHARE)."""

import pytest

import jaxplace as jp
from jaxplace.generators import regal
from jaxplace.objectives.throughput.objective import (
    MANY_STAGES_FACTOR,
    MANY_STAGES_K,
    POLISHED_BUDGET_SHARE,
)
from jaxplace.objectives.throughput.polish import POLISH_MAX_NODES, polish_applies
from jaxplace.search.default import default_budget
from jaxplace.search.many.api import POPULATION


@pytest.mark.parametrize("n", [4, 40, 150, 300])
def test_polished_problems_get_a_share_of_the_budget(n):
    g = regal(3, n=n)
    polished, searched = jp.Problem(g, 4), jp.Problem(g, 8)
    assert polish_applies(polished) and not polish_applies(searched)
    full = default_budget(searched)
    assert default_budget(polished) == int(full * POLISHED_BUDGET_SHARE) < full
    # the one-problem bucket path (search_many's program) needs 3 populations
    assert default_budget(polished) >= 3 * POPULATION


def test_the_share_follows_the_polish_rule_and_not_a_time_limit():
    big = jp.Problem(regal(3, n=POLISH_MAX_NODES + 50), 4)
    assert not polish_applies(big)
    assert default_budget(big) == default_budget(jp.Problem(big.graph, 8))
    small = jp.Problem(regal(3, n=100), 4)
    # the user's seconds: the generic budget, whatever the polish
    assert default_budget(small, 5.0) == default_budget(jp.Problem(small.graph, 8), 5.0)


def test_polish_off_keeps_the_whole_budget_in_every_path(monkeypatch):
    """A caller who turns the polish off gets the full search budget: the share is
    what the polish replaces."""
    from dataclasses import replace

    from jaxplace.search import registry

    p = jp.Problem(regal(3, n=60), 4)
    full = default_budget(jp.Problem(p.graph, 8))
    assert default_budget(p, polish=False) == full
    assert default_budget(p, polish=True) == default_budget(p) < full
    m = registry.METHODS["default"]
    assert m.budget_for(p, polish=False) == full
    assert m.budget_for(p) == default_budget(p)

    class Seen(Exception):
        pass

    def run(req):
        raise Seen(req.budget)

    monkeypatch.setitem(registry.METHODS, "default", replace(m, run=run))
    for kw, want in (({"polish": False}, full), ({}, default_budget(p))):
        with pytest.raises(Seen) as e:
            jp.search(p, seed=0, **kw)
        assert e.value.args[0] == want


def test_search_many_asks_the_budget_with_its_polish_option(monkeypatch):
    from jaxplace.search import default

    asked = []
    real = default.default_budget

    def spy(problem, time_limit=None, polish=None):
        asked.append(polish)
        return real(problem, time_limit, polish=polish)

    monkeypatch.setattr(default, "default_budget", spy)
    p = jp.Problem(regal(3, n=30), 4)
    jp.search_many([p], seed=0, polish=False, exact=False, budget=None)
    assert asked and set(asked) == {False}


def test_many_stages_get_more_budget_up_to_the_generic_cap():
    g = regal(3, n=150)
    base = default_budget(jp.Problem(g, MANY_STAGES_K))
    assert default_budget(jp.Problem(g, MANY_STAGES_K + 1)) == MANY_STAGES_FACTOR * base
    assert default_budget(jp.Problem(g, 16)) == MANY_STAGES_FACTOR * base
    # big graphs keep the generic budget; a user's seconds: the generic budget
    big = regal(3, n=900)
    assert default_budget(jp.Problem(big, 16)) == 30_000
    assert default_budget(jp.Problem(g, 16), 5.0) == default_budget(jp.Problem(g, 8), 5.0)
