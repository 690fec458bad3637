"""Entry point of the `jaxplace` command.

`COMMANDS` maps each subcommand to its module (a `jaxplace.registry.Registry` of lazy
module entries: a command's module is imported when the parser is built or the command
runs; `COMMANDS.register` adds one at run time). A command module exposes `HELP` (one
line), optionally `DESCRIPTION`, `add_arguments(parser)` and `run(args) -> int`, and
imports its heavy dependencies inside `run`, so that `jaxplace --help` stays instant.
Adding a command is one module and one entry here; a module that fails to import is
an error, never silently left out.

Exit codes: 0 success, 1 a benchmark missed its stated target, 2 bad input (one line
on stderr), 130 interrupted by Ctrl-C (after printing and writing the best result
found so far, see `jaxplace.cli.runner`).
"""

from __future__ import annotations

import argparse
import sys

from jaxplace import __version__
from jaxplace.cli import runner
from jaxplace.cli.method_names import check_method
from jaxplace.cli.runner import EXIT_INTERRUPTED, worker_alive
from jaxplace.compile_cache import enable_compile_cache
from jaxplace.errors import JaxplaceError
from jaxplace.registry import Registry

COMMANDS = Registry("command", {
    "info": "jaxplace.cli.cmd_info",
    "generate": "jaxplace.cli.cmd_generate",
    "partition": "jaxplace.cli.cmd_partition",
    "partition-many": "jaxplace.cli.partition_many",
    "certify": "jaxplace.cli.cmd_certify",
    "import": "jaxplace.cli.cmd_import",
    "bench": "jaxplace.cli.cmd_bench",
    "train": "jaxplace.cli.cmd_train",
    "export": "jaxplace.cli.cmd_export",
    "warmup": "jaxplace.cli.cmd_warmup",
    "spatial": "jaxplace.cli.cmd_spatial",
    "view": "jaxplace.cli.cmd_view",
    "calibrate": "jaxplace.cli.cmd_calibrate",
})

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that adds its arguments on first use (`populate`), so that
    only the chosen subcommand's arguments are built, and that reports usage errors
    on one line."""

    def __init__(self, *args, populate=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._populate = populate

    def _ensure(self) -> None:
        if self._populate is not None:
            populate, self._populate = self._populate, None
            populate(self)

    def parse_known_args(self, args=None, namespace=None):
        self._ensure()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._ensure()
        return super().format_help()

    def format_usage(self) -> str:
        self._ensure()
        return super().format_usage()

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} "
                  "--help)\n")


class _Version(argparse.Action):
    """--version, reading the version only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        parser.exit(message=f"jaxplace {__version__}\n")


def command_module(name: str):
    """The module of command `name` (an ImportError in it propagates)."""
    return COMMANDS[name]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="jaxplace",
        description="Partition computation graphs into pipeline stages and certify them.",
        epilog="Exit status: 0 success, 1 a benchmark missed its target, 2 bad input, "
        "130 interrupted (Ctrl-C; the best result so far is printed and written).")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        mod = command_module(name)
        sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                       populate=mod.add_arguments)
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


