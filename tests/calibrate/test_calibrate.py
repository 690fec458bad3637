"""jaxplace.calibrate and measured device profiles: profile files (`get_device(path)`,
one-line errors), the stage cost model against a plain per-op loop and against the
planner's own roofline work, the fit recovering known parameters, leave-one-out on
synthetic measurements, the link fit, the boundary bytes against brute force, a real
stage timing of a split that computes what the module computes, and the CLI's errors.
The full measured calibration is a heavy test."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.cli.main import main
from jaxplace.importers.devices import (
    get_device,
    load_profile,
    profile_from_dict,
    save_profile,
)

torch = pytest.importorskip("torch")

from jaxplace.calibrate import (  # noqa: E402
    OpTable,
    StageSample,
    fit_profile,
    leave_one_out,
    op_table,
    stage_times,
)
from jaxplace.calibrate.api import ModelMeasurement  # noqa: E402
from jaxplace.calibrate.fit import PARAMS, fit_params, with_params  # noqa: E402
from jaxplace.calibrate.micro import fit_link  # noqa: E402


def test_profile_file_round_trip_and_lookup_by_path(tmp_path):
    prof = with_params(get_device("cpu"), [5e10, 2e9, 4e9, 1e-4, 5e-5], name="mine",
                       calibration={"why": "test"})
    path = tmp_path / "mine.json"
    save_profile(prof, path)
    back = get_device(str(path))
    assert back == load_profile(path)
    assert back.peak("fp32", matrix=True) == 5e10 and back.backward_launch_s == 5e-5
    assert back.calibration == {"why": "test"} and back.name == "mine"
    # overrides still apply to a profile read from a file
    assert get_device(path, launch_us=3).launch_s == 3e-6


@pytest.mark.parametrize("change, field", [
    ({"format": "x"}, "format"), ({"mem_bw": -1}, "mem_bw"), ({"mem_bw": "fast"}, "mem_bw"),
    ({"launch_s": float("nan")}, "launch_s"), ({"matrix": {}}, "matrix"),
    ({"matrix": {"fp99": 1e9}}, "matrix.fp99"), ({"vector": {"fp32": 0}}, "vector.fp32")])
def test_bad_profile_fields_are_one_clear_error(change, field):
    d = {**get_device("cpu").to_dict(), **change}
    with pytest.raises(jp.JaxplaceError) as err:
        profile_from_dict(d, "p.json")
    assert f"p.json: {field}:" in str(err.value) and "\n" not in str(err.value)


def test_a_missing_profile_file_is_one_clear_error(tmp_path):
    with pytest.raises(jp.JaxplaceError, match="no such file"):
        get_device(str(tmp_path / "none.json"))


def _random_table(rng, n=40, k=3):
    launched = rng.random(n) < 0.8
    return OpTable(rng.uniform(0, 5e7, n) * launched, rng.uniform(0, 4e6, n) * launched,
                   rng.random(n) < 0.4, launched, np.sort(rng.integers(0, k, n)))


def _reference_stage_times(table, p):
    """Plain per-op loop, float64."""
    pm, pv, bw, launch, launch_b = p
    k = table.num_stages
    f, b = [0.0] * k, [0.0] * k
    for i in range(len(table.flops)):
        if not table.launched[i]:
            continue
        peak = pm if table.matrix[i] else pv
        f[table.stage[i]] += max(table.flops[i] / peak, table.nbytes[i] / bw) + launch
        b[table.stage[i]] += max(2 * table.flops[i] / peak, 2 * table.nbytes[i] / bw) + launch_b
    return np.array(f), np.array(b)


@pytest.mark.parametrize("seed", range(4))
def test_stage_times_equal_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    table = _random_table(rng)
    p = (rng.uniform(1e10, 1e11), rng.uniform(1e9, 1e10), rng.uniform(1e9, 1e10),
         rng.uniform(0, 1e-4), rng.uniform(0, 1e-4))
    got = stage_times(table, p)
    ref = _reference_stage_times(table, p)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12)


def _mlp():
    from jaxplace.torch.models import UnequalMLP

    torch.manual_seed(0)
    return UnequalMLP(widths=(32, 64, 16, 48, 8)).eval(), (torch.randn(4, 32),)


def test_forward_times_are_the_planners_roofline_work():
    """The calibrated forward is the number the planner splits: graph.work per stage."""
    from jaxplace.torch import from_torch

    m, args = _mlp()
    prof = with_params(get_device("cpu"), [3e10, 4e9, 5e9, 2e-5, 7e-5], name="p",
                       calibration={})
    graph, ops = from_torch(m, args, device=prof)
    stage = np.minimum(np.arange(graph.num_nodes) * 3 // graph.num_nodes, 2)
    fwd, _ = stage_times(op_table(graph, stage), prof)
    work = np.bincount(stage, weights=graph.work) / 1e6
    np.testing.assert_allclose(fwd, work, rtol=1e-9)


def _synthetic(rng, params, models=("a", "b", "c")):
    out = {}
    for j, name in enumerate(models):
        samples = []
        for k in (2, 3):
            t = _random_table(rng, n=30 + 10 * j, k=k)
            f, b = stage_times(t, tuple(params))
            samples.append(StageSample(t, f, b, name))
        out[name] = ModelMeasurement(name, tuple(samples))
    return out


def test_fit_recovers_the_parameters_that_made_the_times():
    rng = np.random.default_rng(0)
    true = np.array([6e10, 3e9, 8e9, 1.5e-4, 6e-5])
    data = _synthetic(rng, true)
    samples = [s for m in data.values() for s in m.samples]
    # the overheads, rates given: exact
    start = true.copy()
    start[3:] = [1e-6, 1e-6]
    got = fit_params(samples, start, ("launch_s", "backward_launch_s"))
    np.testing.assert_allclose(got, true, rtol=1e-6)
    # everything, from the nominal cpu profile: the times are matched (the rates of ops
    # that never bind are not determined, so compare predictions, not parameters)
    prof = fit_profile(samples, get_device("cpu"))
    assert prof.calibration["rms_log_error"] < 1e-3
    assert set(prof.calibration["fitted"]) == set(PARAMS)


def test_leave_one_out_on_synthetic_measurements():
    rng = np.random.default_rng(1)
    true = np.array([6e10, 3e9, 8e9, 1.5e-4, 6e-5])
    data = _synthetic(rng, true)

    class Micro:  # rates known, overheads not: what the microbenchmarks give
        link_bw = None

        def params(self):
            return np.array([6e10, 3e9, 8e9, 1e-6, 4e-6])

        def to_dict(self):
            return {}

    held = leave_one_out(data, "cpu", micro=Micro())
    assert [h.model for h in held] == ["a", "b", "c"]
    for h in held:
        assert h.error_after < 1e-6 < h.error_before
        assert h.error_micro > 1e-3  # the overheads matter: micro alone is off
        assert h.model not in h.profile.calibration["models"]


def test_link_fit():
    lat, bw = 5e-5, 2e9
    one_way = {n: lat + n / bw for n in (4, 4096, 65536, 1 << 20, 4 << 20)}
    one_way[4 << 20] *= 10  # one late message: the median ignores it
    got = fit_link(one_way)
    assert got["latency_s"] == pytest.approx(lat + 4 / bw)
    assert got["bandwidth"] == pytest.approx(bw, rel=1e-3)


def test_boundary_bytes_against_brute_force():
    from jaxplace.calibrate.step import boundary_bytes
    from jaxplace.importers.builder import US

    g = jp.CompGraph([1] * 5, tensors=[(0, 2.0, [1, 4]), (1, 3.0, [2]), (2, 5.0, [3]),
                                       (3, 7.0, [4])])
    prof = get_device("cpu")
    stage = np.array([0, 0, 1, 2, 2])
    got = boundary_bytes(g, stage, prof)
    # tensor 0 (stage 0 -> 2) crosses both, 1 (0 -> 1) the first, 2 (1 -> 2) the second
    expect = np.array([2.0 + 3.0, 2.0 + 5.0]) * prof.link_bw / US
    np.testing.assert_allclose(got, expect)


def test_measured_stages_compute_the_module_and_take_time():
    from torch.distributed.pipelining import SplitPoint

    from jaxplace.calibrate import stage_modules, time_stages

    m, args = _mlp()
    stages = stage_modules(m, args, {"layers.2": SplitPoint.BEGINNING})
    assert len(stages) == 2
    x = args
    with torch.no_grad():
        for s in stages:
            out = s(*x)
            x = out if isinstance(out, tuple) else (out,)
        torch.testing.assert_close(x[0], m(*args))
    st = time_stages(stages, args, repeats=2, warmup=1)
    assert st.fwd.shape == st.bwd.shape == (2,)
    assert np.all(st.fwd > 0) and np.all(st.bwd > 0) and np.all(st.out_bytes > 0)
    with pytest.raises(jp.JaxplaceError, match="clock"):
        time_stages(stages, args, clock="sundial")


def test_plan_pipeline_takes_a_profile_file(tmp_path):
    from jaxplace.torch import plan_pipeline

    m, args = _mlp()
    prof = with_params(get_device("cpu"), [3e10, 4e9, 5e9, 2e-5, 7e-5], name="fitted",
                       calibration={})
    path = tmp_path / "fitted.json"
    save_profile(prof, path)
    plan = plan_pipeline(m, args, k=2, device=str(path))
    assert plan.device == "fitted"
    direct = plan_pipeline(m, args, k=2, device=prof)
    np.testing.assert_allclose(plan.stage_times, direct.stage_times)


@pytest.mark.parametrize("argv, msg", [
    (["--models", "gpt,nope"], "unknown models ['nope']"),
    (["--ks", "2,x"], "--ks"), (["--ks", "0"], "--ks"),
    (["--base", "nodevice"], "unknown device"), (["--models", "gpt", "--loo"], "--loo"),
    (["--loop", "nope"], "unknown model 'nope'"), (["--loop", "gpt", "-k", "1"], "-k")])
def test_calibrate_cli_refuses_bad_input(tmp_path, capsys, argv, msg):
    out = tmp_path / "p.json"
    assert main(["calibrate", "-o", str(out), "--no-micro", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and msg in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.heavy
def test_calibrate_cli_writes_a_profile_plans_accept(tmp_path, capsys):
    """The measured calibration end to end (microbenchmarks, 3 models; minutes)."""
    out = tmp_path / "p.json"
    assert main(["calibrate", "-o", str(out), "--ks", "2", "--repeats", "3", "--loo"]) == 0
    text = capsys.readouterr().out
    assert "held out" in text
    prof = get_device(str(out))
    fitted = json.loads(out.read_text())["calibration"]["fitted"]
    assert all(math.isfinite(v) and v > 0 for v in fitted.values())
    assert prof.launch_s == fitted["launch_s"]


def _regret_case():
    from types import SimpleNamespace

    from jaxplace.torch import from_torch, module_boundaries

    m, args = _mlp()
    prof = with_params(get_device("cpu"), [3e10, 4e9, 5e9, 2e-5, 7e-5], name="p",
                       calibration={})
    _, ops = from_torch(m, args, device=prof)
    fqns = list(module_boundaries(ops).values())

    def plan(start):
        return SimpleNamespace(stage_starts=("", start), schedule="gpipe",
                               n_microbatches=4, n_virtual=1)

    return m, args, prof, fqns, plan


def test_regret_is_zero_for_the_best_split_and_positive_for_a_worse_one():
    from jaxplace.calibrate import regret

    m, args, prof, fqns, plan = _regret_case()
    by_split = {f: regret(m, args, plan(f), prof, sigma=0.0, samples=1)[0] for f in fqns}
    assert min(by_split.values()) == 0.0  # the best split loses nothing to itself
    assert max(by_split.values()) > 0.0 and all(v >= 0 for v in by_split.values())
    best = min(by_split, key=by_split.get)
    mean, worst = regret(m, args, plan(best), prof, sigma=0.3, samples=20, seed=1)
    assert 0.0 <= mean <= worst
    assert regret(m, args, plan(best), prof, sigma=0.3, samples=20, seed=1) == (mean, worst)


def test_from_jax_and_the_cli_take_a_profile_file(tmp_path, capsys):
    import jax.numpy as jnp

    prof = with_params(get_device("cpu"), [3e10, 4e9, 5e9, 2e-5, 7e-5], name="fitted",
                       calibration={})
    path = tmp_path / "fitted.json"
    save_profile(prof, path)

    def f(w, x):
        return jnp.tanh(x @ w) @ w.T

    w, x = jnp.ones((64, 64)), jnp.ones((8, 64))
    by_path = jp.from_jax(f, w, x, device=str(path))
    direct = jp.from_jax(f, w, x, device=prof)
    np.testing.assert_allclose(by_path.work, direct.work)
    assert by_path.meta["device"]["name"] == "fitted"
    # the CLI's --device: a graph from a JAX function is what `import` writes; the flag
    # is checked for every input, so `info` on a JSON graph reads the profile too
    g = tmp_path / "g.json"
    g.write_text(json.dumps({"directed": True, "multigraph": False, "graph": {},
                             "nodes": [{"id": 0, "work": 1.0}, {"id": 1, "work": 2.0}],
                             "links": [{"source": 0, "target": 1}]}))
    assert main(["info", str(g), "--device", str(path)]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    capsys.readouterr()
    assert main(["info", str(g), "--device", str(bad)]) == 2
    assert "format" in capsys.readouterr().err
