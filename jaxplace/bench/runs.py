"""What the bench commands share: one search by its bench name, and markdown tables."""

from __future__ import annotations

import re

#: the ICML 2024 table's names for our BRKGA settings
ALIASES = {"brkga-10000": "brkga-100x100", "brkga-100": "brkga-10x10"}


def run_method(problem, name: str, seed: int, **kw):
    """One search by bench name (keywords such as `observer` go to `search`): "random-T"
    (best of T uniform vectors), "brkga-PxG" (population P, G generations), an alias of
    `ALIASES`, or any `jaxplace.search` method name."""
    from jaxplace.search import search

    name = ALIASES.get(name, name)
    if m := re.fullmatch(r"random-(\d+)", name):
        return search(problem, "random", budget=int(m[1]), seed=seed, progress=False, **kw)
    if m := re.fullmatch(r"brkga-(\d+)x(\d+)", name):
        P, G = int(m[1]), int(m[2])
        return search(problem, "brkga", budget=P * G, population_size=P, seed=seed,
                      progress=False, **kw)
    return search(problem, name, seed=seed, progress=False, **kw)


def markdown_table(head, rows) -> str:
    """A markdown table with columns padded to their widest cell."""
    widths = [max(len(str(r[c])) for r in [head, *rows]) for c in range(len(head))]

    def fmt(r):
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    return "\n".join([fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|",
                      *map(fmt, rows)])
