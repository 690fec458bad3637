"""The CLI's one path for Ctrl-C, deadlines and progress bars around long work.

Long work (search, certify, benchmarks, model import) runs in a worker thread while the
main thread waits in short joins, so it stays responsive even while the worker sits in a
long C call (XLA compilation, a HiGHS solve) that would delay Python's signal handler.

- First Ctrl-C: set `Runner.cancel` (a search stops after its current compiled chunk),
  wait at most `grace` seconds for the worker to return; if it does not, `call` raises
  `Stopped` carrying the last progress report (with the best priority vector so far),
  which `Runner.search` decodes: the command prints and writes it before exiting 130.
- Second Ctrl-C: KeyboardInterrupt in the main thread; the CLI exits 130 at once.
  Outputs are written atomically (temp file + rename), so none is half-written.
- A first Ctrl-C between calls (while the command prints or writes) only sets
  `interrupted`: the command finishes its short work, skips further long work, exits 130.
- Deadline (`call(..., deadline=s)`): the same as a first Ctrl-C at `s` seconds, but
  only gives up on the worker when a solution exists; the command exits 0.
- --time-limit covers the whole process (`Clock`): counted from the process's start
  (`process_elapsed`), less `exit_reserve` for printing and writing; once the command
  has written its result it exits without waiting for its threads still at work
  (`worker_alive`: a worker or an abandoned coarse search inside XLA's compiler).

Ctrl-C outside a Runner block raises KeyboardInterrupt as usual (exit 130).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

WORKER_NAME = "jaxplace-worker"
#: The exit status after Ctrl-C.
EXIT_INTERRUPTED = 130
#: Seconds a search may run past its time limit before the runner takes its incumbent.
DEADLINE_GRACE = 0.5


#: Threads whose names start with this prefix are the CLI's own long work (its
#: worker, the multilevel search's coarse search): at exit nobody waits for them.
THREAD_PREFIX = "jaxplace-"


#: Threads alive when the last Runner started: not the command's own (in a process
#: that runs the CLI more than once, e.g. tests calling `main`, an earlier call's).
_BEFORE: set[threading.Thread] = set()


def worker_alive() -> bool:
    """A thread of the command's long work is still running (a worker that ignored a
    cancel request, or a search's abandoned coarse search still inside XLA's
    compiler): the command exits without waiting for it (`cli.main._leave_now`), its
    result being no longer needed once the command has written its own."""
    return any(t.name.startswith(THREAD_PREFIX) and t.is_alive() and t not in _BEFORE
               for t in threading.enumerate() if t is not threading.current_thread())


#: When this module was imported (the CLI imports it first): the start of the clock of
#: --time-limit where the kernel's process start time cannot be read.
_IMPORTED_AT = time.monotonic()


def process_elapsed() -> float:
    """Seconds since this process started: Python's start-up, the imports and reading
    the input count against --time-limit too (the user times the whole command). From
    the kernel's start time on Linux (/proc), else since the CLI was imported."""
    since_import = time.monotonic() - _IMPORTED_AT
    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        elapsed = uptime - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return since_import
    # a sandbox may report clocks that disagree; start-up never takes minutes
    return elapsed if since_import <= elapsed <= since_import + 120 else since_import


#: True when the command is the process (`cli.main.entry`: `python -m jaxplace`, the
#: console script): its --time-limit counts from the process's start. A `main` called
#: inside a longer process (tests, a notebook) counts from the command's start, or a
#: limit would be spent before the command began.
PROCESS_COMMAND = False


def command_elapsed() -> float:
    """Seconds of this command already spent: since the process's start when the
    command is the process (`PROCESS_COMMAND`), else none."""
    return process_elapsed() if PROCESS_COMMAND else 0.0


#: With --certify and --time-limit, the share of the limit the search may use; the
#: certificate gets the rest (the limit covers everything the command does).
SEARCH_SHARE_WITH_CERTIFY = 0.5


