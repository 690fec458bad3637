"""Ctrl-C and deadlines (issue 13): one signal path for the CLI (jaxplace.cli.runner).

Subprocess tests send SIGINT to `jaxplace partition` and check: exit 130 within 3 s of
the signal, no traceback, and a valid result JSON whenever a solution was printed.
The fast ones replace the search by a stand-in that reports an incumbent and then
ignores the cancel request (as a search stuck in XLA's compiler would); the real ones
run the real search on a generated 100-node graph.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from jaxplace.cli.runner import Runner, Stopped

# A stand-in for jaxplace.search.search: reports one incumbent (FAKE=incumbent) or none
# (FAKE=none), says READY on stderr, then ignores the cancel event for a minute.
FAKE = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import jaxplace.search as S
    from jaxplace.search import Progress

    def fake_search(problem, method=None, *, stop=None, observer=None, **kw):
        if os.environ["FAKE"] == "incumbent":
            x = np.linspace(0.0, 1.0, problem.n).astype(np.float32)  # (n,) priorities
            observer(Progress(123, 1.0, x, 0.1, "fake"))
        print("READY", file=sys.stderr, flush=True)
        time.sleep(60)

    S.search = fake_search
    from jaxplace.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """{n: path} of seeded REGAL-like graphs (what `jaxplace generate regal` writes)."""
    from jaxplace.formats import nodelink_data, write_json
    from jaxplace.generators import generate

    folder = tmp_path_factory.mktemp("graphs")
    out = {}
    for n in (30, 100):
        out[n] = folder / f"g{n}.json"
        write_json(out[n], nodelink_data(generate("regal", seed=1, n=n)))
    return out


def _env(**extra):
    """The environment of a cold run: no persistent compile cache."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    return {**env, "JAXPLACE_CACHE_DIR": "", **extra}


def _interrupt(proc, signals=1, gap=0.2):
    """Send SIGINT (twice with `signals=2`); returns (rc, out, err, seconds from the
    last signal to exit)."""
    for i in range(signals):
        if i:
            time.sleep(gap)
        proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err, time.monotonic() - t0


#: Children get SIGINT's default action even when this test process runs with it
#: ignored (a background job of a non-interactive shell, as CI may start us): a tiny
#: launcher resets it and execs the real command (a preexec_fn would fork a process
#: that has JAX's threads).
DEFAULT_SIGINT = [sys.executable, "-c", "import os, signal, sys; "
                  "signal.signal(signal.SIGINT, signal.SIG_DFL); "
                  "os.execv(sys.executable, [sys.executable] + sys.argv[1:])"]


