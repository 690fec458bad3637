"""A call that answers by its deadline even while XLA compiles.

A compile cannot be interrupted: a search whose first chunk compiles for 30 s (a cold
cache on a loaded machine) would otherwise end 30 s past a 3 s time limit. The work
runs in a thread; past the deadline the caller gets None and answers with what it has
(the search's best so far), while the thread finishes its compile and stops at its
first chunk boundary (its own time limit has passed). The thread is not a daemon: a
daemon still compiling at interpreter exit is killed inside XLA's C++ and aborts the
process, so a library caller's exit waits for it; the CLI leaves without waiting for
threads named "jaxplace-..." once it has written its result.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds past its time limit (at least; 5% of longer limits) a search may take to
#: return before the caller answers with its best so far: a chunk in flight finishes
#: well within it, a first compile may not.
LATE_SECONDS = 1.0


def late_seconds(time_limit: float) -> float:
    """LATE_SECONDS, or 5% of a longer `time_limit`."""
    return max(LATE_SECONDS, 0.05 * time_limit)


#: Seconds the work may take to return after Ctrl-C set its cancel event.
CANCEL_GRACE = 1.0

#: The thread's name (the CLI's `cli.runner.worker_alive` counts "jaxplace-*" threads).
THREAD_NAME = "jaxplace-search"


def _jax_context() -> Callable[[], Any]:
    """A context manager factory re-entering the caller's thread-local JAX settings
    (default device, x64) in another thread, which would otherwise start from the
    global ones."""
    import contextlib

    import jax

    x64, device = bool(jax.config.jax_enable_x64), jax.config.jax_default_device

    def enter():
        stack = contextlib.ExitStack()
        stack.enter_context(jax.enable_x64(x64))
        if device is not None:
            stack.enter_context(jax.default_device(device))
        return stack

    return enter


def call_by(fn: Callable[[], Any], give_up: float, ready: Callable[[], bool],
            cancel: threading.Event | None = None) -> tuple[bool, Any]:
    """(True, fn()) when `fn` returns, or raises its exception here; (False, None) once
    `time.perf_counter()` passes `give_up` with `ready()` true (an answer exists
    without `fn`); `fn` then goes on in its thread, its result dropped.

    Ctrl-C while waiting sets `cancel` (the work stops after its chunk in flight and
    returns its best) and waits at most CANCEL_GRACE more; a second Ctrl-C, or none
    given `cancel`, raises KeyboardInterrupt here."""
    box: dict[str, Any] = {}
    context = _jax_context()

    def work():
        try:
            with context():
                box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=work, name=THREAD_NAME, daemon=False)
    thread.start()
    while thread.is_alive():
        left = give_up - time.perf_counter()
        try:
            thread.join(timeout=min(0.1, left) if left > 0 else 0.1)
        except KeyboardInterrupt:
            if cancel is None or cancel.is_set():
                raise
            cancel.set()
            give_up = min(give_up, time.perf_counter() + CANCEL_GRACE)
            continue
        if thread.is_alive() and time.perf_counter() >= give_up and ready():
            return False, None
    if "error" in box:
        raise box["error"]
    return True, box["value"]


__all__ = ["CANCEL_GRACE", "LATE_SECONDS", "THREAD_NAME", "call_by", "late_seconds"]
