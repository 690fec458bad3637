"""The lower-bound ladder: every bound method by name, in ladder order.

`certify` runs the methods it is given in the order of `BOUNDS`, whatever order they
are given in. Adding a bound: write a module with a frozen dataclass that has a
`name`, a `kind` and `run(problem, context) -> MethodResult` (see `base`), and add one
entry below at its place in the ladder. A rung defined above `bounds` in the import
layers (the DP over ideals and BB&R live in `jaxplace.exact`, which builds on `bounds`)
is a `Deferred` entry (a `jaxplace.registry.Lazy` one): its module loads on first use,
by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from jaxplace.bounds.base import BoundMethod
from jaxplace.bounds.bottleneck import BottleneckBound
from jaxplace.bounds.bottleneck_guess import GuessBound
from jaxplace.bounds.cover import CoverBound
from jaxplace.bounds.exact import ExactBound
from jaxplace.bounds.simple import SimpleBound
from jaxplace.bounds.station import MAX_NODES as STATION_MAX_NODES
from jaxplace.bounds.station import StationBound
from jaxplace.bounds._station_check import GuessCheckBound
from jaxplace.errors import JaxplaceError
from jaxplace.registry import Lazy, Registry, RegistryView, load_path


@dataclass(frozen=True)
class Deferred(Lazy):
    """A rung whose class lives in a later import layer: `path` ("module:Class") is
    loaded and called with `name` on first use. `kind` is declared here so that listing
    the rungs by kind (`MIP_METHODS`) loads nothing; the loaded rung must agree."""

    name: str
    kind: str

    def load(self) -> BoundMethod:
        method = load_path(self.path)(self.name)
        if method.kind != self.kind:
            raise TypeError(f"{self.path} is a {method.kind!r} rung, registered as "
                            f"{self.kind!r}")
        return method


class Ladder(RegistryView):
    """name -> `BoundMethod` in ladder order, read-only (a `jaxplace.registry` view);
    `Deferred` entries load on first access (iterating the items loads them all)."""

    def __init__(self, methods: Iterable[BoundMethod | Deferred]):
        super().__init__(Registry("method", ((m.name, m) for m in methods),
                                  field="methods"))

    def kind(self, name: str) -> str:
        """The rung's kind, without loading a deferred one."""
        return self.entry(name).kind


#: name -> method, in ladder order (cheap first: the closed form, the LP relaxations,
#: then the MIPs; the exact MIP last, so it starts from the best bound proven before it)
BOUNDS: Ladder = Ladder((
    SimpleBound("simple"),
    StationBound("station"),  # station windows of a guessed T, no solver
    # forced crossings of a guessed T (exact/bbr/cross.py): a closed form in about a
    # second at 200-2,000 ops; at k = 8-16 on REGAL-like graphs above the 60 s bottleneck
    # MIP
    Deferred("jaxplace.exact.bbr:CrossBound", "cross", "closed-form"),
    # exact DP over ideals: OPT over contiguous splits, CPUs too
    Deferred("jaxplace.exact.bound:IdealsBound", "ideals", "dp"),
    BottleneckBound("bottleneck-lp", "full", relax=True),
    BottleneckBound("bottleneck-no-dag-lp", "no-dag", relax=True),
    BottleneckBound("bottleneck-no-io-lp", "no-io", relax=True),
    GuessBound("bottleneck-guess-lp", relax=True),
    GuessCheckBound("station-check-lp", relax=True),  # guess and check, LP checks
    ExactBound("exact-lp", relax=True),
    # guess and check climbs from the bound before it: from the simple bound its cheap
    # refutations find the hard region (REGAL-like, k = 4: 0.9466 LB/UB alone in 60 s,
    # 0.9370 after the bottleneck MIP); the bottleneck MIP does not use earlier bounds
    GuessCheckBound("station-check"),  # guess and check, feasibility MIPs
    BottleneckBound("bottleneck", "full"),
    BottleneckBound("bottleneck-no-dag", "no-dag"),
    BottleneckBound("bottleneck-no-io", "no-io"),
    GuessBound("bottleneck-guess"),
    CoverBound("cover"),  # column generation over convex blocks, binary search on z
    # branch, bound and remember over ideals (guess and check on T, no solver): climbs
    # from the best bound so far and tries to prove the best partition optimal
    Deferred("jaxplace.exact.bbr:BbrBound", "bbr", "dp"),
    ExactBound("exact"),
))

METHODS = tuple(BOUNDS)  # in ladder order


#: `choose_methods` takes the DP over ideals when it has at most this many ideals (it
#: then proves the optimum in seconds: Inception-v3 inference, 36,596 ideals, ~16 s;
#: the MIPs take minutes on such graphs), else the MIP ladder.
PICK_IDEALS = 60_000