def _leave_now(code: int) -> None:
    """Exit at once, without waiting for a worker thread stuck in a C call (XLA's
    compiler, HiGHS): interpreter shutdown would wait for it or crash in it."""
    import os

    if worker_alive():
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C during start-up (imports, parsing)
        print("jaxplace: interrupted while starting up (loading its modules): no result "
              "yet, nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED


def entry() -> None:
    """The process's entry (`python -m jaxplace`, the `jaxplace` console script): `main`,
    then flush and `os._exit`, skipping the interpreter's finalization (module teardown,
    atexit: 1-2 s under load, which --time-limit would otherwise have to hold back).
    Only here: tests call `main` in-process. `main` has closed its output files and
    turned Ctrl-C into its exit code (130) by the time it returns; an exception it
    lets through still ends the normal way (traceback, exit 1)."""
    import os

    runner.PROCESS_COMMAND = True  # --time-limit counts from the process's start
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    os._exit(code if isinstance(code, int) else 1)


#: Options of `partition` whose value is a path (not a graph to partition).
_PATH_OPTIONS = ("-o", "--output", "--policy", "--cluster", "--partition")


def _many(argv: list[str]) -> bool:
    """`partition` given several graph files, a folder, or a k sweep (-k 2,4,8): the
    batched run of `partition-many` (`jaxplace.cli.partition_many`)."""
    import os

    graphs, prev = 0, ""
    for tok in argv:
        if prev in ("-k", "--k") and "," in tok or tok.startswith("-k") and "," in tok:
            return True
        if not tok.startswith("-") and prev not in _PATH_OPTIONS:
            if os.path.isdir(tok):
                return True
            graphs += os.path.isfile(tok)
        prev = tok
    return graphs > 1


def interrupt_safely(signum, frame) -> None:
    """The command line's SIGINT handler once its own imports are done (a command's
    `Runner` replaces it while it searches, and restores it): Python's
    KeyboardInterrupt, except where raising one is unsafe; there the process prints
    that it was interrupted and exits at once (130, `_exit_at_once`)."""
    if _exit_at_once(frame):
        import os

        command = sys.argv[1] if len(sys.argv) > 1 else None
        os.write(2, (interrupted_message(frame, command) + "\n").encode())
        os._exit(EXIT_INTERRUPTED)
    raise KeyboardInterrupt


#: What a command was doing, by the package of the innermost jaxplace frame.
_ACTIVITIES = (("jaxplace.importers", "importing the model"),
               ("jaxplace.formats", "reading the input"),
               ("jaxplace.llm", "costing the model config"),
               ("jaxplace.bounds", "computing lower bounds (HiGHS)"),
               ("jaxplace.exact", "running an exact method"),
               ("jaxplace.policy", "loading the learned policy"),
               ("jaxplace.decoder", "compiling or running the decoder"),
               ("jaxplace.search", "searching (compiling or running the first chunk)"),
               ("jaxplace.objectives", "searching (compiling or running the first chunk)"))


def _last_jaxplace_frame(tb):
    """The innermost frame of a traceback that runs jaxplace's code (None: none)."""
    frame = None
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith("jaxplace."):
            frame = tb.tb_frame
        tb = tb.tb_next
    return frame


def interrupted_message(frame, command: str | None) -> str:
    """One line for a Ctrl-C that reached the top: what was running (from `frame`, the
    innermost jaxplace frame, or any frame below it) and that no result exists."""
    where = None
    while frame is not None and where is None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("jaxplace.") and not module.startswith("jaxplace.cli.main"):
            where = (module, frame.f_code.co_name)
        frame = frame.f_back
    doing = "starting up"
    if where is not None:
        doing = next((what for prefix, what in _ACTIVITIES if where[0].startswith(prefix)),
                     "running")
        doing += f" (in {where[0]}.{where[1]})"
    result = "no plan exists yet" if command in ("partition", "partition-many") else \
        "no result yet"
    return f"jaxplace: interrupted while {doing}: {result}, nothing written"


def _exit_at_once(frame) -> bool:
    """Whether a Ctrl-C landing in `frame` must end the process instead of raising:

    - inside a garbage-collection callback (JAX registers `_xla_gc_callback`, run at
      allocations once jaxlib is imported, hundreds of times while JAX imports) or a
      finalizer, Python only prints the exception ("Exception ignored") and goes on:
      the Ctrl-C would be lost and the command run to its end;
    - inside an import, the exception unwinds through the initialization of compiled
      extension modules (jaxlib's), which then crash the process (SIGSEGV, SIGABRT)
      instead of exiting 130.

    Neither is the middle of writing a result: results go to a temporary file renamed
    when complete, and the searching commands write theirs under their `Runner`,
    whose handler only asks the search to stop (a temporary file that a command
    without a `Runner` is writing at that moment stays)."""
    import gc

    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code in callbacks or code.co_name == "__del__" or \
                code.co_filename.startswith("<frozen importlib._bootstrap"):
            return True
        frame = frame.f_back
    return False


def _main(argv: list[str] | None) -> int:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and \
            getattr(signal.getsignal(signal.SIGINT), "__name__", "") == \
            "_quiet_startup_interrupt":  # imports done: KeyboardInterrupt from here on
        signal.signal(signal.SIGINT, interrupt_safely)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "partition" and _many(argv[1:]):
        argv = ["partition-many", *argv[1:]]
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else int(bool(exc.code))
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:  # before the heavy imports: a misspelt method is an instant error
        check_method(getattr(args, "method", None) if args.command == "partition" else None)
    except JaxplaceError as exc:
        print(f"jaxplace: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _host_devices()
    enable_compile_cache()  # JAXPLACE_CACHE_DIR; empty: off
    try:
        code = int(command_module(args.command).run(args) or 0)
    except JaxplaceError as exc:
        print(f"jaxplace: error: {exc}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:  # the command held no result to keep
        print(interrupted_message(_last_jaxplace_frame(exc.__traceback__), args.command),
              file=sys.stderr)
        code = EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as Unix tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    _leave_now(code)
    return code


if __name__ == "__main__":
    entry()