def exit_reserve(time_limit: float) -> float:
    """Seconds of --time-limit held back for what follows the long work: the runner's
    wait for a late search (DEADLINE_GRACE), decoding the incumbent, the report, the
    result JSON and the exit (the interpreter's finalization alone took 1-2 s under
    load 6-10 when no thread was left)."""
    return min(DEADLINE_GRACE + 1.0 + 0.02 * time_limit, 0.25 * time_limit)


class Clock:
    """The end of a command under --time-limit, counted from the process's start
    (`command_elapsed`), less `exit_reserve`; `left()` is what remains of it for long
    work (None: no limit)."""

    def __init__(self, time_limit: float | None):
        self.time_limit = time_limit
        self.end = None if time_limit is None else (
            time.perf_counter() + time_limit - command_elapsed() - exit_reserve(time_limit))

    def left(self, floor: float = 0.1) -> float | None:
        """Seconds left for long work (at least `floor`: every step needs a moment to
        return what it has), or None without a limit."""
        if self.end is None:
            return None
        return max(self.end - time.perf_counter(), floor)


def search_limit(args, clock: Clock | None = None) -> float | None:
    """The search's own time limit: what is left of --time-limit (counted from the
    process's start, see `Clock`), or its share of it with --certify."""
    if args.time_limit is None:
        return None
    left = (clock or Clock(args.time_limit)).left()
    return left * (SEARCH_SHARE_WITH_CERTIFY if args.certify else 1.0)


@dataclass
class Found:
    """What a search run under the Runner found: `result` is the search `Result`, or
    after Ctrl-C or the time limit the incumbent's `Partition` (the objective's float64
    reference decode; `info` then empty); `stopped` is None, "stopped early",
    "interrupted" or "time limit"."""

    result: Any
    method: str
    evaluations: int
    elapsed: float
    stopped: str | None = None
    info: dict = field(default_factory=dict)


