"""The search methods by name: one registry, every method called the same way.

A `Method` wraps `run(req: SearchRequest) -> Result` with its default budget. To add
one, write the function (see methods.py) and add an entry here, or at run time
`METHODS["mine"] = Method("mine", run)` (`METHODS` is a `jaxplace.registry.Registry`:
`METHODS.register("mine", Method("mine", run))` refuses to replace a method).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from jaxplace.problem import Problem
from jaxplace.registry import Registry, load_path
from jaxplace.search.default import default_budget, default_search
from jaxplace.search.methods import (
    arrangement_method,
    dfs_search,
    evosax_method,
    random_search,
)
from jaxplace.search.programs import algorithms
from jaxplace.search.request import SearchRequest
from jaxplace.search.result import Result

#: Decoder evaluations of the population methods unless asked otherwise.
DEFAULT_BUDGET = 10_000


@dataclass(frozen=True)
class Method:
    """A search method: a name, `run(req) -> Result`, and its default budget."""

    name: str
    run: Callable[[SearchRequest], Result]
    default_budget: Callable[[Problem], int] | int = DEFAULT_BUDGET
    description: str = ""

    def budget_for(self, problem: Problem, time_limit: float | None = None,
                   polish: bool | None = None) -> int:
        """The default budget; `time_limit` (the user's seconds) and `polish` (the
        caller's polish option) reach a budget function that takes them
        (`default_budget`), the others get the problem only."""
        b = self.default_budget
        if not callable(b):
            return int(b)
        params = inspect.signature(b).parameters
        kw = {}
        if time_limit is not None and "time_limit" in params:
            kw["time_limit"] = time_limit
        if polish is not None and "polish" in params:
            kw["polish"] = polish
        return int(b(problem, **kw))


def _policy_method(name: str):
    def run(req: SearchRequest) -> Result:
        from jaxplace.search.policy import policy_search

        return policy_search(req, coupled=(name == "policy+brkga"))

    run.__name__ = f"run_{name.replace('+', '_')}"
    return run


def _lazy(target: str) -> Callable[[SearchRequest], Result]:
    """The run function "module:attribute", imported on its first call: methods that live
    in packages built on this one (relax/, exact/, multilevel/), or need HiGHS."""
    def run(req: SearchRequest) -> Result:
        return load_path(target)(req)

    run.__name__ = f"run_{target.partition(':')[2]}"
    return run


def _relax_budget(problem: Problem) -> int:
    """relax/ sits above this registry: its default budget is read by name."""
    return int(load_path("jaxplace.relax.search:RELAX_BUDGET"))


def _islands_budget(problem: Problem) -> int:
    """search_many's island mode sits above this registry: loaded by name."""
    return int(load_path("jaxplace.search.many.islands_method:default_islands_budget")(
        problem))


def _build() -> Registry:
    methods = {
        "default": Method("default", default_search, default_budget,
                          "the planner: an exact method where one fits, else BRKGA "
                          "then a batched local search on the order"),
        "random": Method("random", random_search, description="best of uniform vectors"),
        "brkga": Method("brkga", evosax_method("BRKGA", "brkga"),
                        description="biased random-key GA (Goncalves and Resende)"),
        "mla": Method("mla", arrangement_method(False),
                      description="BRKGA on the linear-arrangement cost"),
        "mla-weighted": Method("mla-weighted", arrangement_method(True),
                               description="BRKGA on the tensor-weighted arrangement"),
        "dfs": Method("dfs", dfs_search, 1, "DFS linearization sliced once"),
        "policy": Method("policy", _policy_method("policy"), 100,
                         "the shipped GNN policy: greedy plus samples"),
        "policy+brkga": Method("policy+brkga", _policy_method("policy+brkga"),
                               description="BRKGA seeded and mutated from the policy"),
        "relax": Method("relax", _lazy("jaxplace.relax.search:relax_search"), _relax_budget,
                        "gradient descent on a smooth surrogate, decoded exactly"),
        "relax+brkga": Method("relax+brkga", _lazy("jaxplace.relax.search:relax_brkga_search"),
                              description="BRKGA seeded with relaxed solutions"),
        "noncontiguous": Method("noncontiguous",
                                _lazy("jaxplace.exact.noncontiguous:noncontiguous_search"), 1,
                                "non-contiguous split by the IP of Tarnawski et al. "
                                "(HiGHS; virtual-device pipeline)"),
        "islands": Method("islands", _lazy("jaxplace.search.many.islands_method:islands_search"),
                          _islands_budget,
                          "island BRKGA sized to the device: several wide populations "
                          "with migration (search_many's mode 'islands')"),
        "multilevel": Method("multilevel", _lazy("jaxplace.multilevel.search:multilevel_search"), 1,
                             "coarsen, search the coarsest level, refine every level "
                             "(graphs of thousands of ops)"),
    }
    for name in algorithms():
        if name != "BRKGA":
            methods[name] = Method(name, evosax_method(name), description="evosax")
    return Registry("method", methods, field="method", casefold=True)


#: Every search method by name (`get_method` matches names case-insensitively).
METHODS: Registry = _build()


def get_method(name: str) -> Method:
    """The method called `name` (case-insensitive), or a JaxplaceError listing them
    and the close matches."""
    return METHODS.get(name)


__all__ = ["DEFAULT_BUDGET", "METHODS", "Method", "get_method"]
