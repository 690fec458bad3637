"""`jaxplace bench NAME ...`: the benchmarks of jaxplace.bench."""

from __future__ import annotations

from jaxplace.bench import BENCHES


def add_parser(sub) -> None:
    from jaxplace.cli.main import optional_module

    p = sub.add_parser("bench", help="run a benchmark and print its figures")
    bsub = p.add_subparsers(dest="bench", metavar="NAME")
    for name in BENCHES:
        mod = optional_module(f"jaxplace.bench.{name}")
        if mod is None:
            continue
        bp = bsub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(bp)
        bp.set_defaults(run=mod.run)
    p.set_defaults(run=lambda args: p.print_help() or 2)
