"""Search for good partitions: BRKGA, every evosax algorithm, local search, policies.

    import jaxplace as jp
    result = jp.search(problem)                       # the strong default
    result = jp.search(problem, method="brkga", budget=10_000, seed=0)
    result.cost, result.partition, result.priorities, result.history

`jp.search` is this package and is callable (it calls `search`). Layout:
`api.search` (the entry point), `registry.METHODS` (every method by name, each a
`Method` called with a `SearchRequest`), `stop` (`StopRule`, `Progress`), `driver`
(the compiled loop), `programs` (`Program` protocol, evosax / random / local-search
programs, `SearchData`, fitness callables), `default` (the default search), `methods`
(the basic methods: evosax algorithms, random, DFS, MLA), `policy` (methods driven by a
learned policy), `key_shift` (seeded BRKGA then local search on the keys, shared by the
latency and unequal-device searches), `baselines` (zero-shot orders, the slow random
reference), `deadline` (a call that answers by its deadline while XLA compiles),
`many` (`search_many`: many problems in few compiled programs).
"""

from __future__ import annotations

import sys
import types

from jaxplace.search.api import search
from jaxplace.search.brkga import BRKGA
from jaxplace.search.local import bottleneck_pool, shift_search
from jaxplace.search.named import search_named
from jaxplace.search.programs import algorithms
from jaxplace.search.registry import METHODS, Method, get_method
from jaxplace.search.request import SearchRequest
from jaxplace.search.result import History, Result
from jaxplace.search.stop import Progress, StopRule

#: Every evosax-style algorithm the driver can run, by name.
ALGORITHMS: dict[str, type] = algorithms()


class _CallableModule(types.ModuleType):
    """`jp.search(problem)` calls `search`; `jp.search.METHODS` reads this package."""

    def __call__(self, *args, **kwargs):
        return search(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = ["ALGORITHMS", "BRKGA", "METHODS", "History", "Method", "Progress", "Result",
           "SearchRequest", "StopRule", "bottleneck_pool", "get_method", "search",
           "search_named", "shift_search"]
