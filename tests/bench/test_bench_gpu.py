"""`jaxplace bench gpu` at its tiny size on the CPU (the figures themselves are the GPU
run's; here: the command runs, writes its JSON and table, and its errors are real)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from jaxplace.bench import BENCHES
from jaxplace.bench.gpu import markdown, max_rel_error


def _bench(tmp_path, *extra):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "jaxplace", "bench", "gpu", "--size", "tiny",
                        "--out", str(tmp_path), *extra], env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((tmp_path / "bench_gpu.json").read_text())
    return rec, (tmp_path / "bench_gpu.md").read_text(), r.stdout


def test_registered():
    assert "gpu" in BENCHES


def test_max_rel_error():
    assert max_rel_error([1.0, np.inf], [1.0, np.inf]) == 0.0
    assert max_rel_error([1.0, 2.0], [1.0, np.inf]) == np.inf
    assert max_rel_error([1.1, 2.0], [1.0, 2.0]) == pytest.approx(0.1)


def test_tiny_decoder_part(tmp_path):
    rec, md, out = _bench(tmp_path, "--parts", "decoder")
    assert rec["size"] == "tiny" and rec["machine"]["platform"] == "cpu"
    rows = rec["decoder"]
    assert {r["impl"] for r in rows} == {"lanes", "fused", "sparse", "sparse-indexed",
                                         "sparse-tau"}
    for r in rows:
        assert "error" not in r and "skipped" not in r, r
        assert r["rate"] > 0
        # float32 against the float64 reference (FLOAT32_RTOL); the bounded kernel
        # exact below tau
        assert r["max_rel_error"] <= 1e-5
        if r["impl"] != "lanes":  # the counted work per candidate
            assert r["elem_ops"] > 0
    ops = {r["impl"]: r["elem_ops"] for r in rows}
    assert ops["sparse-indexed"] < ops["sparse"] < ops["fused"]
    assert 0 <= next(r for r in rows if r["impl"] == "sparse-tau")["above_tau"] <= 1
    assert re.search(r"\| fused +\|", md) and re.search(r"\| sparse-tau +\|", md)
    assert md.strip() in out
    assert "train" not in rec and "suite" not in rec and "islands" not in rec


def test_bad_part_is_one_line_exit_2(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-m", "jaxplace", "bench", "gpu", "--parts", "nope",
                        "--out", str(tmp_path)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "nope" in r.stderr and "Traceback" not in r.stderr


def test_markdown_of_failed_and_skipped_parts():
    rec = dict(size="gpu", machine=dict(date="d", device="H100", platform="gpu", devices=1,
                                        jax="0", host="h", cpus=16, load=[0.0, 0, 0]),
               decoder=[dict(n=200, impl="fused", P=10, error="CompileError: no"),
                        dict(n=200, impl="lanes", P=10, skipped="predicted 99 s > 60 s")],
               train=dict(recipe="r.json", error="ValueError: x"),
               suite=dict(count=30, error="JaxplaceError: worker failed"),
               islands=dict(count=30, error="XlaRuntimeError: out of memory"))
    md = markdown(rec)
    assert "CompileError: no" in md and "predicted 99 s" in md
    assert "ValueError: x" in md and "worker failed" in md and "out of memory" in md


@pytest.mark.heavy
def test_tiny_all_parts(tmp_path):
    """Training step, the suite (one graph, C++ peer when g++ is there) and the island
    search: minutes."""
    rec, md, _ = _bench(tmp_path)
    assert rec["train"]["step_s"] > 0, rec["train"]
    su = rec["suite"]
    assert "error" not in su, su
    assert len(su["many"]["costs"]) == 1 and np.isfinite(su["many"]["costs"][0])
    if "total_s" in su["cpp"]:
        assert su["cost_ratio"] > 0
    assert "Regal-time suite" in md
    (isl,) = rec["islands"]  # one row: the size's shape, the library's decoder
    assert "error" not in isl and isl["repeatable"] and np.isfinite(isl["costs"][0]), isl
    assert isl["impl"] == "auto" and isl["impl_used"] in ("lanes", "-")  # CPU: lanes
    if "total_s" in su["cpp"]:
        assert isl["cost_ratio"] > 0


def test_suite_part_gives_bench_batch_every_option_it_reads(monkeypatch):
    """The suite part builds bench batch's arguments; an option added there (as
    `--group` was) must not break it (the H200 run of 2026-11-27 lost its suite to
    that)."""
    import inspect
    import re

    from jaxplace.bench import batch, gpu, search_time

    read = set(re.findall(r"\bargs\.([a-z_]+)", inspect.getsource(batch._run_many)))
    assert {"group", "cache", "max_programs"} <= read
    seen = {}

    def fake_many(args):
        seen.update(vars(args))
        missing = read - set(vars(args))
        assert not missing, missing
        return dict(total_s=1.0, import_s=0.1, cold_s=0.9, warm_s=0.5, programs_compiled=1,
                    costs=[2.0], warm_costs=[2.0], devices=1)

    monkeypatch.setattr(batch, "_run_many", fake_many)
    monkeypatch.setattr(search_time, "run_cpp",
                        lambda args, ks: dict(total_s=2.0, build_s=0.0, costs=[2.0]))
    out = gpu.suite_rows(1, 0)
    assert seen["count"] == 1 and seen["cache"] == "fresh"
    assert out["cost_ratio"] == 1.0 and out["wall_ratio_cold"] == 0.5


def test_islands_part_sweeps_shapes_and_decoders(monkeypatch, tmp_path):
    """`--islands` (repeated) x `--island-impls`: one row per pair, in that order, each
    written as it finishes; programs shared between rows are marked; without the suite
    part the C++ peer runs alone for the cost column; a failing row is recorded and
    the next one runs."""
    import argparse

    from jaxplace.bench import gpu

    calls = []

    def fake_row(count, seed, shape, cpp, impl="auto", polish=None, refine_steps=None):
        calls.append((shape, impl, cpp, polish, refine_steps))
        if impl == "fused" and shape[2] == 3:
            raise RuntimeError("kernel refused")
        return dict(count=count, islands=shape[0], population=shape[1],
                    generations=shape[2], budget=shape[0] * shape[1] * (shape[2] + 1),
                    impl=impl, impl_used="lanes" if impl == "auto" else impl,
                    evaluations=10.0, cold_s=2.0, warm_s=1.0, compile_s=1.0,
                    costs=[1.0], repeatable=True, cost_ratio=0.5)

    monkeypatch.setattr(gpu, "islands_row", fake_row)
    monkeypatch.setattr(gpu, "cpp_costs", lambda count, seed: dict(costs=[2.0], total_s=3.0,
                                                                    build_s=0.0))
    p = argparse.ArgumentParser()
    gpu.add_arguments(p)
    args = p.parse_args(["--size", "tiny", "--parts", "islands", "--out", str(tmp_path),
                         "--islands", "2x8x12", "--islands", "2x8x20", "--islands", "2x8x3",
                         "--island-impls", "fused,auto"])
    assert gpu.run(args) == 0
    rec = json.loads((tmp_path / "bench_gpu.json").read_text())
    rows = rec["islands"]
    assert [(r["generations"], r["impl"]) for r in rows] == [
        (12, "fused"), (12, "auto"), (20, "fused"), (20, "auto"), (3, "fused"), (3, "auto")]
    assert [c[2] for c in calls] == [[2.0]] * 6 and rec["islands_cpp"]["total_s"] == 3.0
    # one program per (islands, population, decoder): generations do not compile
    assert [r["compiled_before"] for r in rows] == [False, False, True, True, True, True]
    assert "kernel refused" in rows[4]["error"] and "error" not in rows[5]
    md = (tmp_path / "bench_gpu.md").read_text()
    assert "2 x 8 x 20" in md and "kernel refused" in md and "C++ brkga-10000" in md
    assert {(c[3], c[4]) for c in calls} == {(None, None)}  # the library's defaults


def test_islands_rows_cross_polish_and_refinement(monkeypatch, tmp_path):
    """--island-polish x --refine-steps: one row each, passed through; bad values are
    one-line errors naming the option."""
    import argparse

    from jaxplace.bench import gpu
    from jaxplace.errors import JaxplaceError

    calls = []

    def fake_row(count, seed, shape, cpp, impl="auto", polish=None, refine_steps=None):
        calls.append((polish, refine_steps))
        return dict(count=count, islands=shape[0], population=shape[1],
                    generations=shape[2], budget=1, impl=impl, impl_used="lanes",
                    polish="auto" if polish is None else ("on" if polish else "off"),
                    refine_steps=refine_steps or 0, refined=0, evaluations=1.0,
                    cold_s=2.0, warm_s=1.0, compile_s=1.0, costs=[1.0], repeatable=True)

    monkeypatch.setattr(gpu, "islands_row", fake_row)
    monkeypatch.setattr(gpu, "cpp_costs", lambda count, seed: dict(skipped="no g++"))
    p = argparse.ArgumentParser()
    gpu.add_arguments(p)
    args = p.parse_args(["--size", "tiny", "--parts", "islands", "--out", str(tmp_path),
                         "--island-polish", "off,auto", "--refine-steps", "0,16"])
    assert gpu.run(args) == 0
    assert calls == [(False, 0), (False, 16), (None, 0), (None, 16)]
    md = (tmp_path / "bench_gpu.md").read_text()
    assert "device refinement rounds" in md and "16 (0 improved)" in md
    for flag, bad in (("--island-polish", "maybe"), ("--refine-steps", "-1")):
        args = p.parse_args(["--size", "tiny", "--parts", "islands", "--out",
                             str(tmp_path / "x"), flag, bad])
        with pytest.raises(JaxplaceError, match=flag):
            gpu.run(args)
        assert not (tmp_path / "x").exists()


def test_cpu_suite_part_runs_the_worker_on_cpus(monkeypatch):
    """The CPU's figure: bench batch's worker under JAX_PLATFORMS=cpu, the variable
    restored after."""
    import os

    from jaxplace.bench import batch, gpu, search_time

    seen = []

    def fake_many(args):
        seen.append(os.environ.get("JAX_PLATFORMS"))
        return dict(total_s=1.0, import_s=0.1, cold_s=0.9, warm_s=0.5, programs_compiled=1,
                    costs=[2.0], warm_costs=[2.0], devices=1)

    monkeypatch.setattr(batch, "_run_many", fake_many)
    monkeypatch.setattr(search_time, "run_cpp",
                        lambda args, ks: dict(total_s=2.0, build_s=0.0, costs=[2.0]))
    monkeypatch.setenv("JAX_PLATFORMS", "gpu")
    out = gpu.suite_rows(1, 0, platform="cpu")
    assert seen == ["cpu"] and os.environ["JAX_PLATFORMS"] == "gpu"
    assert out["mode"] == "default" and out["platform"] == "cpu" and out["repeatable"]


@pytest.mark.parametrize("text", ["4x1024", "4x1024x", "0x8x2", "4x2x2", "axbxc"])
def test_bad_island_shape_is_refused(text):
    from jaxplace.bench.gpu import island_shape
    from jaxplace.errors import JaxplaceError

    with pytest.raises(JaxplaceError, match="--islands"):
        island_shape(text)
    assert island_shape("4X1024x20") == (4, 1024, 20)
