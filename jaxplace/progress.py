"""Progress bars that show the best cost so far, on stderr, only on a terminal."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


def bar(total: int | None, desc: str, *, unit: str = "eval", enabled: bool | None = None):
    """A tqdm bar on stderr; `enabled=None` shows it only when stderr is a terminal."""
    disable = (not sys.stderr.isatty()) if enabled is None else not enabled
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=True, disable=disable,
                file=sys.stderr, dynamic_ncols=True, leave=False)
