"""Ctrl-C while `jaxplace partition` starts (the flake of
tests/test_cli_reliability.py::test_sigint_real_search[0.5]), many times under load.

Each run starts the test's command (a 100-node REGAL-like graph, k = 8, BRKGA with a
budget it cannot spend, --time-limit 120, a cold compile cache), sends SIGINT after
a delay (`--delay`, or spread evenly from `--delay` to `--delay-max` over the runs:
where 0.5 s lands depends on the load, and the flake needs the signal inside JAX's
import) and waits up to 30 s; it counts as good when it exits 130 within
3 s of the signal, without "Traceback" or "Exception ignored", and leaves no
temporary file (the test's asserts). `--hogs` busy-loop processes load the machine
while it runs. `--code DIR` runs the jaxplace found in DIR (e.g. an exported older
commit) instead of the installed one; given twice or more, the codes take turns at
each delay (the same load for each), with a summary per code.

    nice python experiments/sigint_s24.py --runs 20 --hogs 2 --delay 0.5 --delay-max 4
    git archive 456a82e jaxplace | tar -x -C /tmp/before
    nice python experiments/sigint_s24.py --runs 20 --hogs 2 --delay 0.5 --delay-max 4 \
        --code /tmp/before
    nice python experiments/sigint_s24.py --runs 30 --hogs 2 --delay 2 --delay-max 4.5 \
        --code /tmp/before --code $PWD

Prints one line per run and a summary (outcomes, seconds from the signal to the exit).
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAUNCHER = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
            "os.execv(sys.executable, [sys.executable] + sys.argv[1:])")


def graph_file(folder: Path) -> Path:
    from jaxplace.formats import nodelink_data, write_json
    from jaxplace.generators import generate

    path = folder / "g100.json"
    write_json(path, nodelink_data(generate("regal", seed=1, n=100)))
    return path


def one_run(path: Path, delay: float, env: dict, folder: Path) -> tuple[str, float, str]:
    """(outcome, seconds from the signal to the exit, stderr's tail when bad); the
    command runs in `folder`, so that `env`'s PYTHONPATH decides which code runs."""
    out = folder / "r.json"
    if out.exists():
        out.unlink()
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, "-m", "jaxplace", "partition", str(path), "-k", "8",
         "--method", "brkga", "--budget", "100000000", "--time-limit", "120", "-o",
         str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        cwd=folder)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        return "hang", time.monotonic() - t0, stderr[-300:]
    dt = time.monotonic() - t0
    tmp = list(folder.glob(".*.tmp"))
    for f in tmp:
        f.unlink()
    if proc.returncode != 130:
        return f"rc {proc.returncode}", dt, stderr[-300:]
    if "Traceback" in stderr or "Exception ignored" in stderr:
        return "traceback", dt, stderr[-300:]
    if tmp:
        return "tmp left", dt, ""
    if "bottleneck" not in stdout and out.exists():
        return "written without a report", dt, ""
    return ("ok" if dt < 3.0 else "slow"), dt, ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.5)
    ap.add_argument("--delay-max", type=float, default=None,
                    help="spread the delays evenly from --delay to this")
    ap.add_argument("--hogs", type=int, default=2, help="busy-loop processes for load")
    ap.add_argument("--code", action="append", default=None,
                    help="folder holding the jaxplace to run (repeat: take turns)")
    a = ap.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    base["JAXPLACE_CACHE_DIR"] = ""
    envs = {}
    for code in a.code or [None]:
        env = dict(base)
        if code:
            env["PYTHONPATH"] = os.pathsep.join([code, env.get("PYTHONPATH", "")]).rstrip(":")
        where = subprocess.run([sys.executable, "-c",
                                "import jaxplace; print(jaxplace.__file__)"],
                               env=env, capture_output=True, text=True, cwd="/").stdout.strip()
        envs[where] = env
    top = a.delay if a.delay_max is None else a.delay_max
    delays = [a.delay + (top - a.delay) * i / max(a.runs - 1, 1) for i in range(a.runs)]
    print(f"jaxplace from {', '.join(envs)}; delays {a.delay}-{top} s; {a.hogs} hogs; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(a.hogs)]
    counts = {w: collections.Counter() for w in envs}
    dts: dict = {w: [] for w in envs}
    try:
        with tempfile.TemporaryDirectory(prefix="sigint-s24-") as tmp:
            folder = Path(tmp)
            path = graph_file(folder)
            for i in range(a.runs):
                for where, env in envs.items():
                    what, dt, tail = one_run(path, delays[i], env, folder)
                    counts[where][what] += 1
                    dts[where].append(dt)
                    print(f"run {i + 1:2d} {where}: delay {delays[i]:.2f} s: {what:10s} "
                          f"{dt:5.2f} s after the signal; load {os.getloadavg()[0]:.2f}"
                          + (f"\n    {tail!r}" if tail else ""), flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    for where in envs:
        d = sorted(dts[where])
        print(f"summary {where}: {dict(counts[where])}; seconds from the signal to the "
              f"exit: median {d[len(d) // 2]:.2f}, max {d[-1]:.2f}")


if __name__ == "__main__":
    main()
