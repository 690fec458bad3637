"""Data-parallel policy training over two local CPU processes (`jax.distributed`).

Each run is `jaxplace train` itself, started in a subprocess through a small driver
that also saves the final parameters of every process outside its run folder (a spy
on `train._run_chunks`), so process 1's result is seen though it writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from repo_paths import ROOT

from jaxplace.errors import JaxplaceError
from jaxplace.policy import distributed as D

RECIPE = ROOT / "training" / "policy_distributed_cpu.json"
# A hung collective (a peer that died) must fail the test, never hang CI: one run of
# the tiny recipe takes 10-25 s on 2 busy cores, mostly compiling.
TIMEOUT_S = 240

DRIVER = textwrap.dedent("""
    import sys
    import numpy as np
    import jax
    from jaxplace.cli.main import main
    import jaxplace.policy.train as T

    spy, argv = sys.argv[1], sys.argv[2:]
    run_chunks = T._run_chunks

    def saving(*args, **kwargs):
        state, val = run_chunks(*args, **kwargs)
        np.savez(spy, *[np.asarray(x) for x in jax.tree.leaves(state[0])],
                 step=np.asarray(state[3]))
        return state, val

    T._run_chunks = saving
    sys.exit(main(argv))
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _launch(tmp: Path, tag: str, args: list[str], cwd: Path,
            recipe: Path = RECIPE) -> subprocess.Popen:
    driver = tmp / "driver.py"
    if not driver.exists():
        driver.write_text(DRIVER)
    cwd.mkdir(parents=True, exist_ok=True)
    # one CPU device per process, as the documented local launch sets; the shared
    # compile cache lets the resumed run reuse the first run's programs
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
           "JAXPLACE_CACHE_DIR": str(tmp / "xla-cache"), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(driver), str(tmp / f"spy-{tag}.npz"), "train", str(recipe),
         "-q", *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True)


def _wait(procs: list[subprocess.Popen]) -> list[tuple[int, str]]:
    out = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for p in procs:
            text, _ = p.communicate(timeout=max(deadline - time.monotonic(), 1.0))
            out.append((p.returncode, text))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return out


def _pair(tmp: Path, tag: str, outs: tuple[Path, Path], recipes=(RECIPE, RECIPE)):
    port = _free_port()
    procs = [_launch(tmp, f"{tag}{i}", ["--out", str(outs[i]), "--coordinator",
                                        f"127.0.0.1:{port}", "--num-processes", "2",
                                        "--process-id", str(i)], tmp / f"cwd-{tag}{i}",
                     recipes[i])
             for i in range(2)]
    return _wait(procs)


def _variant(tmp: Path, name: str, **options) -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"extends": str(RECIPE), **options}))
    return path


def _one_line_error(pair, *words) -> None:
    for rc, text in pair:
        lines = [s for s in text.splitlines() if s.startswith("jaxplace: error:")]
        assert rc == 2 and len(lines) == 1, text[-3000:]
        assert all(w in lines[0] for w in words), lines


def _spy(tmp: Path, tag: str) -> list[np.ndarray]:
    with np.load(tmp / f"spy-{tag}.npz") as z:
        return [z[f"arr_{i}"] for i in range(len(z.files) - 1)] + [z["step"]]


def _records(out: Path) -> list[dict]:
    return [json.loads(s) for s in (out / "metrics.jsonl").read_text().splitlines()]


def _check_pair(pair, tmp: Path, tag: str) -> list[np.ndarray]:
    """Both processes finished and hold bit-for-bit the same final state."""
    for rc, text in pair:
        assert rc == 0, text[-3000:]
    p0, p1 = _spy(tmp, f"{tag}0"), _spy(tmp, f"{tag}1")
    assert int(p0[-1]) == 20
    # both apply the same all-reduced gradient to the same state
    assert len(p0) == len(p1) > 5
    for a, b in zip(p0, p1, strict=True):
        np.testing.assert_array_equal(a, b)
    return p0


def _check_equals_single(dp: list[np.ndarray], single: Path) -> None:
    """Final parameters and logged metrics of a two-process run are the single run's.

    Same graphs, same keys, same samples: only the order of the float32 gradient sum
    differs (per-device partial sums and an all-reduce against one sum over the 4
    graphs), a relative change of ~1e-7 that Adam passes on as at most an ulp or two
    of a parameter per step: 20 steps of parameters of size <= ~1 stay within
    20 x 2 x 1.2e-7 ~ 5e-6 (measured: 1.2e-7). A lost, doubled or unscaled shard moves
    the update by O(lr) = 1e-3 per step."""
    import jax

    from jaxplace.policy import _checkpoint as ck

    _, params, _ = ck.read_policy(single / "policy")
    want = [np.asarray(a) for a in jax.tree.leaves(params)]
    assert len(want) == len(dp) - 1
    for a, b in zip(dp[:-1], want, strict=True):
        np.testing.assert_allclose(a, b, rtol=5e-6, atol=5e-6)


def _check_metrics(got: list[dict], want: list[dict]) -> None:
    assert [r["step"] for r in got] == [r["step"] for r in want] == [0, 5, 10, 15, 20]
    for g, w in zip(got, want, strict=True):
        assert set(g) == set(w)
        for key in set(g) - {"wall"}:  # logged rounded to 6 digits
            assert g[key] == pytest.approx(w[key], rel=1e-5, abs=2e-6), (key, g, w)


