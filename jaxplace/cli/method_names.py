"""A search method's name checked before the heavy imports: a typo costs no JAX start
and gets a "did you mean".

The names are the registry's own methods (`BUILTIN`, kept equal to
`jaxplace.search.METHODS` by a test) and evosax's algorithms, read from the text of
its registry files without importing evosax (which loads JAX); when that text cannot
be read, the check passes and the registry decides.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from pathlib import Path

from jaxplace.errors import JaxplaceError

#: `jaxplace.search.METHODS` besides the evosax algorithms.
BUILTIN = ("default", "random", "brkga", "mla", "mla-weighted", "dfs", "policy",
           "policy+brkga", "relax", "relax+brkga", "noncontiguous", "islands",
           "multilevel")

_EVOSAX_FILES = ("algorithms/distribution_based/__init__.py",
                 "algorithms/population_based/__init__.py")
_ENTRY = re.compile(r'^\s+"(\w+)":\s*\w+,\s*$', re.M)


def evosax_names() -> list[str] | None:
    """evosax's algorithm names from its registry files (None: not readable)."""
    try:
        spec = importlib.util.find_spec("evosax")
        root = Path(next(iter(spec.submodule_search_locations)))
        names = [n for f in _EVOSAX_FILES for n in _ENTRY.findall((root / f).read_text())]
    except (OSError, AttributeError, StopIteration, TypeError, ValueError):
        return None
    return names or None


def check_method(name: str | None, field: str = "--method") -> None:
    """A JaxplaceError naming the close matches when `name` is no search method."""
    if name is None:
        return
    key = name.strip().lower()
    if key in BUILTIN:
        return
    evo = evosax_names()
    if evo is None or key in {n.lower() for n in evo} or key == "brkga":
        return
    names = [*BUILTIN, *evo]
    close = difflib.get_close_matches(key, [n.lower() for n in names], n=3, cutoff=0.6)
    spelled = {n.lower(): n for n in names}
    hint = (f"did you mean {' or '.join(repr(spelled[c]) for c in close)}? "
            if close else "")
    raise JaxplaceError(f"unknown method {name!r}; {hint}built in: {', '.join(BUILTIN)}; "
                        f"also the evosax algorithms ({len(evo)}: {', '.join(evo[:4])}, "
                        "...)", field=field)


__all__ = ["BUILTIN", "check_method", "evosax_names"]
