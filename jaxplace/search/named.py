"""One search by a benchmark's method name: the names `jaxplace bench search`,
`jaxplace warmup --methods` and the experiments use for fixed settings of a method.

- "random-T": the best of T uniform priority vectors;
- "brkga-PxG": BRKGA with population P for G generations (budget P * G);
- an alias of `ALIASES` (the ICML 2024 table's names: "brkga-10000" is 100 x 100);
- any other name: a `jaxplace.search` method with its own defaults.
"""

from __future__ import annotations

import re

from jaxplace.search.api import search

#: the ICML 2024 table's names for our BRKGA settings
ALIASES = {"brkga-10000": "brkga-100x100", "brkga-100": "brkga-10x10"}


def search_named(problem, name: str, seed: int, **kw):
    """`search(problem, ...)` for the method called `name` (see the module doc), with
    seed `seed` and no progress bar; keywords such as `observer` or `time_limit` go to
    `search`."""
    name = ALIASES.get(name, name)
    if m := re.fullmatch(r"random-(\d+)", name):
        return search(problem, "random", budget=int(m[1]), seed=seed, progress=False, **kw)
    if m := re.fullmatch(r"brkga-(\d+)x(\d+)", name):
        P, G = int(m[1]), int(m[2])
        return search(problem, "brkga", budget=P * G, population_size=P, seed=seed,
                      progress=False, **kw)
    return search(problem, name, seed=seed, progress=False, **kw)


__all__ = ["ALIASES", "search_named"]
