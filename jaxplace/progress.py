"""Progress bars that show the best cost so far, on stderr, only on a terminal."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm


#: Plural words of the bars' units, written out ("1200/6000 evaluations", not "1.20keval").
UNIT_WORDS = {"eval": "evaluations", "s": "s", "graph": "graphs"}


def bar_format(total: int | None, unit: str) -> str:
    """tqdm's layout: the count with its unit in words, the total, the elapsed time
    and, with a total, the estimated time left."""
    words = UNIT_WORDS.get(unit, unit)
    if total:
        return ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + words +
                " [{elapsed}<{remaining}]{postfix}")
    return "{desc}: {n_fmt} " + words + " [{elapsed}]{postfix}"


def bar(total: int | None, desc: str, *, unit: str = "eval", enabled: bool | None = None):
    """A tqdm bar on stderr; `enabled=None` shows it only when stderr is a terminal."""
    disable = (not sys.stderr.isatty()) if enabled is None else not enabled
    return tqdm(total=total, desc=desc, unit=unit, disable=disable,
                file=sys.stderr, dynamic_ncols=True, leave=False,
                bar_format=bar_format(total, unit))


class ReportBar:
    """A tqdm bar on stderr fed `jaxplace.search.Progress` reports (`show`), with the
    ratio to `lower_bound`; only on a terminal (the CLI's Runner shows it while its
    worker runs)."""

    def __init__(self, desc: str, quiet: bool, lower_bound: float | None,
                 total: int | None = None):
        self.desc, self.quiet, self.lower_bound = desc, quiet, lower_bound
        self.total = total  # evaluations planned (None: unknown, no ETA)
        self.bar = None
        self.last = None

    def __enter__(self) -> ReportBar:
        if not self.quiet and self.desc and sys.stderr.isatty():
            self.bar = bar(self.total, self.desc, enabled=True)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def show(self, p) -> None:
        if self.bar is None or p is None or p is self.last:
            return
        self.last = p
        self.bar.n = int(getattr(p, "evaluations", 0))
        post = {"best": f"{p.best_cost:.6g}"}
        lb = self.lower_bound
        if lb:
            post["bound"] = f"{lb:.6g}"
            post["ratio"] = f"{p.best_cost / lb:.4f}"
        phase = getattr(p, "phase", None)
        if phase:  # the phase names the part of the search, e.g. "search (brkga)"
            self.bar.set_description_str(f"{self.desc} ({phase})", refresh=False)
        self.bar.set_postfix(post, refresh=False)
        self.bar.refresh()
