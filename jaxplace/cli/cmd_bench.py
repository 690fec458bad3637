"""`jaxplace bench NAME ...`: the benchmarks of jaxplace.bench (one module each, listed
in `jaxplace.bench.BENCHES`, with `HELP`, `add_arguments(parser)` and `run(args)`).
A name in `jaxplace.bench.MOVED` (a research benchmark, kept in the repository's
experiments/bench/) answers where it went, in one line, exit status 2."""

from __future__ import annotations

import importlib

from jaxplace.cli.runner import Runner, Stopped
from jaxplace.errors import JaxplaceError

HELP = "run a benchmark and print its figures"
DESCRIPTION = ("Run a benchmark and print its figures. Exit status 1 when a benchmark "
               "with a stated target misses it.")


def _module(name: str):
    return importlib.import_module(f"jaxplace.bench.{name}")


def add_arguments(p) -> None:
    import argparse

    from jaxplace.bench import BENCHES, MOVED

    bsub = p.add_subparsers(dest="bench", metavar="NAME")
    for name in BENCHES:
        mod = _module(name)  # an import error here is a bug, not a missing benchmark
        bp = bsub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(bp)
        if not any("--quiet" in a.option_strings for a in bp._actions):
            bp.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    for name in MOVED:  # unlisted (no help); `run` says where it went, whatever follows
        mp = bsub.add_parser(name, add_help=False)
        mp.parse_known_args = lambda args=None, namespace=None: (argparse.Namespace(), [])


def run(args) -> int:
    from jaxplace.bench import BENCHES, MOVED

    if args.bench is None:
        raise JaxplaceError(f"give a benchmark NAME: {', '.join(BENCHES)}")
    if args.bench in MOVED:
        raise JaxplaceError(
            f"`jaxplace bench {args.bench}` moved out of the package to {MOVED[args.bench]}"
            f": from a checkout of the repository run `python -m experiments.bench."
            f"{args.bench} --help`")
    mod = _module(args.bench)
    with Runner(quiet=getattr(args, "quiet", False)) as runner:
        try:
            code = runner.call(lambda: mod.run(args))
        except Stopped:
            code = None
    return runner.exit_status() or int(code or 0)
