"""Runs one benchmark module of experiments/bench as a command, from the repository root:

    python -m experiments.bench.NAME [options]      # --help lists them

Each module has `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`, as
the benchmarks that ship behind `jaxplace bench NAME` do. Bad input (a bad option or a
`JaxplaceError`) is one line on stderr and exit status 2; exit status 1 is a benchmark
that missed its stated target.
"""

from __future__ import annotations

import argparse
import sys

from jaxplace.errors import JaxplaceError

EXIT_BAD_INPUT = 2


class _OneLineParser(argparse.ArgumentParser):
    """An argument error in one line (argparse prints the usage too)."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def main(module, argv=None) -> int:
    """Parse `argv` with `module.add_arguments` and return `module.run(args)`'s exit
    status (2 on bad input, one line on stderr)."""
    name = module.__spec__.name if module.__spec__ else module.__name__
    p = _OneLineParser(prog=f"python -m {name}", description=module.HELP)
    module.add_arguments(p)
    if not any("--quiet" in a.option_strings for a in p._actions):
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, already printed)
        return int(exc.code or 0)
    try:
        return int(module.run(args) or 0)
    except JaxplaceError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"{p.prog}: interrupted", file=sys.stderr)
        return 130
