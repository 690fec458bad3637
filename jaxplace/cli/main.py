"""Entry point of the `jaxplace` command.

Each subcommand lives in its own module `jaxplace.cli.cmd_<name>` exposing
`add_parser(subparsers)` (registering itself, with `set_defaults(run=...)`); a
module that is not there yet is simply not offered. Bad input raises JaxplaceError,
printed here on one line with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jaxplace.errors import JaxplaceError

COMMANDS = ("info", "generate", "partition", "certify", "import", "bench")


def optional_module(name: str):
    """Import `name`, or None when that module (not one it imports) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def build_parser() -> argparse.ArgumentParser:
    from jaxplace import __version__

    p = argparse.ArgumentParser(
        prog="jaxplace",
        description="Partition computation graphs into pipeline stages and certify them.")
    p.add_argument("--version", action="version", version=f"jaxplace {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        mod = optional_module(f"jaxplace.cli.cmd_{name}")
        if mod is not None:
            mod.add_parser(sub)
    return p


def _host_devices() -> None:
    """Expose every CPU core as a JAX host device (the decoder shards populations over
    `jax.devices()`), unless XLA_FLAGS already sets the count. Must run before JAX
    initializes its backend."""
    import os

    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        count = max(os.cpu_count() or 1, 1)
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_force_host_platform_device_count={count}".strip())


def _compile_cache() -> None:
    """Keep compiled XLA programs on disk between runs: the decoder and the search
    loop compile once per padded shape (seconds each), so a second run on a graph of
    similar size starts at once. JAXPLACE_CACHE_DIR moves it; set it empty to disable."""
    import os

    path = os.environ.get("JAXPLACE_CACHE_DIR")
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "jaxplace", "xla")
    if not path:
        return
    import jax

    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv: list[str] | None = None) -> int:
    _host_devices()
    _compile_cache()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except JaxplaceError as exc:
        print(f"jaxplace: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxplace: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
