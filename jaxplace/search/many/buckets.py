"""Size classes of `search_many`: problems grouped into few padded shapes.

Each problem starts in the class of `search_spec` (units in 2 sizes per doubling, k
rounded up to a power of two) and its own block window (`bucket_window` of it
alone), so that a problem's padded shape, hence its search, is the same whatever
other problems share the call unless classes must be merged. While there are more
classes than `max_programs`, two are merged (the merged `Spec` is the elementwise
max: k stays a runtime value of the DP, the extra table rows unused): two of the
same window if any (the merged bucket keeps that window, so with the search's
width-independent random draws a problem's result stays what it is alone), the pair
whose merge adds the least padded work among them; only when every class has its
own window, two of different windows (the merged window is recomputed: the members'
results may then change with their batch mates).
A bucket compiles one program, so `max_programs` bounds the compiles of a run.

The padded work of a bucket is estimated as (problems) x N x (window or N) x K:
the decoder's DP is a scan over N positions, each looking back over the window,
for K table rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jaxplace.decoder.layout import Spec, graph_structure, search_spec
from jaxplace.decoder.window import WINDOW_MAX_FRACTION, block_bounds, needed_window
from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

#: Compiled programs (buckets) of a `search_many` call unless asked otherwise.
MAX_PROGRAMS = 8


@dataclass
class Bucket:
    """Problems (indices into the caller's list) padded to one `Spec`."""

    spec: Spec
    members: list[int] = field(default_factory=list)
    needs: list = field(default_factory=list)  # per member: needed window (None: full)
    sizes: list = field(default_factory=list)  # per member: units (len of bounds)
    #: (window,) every member has alone, kept through merges of equal windows; None
    #: after a merge of different ones (then recomputed over the merged shape)
    shared: tuple | None = None

    @property
    def window(self) -> int | None:
        if self.shared is not None:
            return self.shared[0]
        return bucket_window(self.spec, self.needs, self.sizes)

    def work(self) -> float:
        W = self.window or self.spec.N
        rows = self.spec.K if not self.spec.C else (self.spec.K + 1) * (self.spec.C + 1)
        return float(len(self.members)) * self.spec.N * W * rows

    def merged(self, other: Bucket) -> Bucket:
        same = self.shared is not None and self.shared == other.shared
        return Bucket(self.spec.merge(other.spec), self.members + other.members,
                      self.needs + other.needs, self.sizes + other.sizes,
                      self.shared if same else None)


def bucket_window(spec: Spec, needs: list, sizes: list) -> int | None:
    """One static window for every member: the largest needed, rounded up to a
    multiple of max(16, N / 8); None (the full DP) when a member needs the full DP
    or the window would exceed WINDOW_MAX_FRACTION of N."""
    if not needs or any(w is None for w in needs):
        return None
    step = max(16, spec.N // 8)
    L = -(-max(max(needs), 1) // step) * step
    if L > WINDOW_MAX_FRACTION * spec.N or any(L >= s for s in sizes):
        return None
    return L


def problem_class(problem: Problem, first_cost: float | None, structure=None
                  ) -> tuple[Spec, int | None, int]:
    """(padded Spec, needed window, units) of one problem."""
    st = structure or graph_structure(problem.graph)
    spec = search_spec(problem, st, 2)
    bounds = block_bounds(problem, st)
    return spec, needed_window(bounds, first_cost), len(bounds)


def plan_buckets(classes: list[tuple[Spec, int | None, int]],
                 max_programs: int = MAX_PROGRAMS) -> list[Bucket]:
    """Buckets of the problems whose `problem_class` are `classes` (see module doc);
    members in input order, buckets ordered by their first member."""
    if max_programs < 1:
        raise JaxplaceError("must be at least 1", field="max_programs")
    by_spec: dict[tuple, Bucket] = {}
    for i, (spec, need, size) in enumerate(classes):
        # a problem's class includes its own window, so that without merges its
        # bucket's shape (and so its search) does not depend on the other problems
        own = bucket_window(spec, [need], [size])
        b = by_spec.setdefault((spec, own), Bucket(spec, shared=(own,)))
        b.members.append(i)
        b.needs.append(need)
        b.sizes.append(size)
    buckets = list(by_spec.values())
    while len(buckets) > max_programs:
        best = None
        for a in range(len(buckets)):
            for b in range(a + 1, len(buckets)):
                m = buckets[a].merged(buckets[b])
                extra = (m.shared is None,
                         m.work() - buckets[a].work() - buckets[b].work())
                if best is None or extra < best[0]:
                    best = (extra, a, b, m)
        _, a, b, m = best
        buckets = [x for i, x in enumerate(buckets) if i not in (a, b)] + [m]
    for b in buckets:
        order = np.argsort(b.members, kind="stable")
        b.members = [b.members[i] for i in order]
        b.needs = [b.needs[i] for i in order]
        b.sizes = [b.sizes[i] for i in order]
    return sorted(buckets, key=lambda b: b.members[0])


__all__ = ["MAX_PROGRAMS", "Bucket", "bucket_window", "plan_buckets", "problem_class"]