#: `choose_methods` adds BB&R (`bbr`) up to this many nodes: past the DP's size it proved
#: 40-node DAGs optimal up to k = 16 and closed 60-node ones to 1.001-1.31, but on REGAL-like
#: graphs of 79-186 nodes it added nothing to the MIP rungs in 60 s while taking its share of
#: a `--certify --time-limit`; by name it runs at any size.
BBR_MAX_NODES = 64
#: ... and on narrow graphs (the widest layer of equal depth at most BBR_MAX_WIDTH atoms)
#: up to BBR_NARROW_MAX_NODES: DNN-like graphs past the DP's count, where its bound beat
#: the MIPs' (Inception v2 from ONNX, 371 ops, width 4, k = 16 in 60 s: 0.984 of the
#: optimum against 0.946); the REGAL-like graphs above have layers of 17-55 atoms.
BBR_MAX_WIDTH = 8
BBR_NARROW_MAX_NODES = 2_000

#: The methods that model CPU blocks and CPU-only ops (the others report bound 0).
CPU_BLOCK_METHODS = ("simple", "ideals", "exact-lp", "bbr", "exact")

#: `choose_methods` adds guess and check (`station-check`) up to this many blocks: on
#: REGAL-like graphs (n = 79-186, 60 s) it beat the bottleneck and exact MIPs on 2 of 3
#: graphs at k = 4; at k = 8 it raised the best bound in 1 of 9 runs (the bottleneck
#: MIP's, when that was weak); at k = 16 it did not get through its root LP in time.
CHECK_MAX_K = 4


def choose_methods(problem, mips: tuple[str, ...] = ("bottleneck", "exact"), *,
                   deadline: float | None = None) -> tuple[tuple[str, ...], str]:
    """The ladder that proves `problem` optimal fastest, and why (one line).

    The DP over ideals when the graph has at most PICK_IDEALS of them (DNN-like graphs;
    it is exact, so its bound is the optimum); otherwise the simple bound, the station
    bound (no solver), the forced crossings (`cross`), `mips`, for k <= CHECK_MAX_K
    guess and check (random DAGs have far too many ideals), and BB&R over ideals
    (`bbr`, up to BBR_MAX_NODES nodes, or BBR_NARROW_MAX_NODES on narrow graphs:
    `_bbr_fits`), keeping, with CPU blocks or CPU-only ops, only
    the simple bound and the methods that model them (the exact MIP and BB&R, by
    default).

    `deadline` (a perf_counter time; given only under a user's time limit): a count of
    ideals not finished by then counts as "more than PICK_IDEALS".
    """
    count = load_path("jaxplace.exact.dp:count_problem_ideals")(problem, PICK_IDEALS,
                                                            deadline=deadline)
    if count is not None:
        return ("simple", "ideals"), f"{count:,} ideals: the DP over ideals"
    typed = problem.cpus > 0 or not bool(problem.supported.all())
    bbr = ("bbr",) if _bbr_fits(problem) else ()
    if typed:
        mips = tuple(m for m in mips if m in CPU_BLOCK_METHODS) or ("exact",)
        return (tuple(ladder(("simple", *mips, *bbr))),
                f"more than {PICK_IDEALS:,} ideals: the MIP ladder")
    return (tuple(ladder(("simple", "station", "cross", *mips, *_checks(problem), *bbr)))
            if problem.n <= STATION_MAX_NODES else ("simple", "cross", *mips),
            f"more than {PICK_IDEALS:,} ideals: the MIP ladder" + (" and BB&R" if bbr else ""))


def _bbr_fits(problem) -> bool:
    """BB&R joins the picked ladder (see BBR_MAX_NODES, BBR_MAX_WIDTH)."""
    if problem.n <= BBR_MAX_NODES:
        return True
    if problem.n > BBR_NARROW_MAX_NODES:
        return False
    atoms = load_path("jaxplace.exact.atoms:build_atoms")(problem)
    return load_path("jaxplace.exact.lattice:widest_layer")(atoms) <= BBR_MAX_WIDTH


def _checks(problem) -> tuple[str, ...]:
    """Guess and check where its feasibility MIPs get past their root in seconds."""
    return ("station-check",) if problem.k <= CHECK_MAX_K else ()


def default_methods(problem, mips: tuple[str, ...] = ("bottleneck", "exact")) -> tuple:
    """The methods of `choose_methods` (without the reason)."""
    return choose_methods(problem, mips)[0]


MIP_METHODS = tuple(name for name in BOUNDS if BOUNDS.kind(name) == "mip")
DEFAULT_METHODS = ("simple", "bottleneck", "bottleneck-guess", "exact")


def check_method(name: str, bounds: Mapping[str, BoundMethod] = BOUNDS) -> None:
    """Raise JaxplaceError (field "methods", with the close names) unless `name` is in
    `bounds`."""
    if name in bounds:
        return
    if isinstance(bounds, RegistryView | Registry):
        raise bounds.unknown(name)
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