class Stopped(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """The worker did not return within the grace period after Ctrl-C or a deadline.

    Attributes:
        latest: the last progress report (`jaxplace.search.Progress`) or None.
        interrupted: True for Ctrl-C, False for a deadline.
    """

    def __init__(self, latest: Any, interrupted: bool):
        super().__init__("interrupted" if interrupted else "time limit")
        self.latest = latest
        self.interrupted = interrupted


def _planned_evaluations(problem, args) -> int | None:
    """The search's evaluation budget for the progress bar's total and ETA (None when
    the method has no fixed one to show)."""
    if args.budget is not None:
        return int(args.budget)
    from jaxplace.search.registry import get_method

    try:
        return get_method(args.method or "default").budget_for(problem, args.time_limit)
    except Exception:  # noqa: BLE001 (a bar without a total, never a failed search)
        return None


class Runner:
    """Runs callables in a worker thread under one SIGINT handler; a context manager
    (the handler is installed on enter, in the main thread only).

    Attributes:
        cancel: set on the first Ctrl-C or at a deadline; pass it to the search's
            `StopRule(cancel=...)`.
        interrupted: a Ctrl-C arrived (the command should exit 130).
        latest: the last progress report given to `observe`.
    """

    def __init__(self, *, quiet: bool = False, grace: float = 1.5):
        self.quiet = quiet
        self.grace = grace
        self.cancel = threading.Event()
        self.latest = None
        self._signal_at: float | None = None
        self._previous = None

    @property
    def interrupted(self) -> bool:
        return self._signal_at is not None

    def __enter__(self) -> Runner:
        _BEFORE.clear()
        _BEFORE.update(threading.enumerate())
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN):  # nohup, `&`
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _on_sigint(self, signum, frame) -> None:
        if self.interrupted:
            raise KeyboardInterrupt
        self._signal_at = time.monotonic()
        self.cancel.set()

    def observe(self, progress) -> None:
        """The search's observer: keep the latest report (called from the worker)."""
        self.latest = progress

    def call(self, fn: Callable[[], Any], *, desc: str = "", deadline: float | None = None,
             lower_bound: float | None = None, total: int | None = None) -> Any:
        """fn() in a worker thread; its value, or its exception re-raised here.

        Raises:
            Stopped: after Ctrl-C (or `deadline` seconds, once a solution exists) the
                worker did not return within `grace` seconds.
        """
        box: dict[str, Any] = {}

        def work():
            try:
                box["value"] = fn()
            except BaseException as exc:  # re-raised in the main thread
                box["error"] = exc

        worker = threading.Thread(target=work, name=WORKER_NAME, daemon=True)
        start = time.monotonic()
        deadline_at = None
        from jaxplace.progress import ReportBar  # tqdm: only when there is work

        with ReportBar(desc, self.quiet, lower_bound, total) as bar:
            worker.start()
            while worker.is_alive():
                worker.join(0.1)
                bar.show(self.latest)
                now = time.monotonic()
                if deadline is not None and deadline_at is None and now - start > deadline:
                    deadline_at = now
                    self.cancel.set()
                if self._overdue(now, deadline_at) and worker.is_alive():
                    raise Stopped(self.latest, self.interrupted)
        if "error" in box:
            raise box["error"]
        return box.get("value")

    def search(self, problem, args, *, time_limit: float | None = None,
               options: dict | None = None) -> Found | None:
        """`jaxplace.search(problem, args.method, ...)` under this runner, with the command's
        budget and seed, `time_limit` (the search's share of --time-limit; default all of
        it, counted from this call: importing the search, i.e. JAX, 1-4 s, included) and
        method keywords `options`; None when Ctrl-C came before a first solution."""
        called = time.perf_counter()
        from jaxplace.search import StopRule, search

        obj = problem.objective_impl
        limit = args.time_limit if time_limit is None else time_limit
        if limit is not None:
            limit = max(limit - (time.perf_counter() - called), 0.1)
        kw = {"budget": args.budget, "seed": args.seed, "progress": False,
              "stop": StopRule(time_limit=limit, cancel=self.cancel),
              "observer": self.observe, **(options or {})}
        t0 = time.perf_counter()
        try:
            res = self.call(lambda: search(problem, args.method, **kw), desc="search",
                            deadline=limit, lower_bound=obj.lower_bound(problem),
                            total=_planned_evaluations(problem, args))
        except Stopped as stop:
            x = getattr(stop.latest, "best_x", None)
            if x is None:
                return None
            part = getattr(stop.latest, "partition", None)
            if part is None:
                part = obj.decode(problem, x, precision="reference")
            return Found(part, args.method or "default", int(stop.latest.evaluations),
                         time.perf_counter() - t0,
                         "interrupted" if stop.interrupted else "time limit")
        stopped = None
        if res.interrupted:
            stopped = "interrupted" if self.interrupted else "stopped early"
        return Found(res, res.method, res.evaluations, time.perf_counter() - t0, stopped,
                     dict(res.info))

    def nothing_written(self, before: str) -> int:
        """The exit status after Ctrl-C came `before` anything could be written."""
        print(f"jaxplace: interrupted before {before}; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED

    def exit_status(self) -> int:
        """0, or after Ctrl-C (the command wrote what it had) EXIT_INTERRUPTED."""
        if not self.interrupted:
            return 0
        print("jaxplace: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

    def _overdue(self, now: float, deadline_at: float | None) -> bool:
        if self._signal_at is not None:
            return now - self._signal_at > self.grace
        has_solution = getattr(self.latest, "best_x", None) is not None
        # at a time limit the incumbent is final: wait less than after Ctrl-C (the
        # search stops at its next chunk boundary; a chunk still compiling is dropped)
        return (deadline_at is not None and has_solution
                and now - deadline_at > min(self.grace, DEADLINE_GRACE))

