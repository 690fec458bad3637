"""search_many's compiled step: a group of one problem runs the step unbatched
(`program._many_chunk`), a wider group vmapped; both must give the same results."""

import numpy as np
from strategies import small_graph

import jaxplace as jp
from jaxplace.search.many import bucket_summary, search_many


def test_a_group_of_one_equals_the_vmapped_group():
    probs = [jp.Problem(small_graph(s, n), k) for s, n, k in ((0, 24, 4), (1, 30, 4),
                                                             (2, 28, 3))]
    kw = dict(exact=False, budget=600, polish=False, max_programs=1, seed=3)
    assert len(bucket_summary(probs, 1)) == 1
    alone = search_many(probs, group=1, **kw)
    together = search_many(probs, group=len(probs), **kw)
    for x, y in zip(alone, together, strict=True):
        assert np.array_equal(x.priorities, y.priorities) and x.cost == y.cost
        assert x.evaluations == y.evaluations