def _fake(path, mode, out, options=("-k", "4")):
    env = _env(FAKE=mode)
    proc = subprocess.Popen([*DEFAULT_SIGINT, "-c", FAKE, "partition", str(path), *options,
                             "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    line = proc.stderr.readline()
    assert line.strip() == "READY", line + proc.stderr.read()
    return proc


def _valid_result(out, n):
    data = json.loads(out.read_text())
    assert len(data["assignment"]) == n and np.isfinite(data["bottleneck"])
    return data


def test_sigint_with_a_stuck_search_keeps_the_incumbent(tmp_path, graphs):
    out = tmp_path / "r.json"
    proc = _fake(graphs[30], "incumbent", out)
    rc, stdout, stderr, dt = _interrupt(proc)
    assert rc == 130 and dt < 3.0, (rc, dt, stderr)
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert "(interrupted)" in stdout and "stage" in stdout and f"wrote {out}" in stdout
    data = _valid_result(out, 30)
    assert data["stopped"] == "interrupted" and data["evaluations"] == 123


@pytest.mark.parametrize("options, cost", [
    (("--cluster", "moirai_inter"), "bottleneck"),  # unequal devices: the row + device keys
    (("--cluster", "moirai_inter", "--objective", "latency"), "makespan"),
])
def test_sigint_keeps_the_incumbent_of_every_objective(tmp_path, graphs, options, cost):
    """One Ctrl-C path for every objective: the stuck search's incumbent is decoded by
    the objective's own reference, printed and written; exit 130."""
    out = tmp_path / "r.json"
    proc = _fake(graphs[30], "incumbent", out, options)
    rc, stdout, stderr, dt = _interrupt(proc)
    assert rc == 130 and "Traceback" not in stderr, (rc, stderr)
    assert "(interrupted)" in stdout and f"{cost} " in stdout and f"wrote {out}" in stdout
    data = json.loads(out.read_text())
    assert len(data["assignment"]) == 30 and data["stopped"] == "interrupted"
    assert np.isfinite(data[cost]) and data["evaluations"] == 123


def test_sigint_before_a_first_solution_writes_nothing(tmp_path, graphs):
    out = tmp_path / "r.json"
    proc = _fake(graphs[30], "none", out)
    rc, stdout, stderr, dt = _interrupt(proc)
    assert rc == 130 and dt < 3.0, (rc, dt, stderr)
    assert "before a first solution" in stderr and "Traceback" not in stderr
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


def test_second_sigint_exits_at_once(tmp_path, graphs):
    out = tmp_path / "r.json"
    proc = _fake(graphs[30], "incumbent", out)
    rc, stdout, stderr, dt = _interrupt(proc, signals=2)
    # the second Ctrl-C skips the first one's grace wait and the incumbent's write
    # (which the one-signal test above sees): behaviour, not a wall-clock threshold,
    # tells the two apart on a loaded machine
    assert rc == 130, (rc, dt, stderr)
    assert "Traceback" not in stderr and "wrote" not in stdout
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


def _wait_for_jaxplace(proc, timeout: float = 60.0) -> None:
    """Wait until the child imports jaxplace (NumPy, its first compiled import, is
    mapped; Linux), so that a test's delay counts from there: on a loaded machine a
    Ctrl-C sent 0.5 s after the spawn can land before jaxplace runs at all, in the
    launcher (killed: -2) or in Python's own start-up (its `site` import: "Fatal Python
    error", exit 1), which no code of ours can handle."""
    maps = f"/proc/{proc.pid}/maps"
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        try:
            with open(maps) as f:
                if "_multiarray_umath" in f.read():
                    return
        except OSError:  # not Linux, or the process is gone: the plain delay
            return
        time.sleep(0.01)


@pytest.mark.parametrize("delay", [
    0.5, 2.0,  # during imports and the start of the first compile
    pytest.param(5.0, marks=pytest.mark.heavy),  # compiling
    pytest.param(30.0, marks=pytest.mark.heavy),  # searching: a first solution exists
])
def test_sigint_real_search(tmp_path, graphs, delay):
    path = graphs[100]
    out = tmp_path / "r.json"
    env = _env()  # cold: compiles inside the run
    # BRKGA with a budget it cannot spend: still searching when the signal comes.
    proc = subprocess.Popen([*DEFAULT_SIGINT, "-m", "jaxplace", "partition", str(path), "-k",
                             "8", "--method", "brkga", "--budget", "100000000",
                             "--time-limit", "120", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    _wait_for_jaxplace(proc)
    time.sleep(delay)
    rc, stdout, stderr, dt = _interrupt(proc)
    assert rc == 130 and dt < 3.0, (rc, dt, stderr)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    if "bottleneck" in stdout:  # a solution was printed: it was written too
        _valid_result(out, 100)
        assert "(interrupted)" in stdout
    else:
        assert not out.exists()
    assert not list(tmp_path.glob(".*.tmp"))


# A Ctrl-C inside a garbage-collection callback (JAX's `_xla_gc_callback` runs at
# allocations, hundreds of times while JAX imports): Python can only print a
# KeyboardInterrupt raised there ("Exception ignored") and goes on.
IN_GC = textwrap.dedent("""
    import gc, signal, sys, time
    from jaxplace.cli.main import interrupt_safely
    if sys.argv[1] == "safe":
        signal.signal(signal.SIGINT, interrupt_safely)
    else:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def callback(phase, info):
        if phase == "start" and not getattr(callback, "sent", False):
            callback.sent = True
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # the handler runs here, inside the callback
                pass

    gc.callbacks.append(callback)
    try:
        gc.collect()
        time.sleep(0.2)
        print("ran on")
    except KeyboardInterrupt:
        print("KeyboardInterrupt outside the callback")
""")


@pytest.mark.parametrize("mode", ["safe", "default"])
def test_ctrl_c_inside_a_gc_callback_is_not_lost(mode):
    r = subprocess.run([sys.executable, "-c", IN_GC, mode], capture_output=True, text=True,
                       timeout=60)
    if mode == "default":  # what the command line had: the Ctrl-C is lost
        assert r.returncode == 0 and "ran on" in r.stdout, (r.stdout, r.stderr)
        assert "Exception ignored" in r.stderr
    else:
        assert r.returncode == 130, (r.returncode, r.stdout, r.stderr)
        assert "jaxplace: interrupted" in r.stderr and "Exception ignored" not in r.stderr
        assert "ran on" not in r.stdout


def test_interrupt_safely_raises_where_python_can(tmp_path, monkeypatch):
    """KeyboardInterrupt in plain code; exit at once in a gc callback, a finalizer and
    a module's import."""
    import importlib

    from jaxplace.cli.main import _exit_at_once, interrupt_safely

    assert not _exit_at_once(sys._getframe())
    with pytest.raises(KeyboardInterrupt):
        interrupt_safely(signal.SIGINT, sys._getframe())
    seen = []

    def callback(phase, info):
        seen.append(_exit_at_once(sys._getframe()))

    class Finalized:
        def __del__(self):
            seen.append(_exit_at_once(sys._getframe()))

    import gc

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    Finalized()
    (tmp_path / "sigint_import_probe.py").write_text(
        "import sys\nfrom jaxplace.cli.main import _exit_at_once\n"
        "SEEN = _exit_at_once(sys._getframe())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen.append(importlib.import_module("sigint_import_probe").SEEN)
    assert len(seen) >= 3 and all(seen), seen


# --- the runner in-process ---------------------------------------------------------------

class _Report:
    def __init__(self, best_x):
        self.evaluations, self.best_cost, self.best_x = 7, 2.0, best_x
        self.elapsed, self.phase = 0.0, "fake"


def test_runner_returns_the_value_and_reraises_errors():
    with Runner(quiet=True) as r:
        assert r.call(lambda: 41 + 1) == 42
        with pytest.raises(ZeroDivisionError):
            r.call(lambda: 1 / 0)
    assert not r.interrupted


def test_runner_deadline_gives_up_on_a_stuck_worker_once_a_solution_exists():
    release = threading.Event()
    runner = Runner(quiet=True, grace=0.2)

    def stuck():
        runner.observe(_Report(np.zeros(3, np.float32)))
        release.wait(10)  # ignores runner.cancel

    try:
        t0 = time.monotonic()
        with runner, pytest.raises(Stopped) as info:
            runner.call(stuck, deadline=0.2)
        assert time.monotonic() - t0 < 2.0
        assert info.value.interrupted is False and info.value.latest.evaluations == 7
        assert runner.cancel.is_set() and not runner.interrupted
    finally:
        release.set()  # let the worker end: no live worker may outlast the test
        for t in threading.enumerate():
            if t.name == "jaxplace-worker":
                t.join(5)


def test_runner_sigint_in_process_sets_cancel_and_waits_for_the_worker():
    # as in an interactive shell, even when this process was started with SIGINT ignored
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _runner_sigint_in_process()
    finally:
        signal.signal(signal.SIGINT, previous)


def _runner_sigint_in_process():
    runner = Runner(quiet=True, grace=2.0)

    def cooperative():
        assert runner.cancel.wait(5)  # a search that honours StopRule(cancel=...)
        return "stopped cleanly"

    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    with runner:
        timer.start()
        assert runner.call(cooperative) == "stopped cleanly"
    assert runner.interrupted
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
