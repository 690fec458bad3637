"""Where the seconds of `jaxplace partition ... --time-limit T` go, stamped from the
process's own start (issues 51 and 53: the process must end within T).

    python experiments/time_limit_probe.py partition GRAPH.json -k 16 --time-limit 60 [...]

Runs the CLI in this process with timestamps (seconds since the kernel started the
process, /proc/self/stat) printed to stderr at: interpreter up, `jaxplace.cli.main`
imported, the problem loaded, the search's start and end, the certificate's ladder
(choose_methods, each rung), the result written, the exit path (`_leave_now`, the
interpreter's wait for non-daemon threads, the atexit handlers); the rest of the
wall, measured from outside, is the interpreter's finalization. The library is not
changed: the stamps are monkeypatches around its functions.
"""

from __future__ import annotations

import os
import sys


def since_start() -> float:
    """Seconds since this process started (Linux: /proc/self/stat against /proc/uptime)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 of proc(5), counted after the name
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def stamp(what: str) -> None:
    os.write(2, f"[{since_start():7.2f} s] {what}\n".encode())


def wrap(owner, name: str, label: str) -> None:
    fn = getattr(owner, name)

    def wrapped(*a, **kw):
        stamp(f"{label} start")
        try:
            return fn(*a, **kw)
        finally:
            stamp(f"{label} end")

    setattr(owner, name, wrapped)


def main(argv: list[str]) -> int:
    stamp("interpreter up (probe running)")
    import atexit
    import threading

    atexit.register(stamp, "atexit: the last handler (registered first)")

    from jaxplace.cli import main as cli_main

    stamp("jaxplace.cli.main imported")
    import jaxplace.formats as formats
    from jaxplace.bounds import certificate
    from jaxplace.cli import cmd_certify, cmd_partition, runner

    wrap(cmd_partition, "problem_from_args", "load problem")
    wrap(runner.Runner, "search", "Runner.search")
    wrap(cmd_partition, "_certify", "certify (CLI)")
    wrap(cmd_partition, "default_bounds", "default_bounds (choose_methods)")
    wrap(cmd_certify, "certify_and_print", "certify_and_print")
    wrap(certificate, "_start", "ladder start partition")
    wrap(formats, "save_result", "save_result")
    wrap(cli_main, "_leave_now", "_leave_now")
    from jaxplace.bounds import registry

    wrap(registry.Deferred, "load", "load a deferred rung (its imports)")
    rung_limit = getattr(certificate, "_rung_limit", None)
    if rung_limit is not None:  # the tree under test splits a total time
        def limit(reg, todo, i, per_method, end):
            out = rung_limit(reg, todo, i, per_method, end)
            stamp(f"rung {todo[i]}: " + ("skipped" if out is None else f"{out:.2f} s"))
            return out

        certificate._rung_limit = limit
    ladder_run = certificate._run_ladder

    def ladder(*a, **kw):
        stamp("ladder start")
        try:
            return ladder_run(*a, **kw)
        finally:
            stamp("ladder end")

    certificate._run_ladder = ladder
    shutdown = threading._shutdown

    def traced_shutdown():
        alive = [t.name for t in threading.enumerate()
                 if t is not threading.main_thread() and t.is_alive()]
        stamp(f"interpreter shutdown: waiting for threads {alive}")
        shutdown()
        stamp("threads joined")

    threading._shutdown = traced_shutdown
    real_exit = os._exit

    def traced_exit(code):
        stamp(f"os._exit({code})")
        real_exit(code)

    os._exit = traced_exit
    code = cli_main.main(argv)
    stamp(f"main returned {code}")
    atexit.register(stamp, "atexit: the first handler (registered last)")
    return code


if __name__ == "__main__":
    sys.argv[0] = "jaxplace"  # the CLI's start-up signal handling, as `python -m jaxplace`
    sys.exit(main(sys.argv[1:]))
