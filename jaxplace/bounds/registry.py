"""The lower-bound ladder: every bound method by name, in ladder order.

`certify` runs the methods it is given in the order of `BOUNDS`, whatever order they
are given in. Adding a bound: write a module with a frozen dataclass that has a
`name`, a `kind` and `run(problem, context) -> MethodResult` (see `base`), and add one
entry below at its place in the ladder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from jaxplace.bounds.base import BoundMethod
from jaxplace.bounds.bottleneck import BottleneckBound
from jaxplace.bounds.exact import ExactBound
from jaxplace.bounds.guess import GuessBound
from jaxplace.bounds.simple import SimpleBound
from jaxplace.errors import JaxplaceError
from jaxplace.exact.bound import IdealsBound

#: name -> method, in ladder order (cheap first: the closed form, the LP relaxations,
#: then the MIPs; the exact MIP last, so it starts from the best bound proven before it)
BOUNDS: Mapping[str, BoundMethod] = MappingProxyType({m.name: m for m in (
    SimpleBound("simple"),
    IdealsBound("ideals"),  # exact DP over ideals: OPT over contiguous splits, CPUs too
    BottleneckBound("bottleneck-lp", "full", relax=True),
    BottleneckBound("bottleneck-no-dag-lp", "no-dag", relax=True),
    BottleneckBound("bottleneck-no-io-lp", "no-io", relax=True),
    GuessBound("bottleneck-guess-lp", relax=True),
    ExactBound("exact-lp", relax=True),
    BottleneckBound("bottleneck", "full"),
    BottleneckBound("bottleneck-no-dag", "no-dag"),
    BottleneckBound("bottleneck-no-io", "no-io"),
    GuessBound("bottleneck-guess"),
    ExactBound("exact"),
)})

METHODS = tuple(BOUNDS)  # in ladder order


def default_methods(problem, mips: tuple[str, ...] = ("bottleneck", "exact")) -> tuple:
    """The ladder worth running on `problem`: with CPU blocks or CPU-only ops the MIPs
    model nothing (they are skipped), so the DP over ideals (exact on DNN-like graphs;
    skipped after counting when the ideals exceed its limit) instead; otherwise the
    simple bound and `mips` (random DAGs have far too many ideals)."""
    hetero = problem.cpus > 0 or not bool(problem.supported.all())
    return ("simple", "ideals") if hetero else ("simple", *mips)
MIP_METHODS = tuple(name for name, m in BOUNDS.items() if m.kind == "mip")
DEFAULT_METHODS = ("simple", "bottleneck", "bottleneck-guess", "exact")


def check_method(name: str, bounds: Mapping[str, BoundMethod] = BOUNDS) -> None:
    """Raise JaxplaceError (field "methods") unless `name` is in `bounds`."""
    if name not in bounds:
        raise JaxplaceError(f"unknown method {name!r}; choose from {', '.join(bounds)}",
                            field="methods")


def ladder(methods: str | Iterable[str],
           bounds: Mapping[str, BoundMethod] = BOUNDS) -> list[str]:
    """The names in `methods` (a list or "a,b,c"), checked, in the order of `bounds`."""
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = list(methods)
    for m in methods:
        check_method(m, bounds)
    chosen = set(methods)
    return [name for name in bounds if name in chosen]
