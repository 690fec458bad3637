"""The default budget where the MIP polish follows (objective.POLISHED_BUDGET_SHARE)."""

import pytest

import jaxplace as jp
from jaxplace.generators import regal
from jaxplace.objectives.throughput.objective import POLISHED_BUDGET_SHARE
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
