"""Local stage processes: a free port, a module fit to pickle to them, the refusal to
spawn from a process that is itself still starting, and the wait for them under a
timeout."""

from __future__ import annotations

import multiprocessing
import socket
import time

from jaxplace.errors import JaxplaceError


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def without_split_wrappers(module):
    """A copy of `module` with the forward wrappers that `pipeline(..., split_spec=)`
    leaves on split modules removed: torch wraps them in place, a wrapped module cannot
    be pickled to the stage processes, and a second `pipeline` call would wrap twice."""
    import copy

    clean = copy.deepcopy(module)
    for m in clean.modules():
        if "_orig_forward" in m.__dict__:
            m.__dict__.pop("forward", None)
            del m.__dict__["_orig_forward"]
    return clean


def check_main_guard() -> None:
    """Refuse to start stage processes from a process that is itself still starting
    (a spawned child importing the user's script, which called us at top level)."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise JaxplaceError("run_pipeline was called while a spawned process imported "
                            "your script: call it under `if __name__ == \"__main__\":`",
                            field="__main__")


def wait_for(ctx, timeout: float, what: str, failed: str) -> None:
    """Wait for the processes of `torch.multiprocessing.start_processes(..., join=False)`
    to end within `timeout` seconds; a process that raised or died is one JaxplaceError
    (`failed` and its last line), and none is left running.

    Args:
        ctx: the ProcessContext.
        timeout: seconds for all of them.
        what: the work, for the timeout's message ("the pipeline run").
        failed: the message's start when one fails ("a pipeline stage failed").
    """
    from torch.multiprocessing.spawn import ProcessException

    deadline = time.monotonic() + timeout
    try:
        while not ctx.join(timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
            if time.monotonic() > deadline:
                raise JaxplaceError(f"{what} did not finish within {timeout:g} s",
                                    field="timeout")
    except ProcessException as exc:  # a process raised or died
        raise JaxplaceError(f"{failed}: {str(exc).strip().splitlines()[-1]}") from exc
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
                p.join(5)
