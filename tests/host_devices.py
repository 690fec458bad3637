"""Run a test script in a fresh Python process that sees several host CPU devices
(the XLA flag must be set before JAX starts, so not in the test's own process)."""

from __future__ import annotations

import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))


def run_on_host_devices(code: str, devices: int = 4, timeout: float = 900) -> None:
    """Run `code` (given `TESTS`, this folder) with `devices` host devices; it must
    exit 0 and print OK."""
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", f"TESTS = {TESTS!r}\n" + code], env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