def _check_only_process_zero_wrote(tmp: Path, tag: str, pair, outs) -> None:
    from jaxplace.policy import _checkpoint as ck

    assert sorted(p.name for p in outs[0].iterdir()) == [
        "ckpt_00000010.msgpack", "ckpt_00000020.msgpack", "metrics.jsonl", "policy",
        "train_config.json"]
    assert not outs[1].exists()
    assert list((tmp / f"cwd-{tag}1").iterdir()) == []  # no runs/ folder either
    assert "process 1 of 2: done" in pair[1][1]
    assert f"wrote {outs[0] / 'policy'}" in pair[0][1]
    # the export is the final state
    import jax

    _, params, meta = ck.read_policy(outs[0] / "policy")
    assert meta["steps"] == 20
    for a, b in zip(jax.tree.leaves(params), _spy(tmp, f"{tag}0")[:-1], strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)


def _single(tmp: Path) -> Path:
    """The reference: the same recipe in this process, no jax.distributed."""
    from jaxplace.policy.train import train

    out = tmp / "single"
    train(RECIPE, out, progress=False, quiet=True)
    return out


def test_two_cpu_processes_resume_and_train_as_one(tmp_path):
    # one test, not several on a shared fixture: pytest-xdist could run the costly
    # fixture (a single run and a pair of processes, ~40 s) once on each worker.
    # Two processes resume the single run's step-10 checkpoint, which only process 0's
    # folder holds (with metrics logged past it, from a run that did not reach its
    # next checkpoint), and train to step 20.
    single = _single(tmp_path)
    outs = (tmp_path / "out0", tmp_path / "out1")
    outs[0].mkdir()
    for name in ("ckpt_00000010.msgpack", "train_config.json"):
        shutil.copy(single / name, outs[0] / name)
    (outs[0] / "metrics.jsonl").write_text("".join(
        json.dumps(r) + "\n" for r in _records(single) if r["step"] <= 15))
    pair = _pair(tmp_path, "dp", outs)
    dp = _check_pair(pair, tmp_path, "dp")
    _check_equals_single(dp, single)
    _check_metrics(_records(outs[0]), _records(single))
    _check_only_process_zero_wrote(tmp_path, "dp", pair, outs)


@pytest.mark.heavy
def test_two_processes_from_scratch_equal_the_single_process_run(tmp_path):
    # the whole run distributed (init, step-0 validation, 20 steps): ~35 s more
    single = _single(tmp_path)
    outs = (tmp_path / "out0", tmp_path / "out1")
    pair = _pair(tmp_path, "fresh", outs)
    _check_equals_single(_check_pair(pair, tmp_path, "fresh"), single)
    _check_metrics(_records(outs[0]), _records(single))
    _check_only_process_zero_wrote(tmp_path, "fresh", pair, outs)


def test_a_batch_the_devices_cannot_share_is_one_line_exit_2(tmp_path):
    # 3 graphs a step over 2 devices (one per process)
    recipe = _variant(tmp_path, "odd", graphs=3)
    outs = (tmp_path / "out0", tmp_path / "out1")
    _one_line_error(_pair(tmp_path, "odd", outs, (recipe, recipe)), "graphs", "multiple",
                    "2 devices")
    assert not outs[0].exists() and not outs[1].exists()


def test_processes_with_different_recipes_stop_with_one_line(tmp_path):
    outs = (tmp_path / "out0", tmp_path / "out1")
    pair = _pair(tmp_path, "mixed", outs, (RECIPE, _variant(tmp_path, "seed1", seed=1)))
    _one_line_error(pair, "config", "differs between processes")


@pytest.mark.parametrize("args, env, field", [
    ((None, "2", "0"), {}, "coordinator"),
    (("localhost", "2", "0"), {}, "coordinator"),
    (("localhost:99999", "2", "0"), {}, "coordinator"),
    (("localhost:1234", "two", "0"), {}, "num_processes"),
    (("localhost:1234", "0", "0"), {}, "num_processes"),
    (("localhost:1234", "2", "2"), {}, "process_id"),
    (("localhost:1234", "2", "-1"), {}, "process_id"),
    ((None, None, None), {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "2"},
     "process_id"),
])
def test_bad_cluster_values_name_the_field(args, env, field):
    with pytest.raises(JaxplaceError) as e:
        D.cluster_from(*args, environ=env)
    assert e.value.field == field


def test_cluster_from_flags_then_environment():
    assert D.cluster_from(environ={}) is None
    env = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4",
           "JAX_PROCESS_ID": "3"}
    assert D.cluster_from(environ=env) == D.Cluster("10.0.0.1:1234", 4, 3)
    assert D.cluster_from(None, None, "1", environ=env) == D.Cluster("10.0.0.1:1234", 4, 1)


def test_bad_cluster_flag_is_one_line_exit_2(capsys):
    from jaxplace.cli.main import main

    code = main(["train", str(RECIPE), "--coordinator", "nohost", "--num-processes",
                 "2", "--process-id", "0"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "coordinator" in err and "HOST:PORT" in err, err
