"""Runs one benchmark module of experiments/bench as a command, from the repository root:

    python -m experiments.bench.NAME [options]      # --help lists them

Each module has `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`, as
the benchmarks that ship behind `jaxplace bench NAME` do. Bad input is one line on
stderr and exit status 2; exit status 1 is a benchmark that missed its stated target.
"""

from __future__ import annotations

import argparse
import sys

from jaxplace.errors import JaxplaceError


def main(module, argv=None) -> int:
    """Parse `argv` with `module.add_arguments` and return `module.run(args)`."""
    name = module.__spec__.name if module.__spec__ else module.__name__
    p = argparse.ArgumentParser(prog=f"python -m {name}", description=module.HELP)
    module.add_arguments(p)
    if not any("--quiet" in a.option_strings for a in p._actions):
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    try:
        return int(module.run(args) or 0)
    except JaxplaceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
