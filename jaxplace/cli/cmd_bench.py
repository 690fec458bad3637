"""`jaxplace bench NAME ...`: the benchmarks of jaxplace.bench (one module each, listed
in `jaxplace.bench.BENCHES`, with `HELP`, `add_arguments(parser)` and `run(args)`).
A name in `jaxplace.bench.MOVED` (a research benchmark, kept in the repository's
experiments/bench/) answers where it went, in one line, exit status 2."""

from __future__ import annotations

import re

from jaxplace.cli.runner import Runner, Stopped
from jaxplace.errors import JaxplaceError

HELP = "run a benchmark and print its figures"
DESCRIPTION = ("Run a benchmark and print its figures. Exit status 1 when a benchmark "
               "with a stated target misses it.")


def _module(name: str):
    from jaxplace.bench import BENCHES

    return BENCHES[name]


def add_arguments(p) -> None:
    from jaxplace.bench import BENCHES

    bsub = p.add_subparsers(dest="bench", metavar="NAME")
    for name in BENCHES:
        mod = _module(name)  # an import error here is a bug, not a missing benchmark
        bp = bsub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(bp)
        if not any("--quiet" in a.option_strings for a in bp._actions):
            bp.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    _answer_moved_names(p)


def moved_message(name: str) -> str:
    """Where the research benchmark `name` of `jaxplace.bench.MOVED` went."""
    from jaxplace.bench import MOVED

    return (f"`jaxplace bench {name}` moved out of the package to {MOVED[name]}: from a "
            f"checkout of the repository run `python -m experiments.bench.{name} --help`")


def _answer_moved_names(p) -> None:
    """A moved name is no choice of NAME (so neither the help nor the error for an
    unknown name lists it): argparse rejects it before anything after it is read, and
    its error becomes the one line saying where the benchmark went."""
    from jaxplace.bench import MOVED

    plain_error = p.error

    def error(message: str):
        m = re.search(r"invalid choice: '([^']*)'", message)
        if m and m[1] in MOVED:
            p.exit(2, f"jaxplace: error: {moved_message(m[1])}\n")
        plain_error(message)

    p.error = error


def run(args) -> int:
    from jaxplace.bench import BENCHES, MOVED

    if args.bench is None:
        raise JaxplaceError(f"give a benchmark NAME: {', '.join(BENCHES)}")
    if args.bench in MOVED:  # (argparse answers first; kept for callers of `run`)
        raise JaxplaceError(moved_message(args.bench))
    mod = _module(args.bench)
    with Runner(quiet=getattr(args, "quiet", False)) as runner:
        try:
            code = runner.call(lambda: mod.run(args))
        except Stopped:
            code = None
    return runner.exit_status() or int(code or 0)
