"""The latency objective: instance arrays, the reference list scheduler, the batched JAX
scheduler against it, baselines, Problem/search integration and the CLI."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxplace as jp
from jaxplace.cluster import load_cluster, uniform_cluster
from jaxplace.cluster.times import instance_from
from jaxplace.errors import JaxplaceError
from jaxplace.formats.nodelink import nodelink_data
from jaxplace.graph import CompGraph
from jaxplace.objectives.latency import LatencyInstance, validate_schedule
from jaxplace.objectives.latency import decoder as ldec
from jaxplace.objectives.latency.baselines import BASELINES, eft_greedy
from jaxplace.objectives.latency.reference import kahn_order, list_schedule, makespans

# One compiled shape for every random instance of the property test (compile once).
SPEC = ldec.LatencySpec(N=16, M=32, Din=8, Ds=16, D=3, B=4)
MAX_TENSORS = 32


def _inst(n, tensors, times, mem, cap, bw, lat, tbytes):
    g = CompGraph(np.ones(n), tensors=tensors)
    return LatencyInstance(g, times, mem, cap, bw, lat, tbytes[:g.num_tensors])


@st.composite
def instances(draw, max_n=12, max_d=3):
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    tensors = []
    for u in range(n - 1):
        for _ in range(draw(st.integers(0, 2))):  # 0-2 output tensors, 1-3 consumers
            cs = draw(st.lists(st.integers(u + 1, n - 1), min_size=1, max_size=3))
            tensors.append((u, 1.0, cs))
    tensors = tensors[:MAX_TENSORS]
    g = CompGraph(np.ones(n), tensors=tensors)
    if g.num_nodes > SPEC.N or int(np.diff(g.in_ptr).max(initial=0)) > SPEC.Din:
        tensors = tensors[:4]
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    times = rng.uniform(0.1, 2.0, (n, d))
    times[rng.random((n, d)) < 0.1] = 0.0  # views: zero-time ops tie with their neighbours
    times[rng.random((n, d)) < 0.1] = np.inf  # some ops cannot run on some devices
    mem = rng.uniform(0, 1, n)
    cap = rng.uniform(0.3, 1.0, d) * mem.sum() * draw(st.sampled_from([0.5, 1.0, 4.0]))
    bw = rng.uniform(0.5, 3.0, (d, d))
    lat = rng.uniform(0, 0.2, (d, d)) * draw(st.sampled_from([0.0, 1.0]))
    tb = rng.uniform(0, 2.0, MAX_TENSORS) * (rng.random(MAX_TENSORS) > 0.1)  # some empty
    x = np.round(rng.random(n), draw(st.sampled_from([1, 8])))  # 1 digit: many ties
    return _inst(n, tensors, times, mem, cap, bw, lat, tb), x


def _check_schedule(inst, s):
    if np.isfinite(s.makespan):
        validate_schedule(inst, s)


# -- instance arrays ------------------------------------------------------------------


def test_imported_graph_units():
    """Tensor link-times in us on the import profile turn back into bytes; op times are
    the roofline of each device profile."""
    from jaxplace.importers.builder import GraphBuilder
    from jaxplace.importers.devices import get_device
    from jaxplace.importers.roofline import op_time

    dev = get_device("h100")
    b = GraphBuilder(dev)
    p = b.add_param("w", 4e6)
    _, (t0,) = b.add_node("mm", "MatMul", 2e12, 1e9, 1.0, in_params=[p], out_bytes=[8e6])
    b.add_node("relu", "Relu", 1e6, 1.6e7, 1.0, in_tensors=[t0], out_bytes=[])
    g = b.build({})
    c = load_cluster("moirai_intra")
    inst = instance_from(g, c)
    np.testing.assert_allclose(inst.tensor_bytes, [8e6], rtol=1e-12)
    np.testing.assert_allclose(inst.memory, [4e6, 0.0])
    v100 = c.profiles[0]
    assert inst.times[0, 0] == pytest.approx(op_time(2e12, 1e9, v100, matrix=True))
    assert inst.times[1, 0] == pytest.approx(op_time(1e6, 1.6e7, v100, matrix=False))
    assert inst.times[0, 2] > inst.times[0, 0]  # P100 is slower than V100


def test_work_scaled_and_per_device_times():
    g = CompGraph([1.0, 2.0], [(0, 1)], size_out=[5.0, 0.0])
    c = load_cluster("moirai_inter")
    inst = instance_from(g, c)
    peaks = np.array([p.peak("fp32", matrix=True) for p in c.profiles])
    np.testing.assert_allclose(inst.times[:, 0], [1.0, 2.0])
    np.testing.assert_allclose(inst.times[1], 2.0 * peaks[0] / peaks)
    attrs = {f"time_{nm}": np.array([1.0, 3.0]) * (i + 1) for i, nm in enumerate(c.names)}
    g2 = CompGraph([1.0, 2.0], [(0, 1)], node_attrs=attrs)
    np.testing.assert_allclose(instance_from(g2, c).times[1], [3.0, 6.0, 9.0, 12.0])


def test_memory_does_not_fit():
    g = CompGraph([1.0, 1.0], [(0, 1)], size_param=[3e10, 3e10])
    with pytest.raises(JaxplaceError, match="devices.memory"):
        instance_from(g, load_cluster("moirai_inter"))


# -- reference scheduler --------------------------------------------------------------


def test_hand_example():
    """a -> b: a only runs on dev0; b is fast on dev1; the 4-byte tensor crosses at 2
    bytes/s after 0.5 s latency: b finishes at 1 + 0.5 + 2 + 0.5 = 4 on dev1 (3 + 1 =
    4 on dev0 too: the tie goes to dev0)."""
    g = CompGraph([1, 1], [(0, 1)], size_out=[4.0, 0.0])
    times = np.array([[1.0, np.inf], [3.0, 0.5]])
    bw = np.full((2, 2), 2.0)
    lat = np.full((2, 2), 0.5)
    inst = LatencyInstance(g, times, np.zeros(2), np.full(2, np.inf), bw, lat, [4.0])
    s = list_schedule(inst, np.array([1.0, 0.0]))
    assert s.makespan == 4.0 and list(s.device) == [0, 0] and s.transfers == ()
    inst2 = LatencyInstance(g, np.array([[1.0, np.inf], [3.0, 0.25]]), np.zeros(2),
                            np.full(2, np.inf), bw, lat, [4.0])
    s2 = list_schedule(inst2, np.array([1.0, 0.0]))
    validate_schedule(inst2, s2)
    assert list(s2.device) == [0, 1] and s2.makespan == pytest.approx(3.75)
    assert s2.transfers[0].start == 1.0 and s2.transfers[0].finish == 3.5


def test_no_device_fits_is_inf():
    g = CompGraph([1, 1], [(0, 1)], size_param=[1.0, 1.0])
    inst = LatencyInstance(g, np.ones((2, 2)), [1.0, 1.0], [1.0, 0.5], np.ones((2, 2)),
                           np.zeros((2, 2)), [0.0])
    assert list_schedule(inst, np.zeros(2)).makespan == np.inf  # op 1 fits nowhere
    with jax.enable_x64(True):  # the property test's compiled shape
        assert ldec.evaluate(inst, np.zeros((1, 2)), dtype=jnp.float64, spec=SPEC)[0] == np.inf


def test_no_recompile_same_spec():
    """Instances of one spec share the compiled scheduler."""
    g = CompGraph(np.ones(3), [(0, 1), (0, 2)], size_out=[1.0, 0.0, 0.0])
    insts = [LatencyInstance(g, np.full((3, 2), t), np.zeros(3), np.full(2, np.inf),
                             np.ones((2, 2)), np.zeros((2, 2)), [1.0]) for t in (1.0, 2.0)]
    with jax.enable_x64(True):
        ldec.evaluate(insts[0], np.zeros((1, 3)), dtype=jnp.float64, spec=SPEC)
        before = ldec.score_jit._cache_size()
        got = ldec.evaluate(insts[1], np.zeros((1, 3)), dtype=jnp.float64, spec=SPEC)
        assert ldec.score_jit._cache_size() == before
    assert got[0] == list_schedule(insts[1], np.zeros(3)).makespan


@settings(max_examples=25)
@given(instances())
def test_kahn_matches_reference_kahn(case):
    inst, x = case
    from jaxplace.objectives.throughput.reference import kahn

    np.testing.assert_array_equal(kahn_order(inst.graph, x), kahn(inst.graph, x))


@settings(max_examples=40)
@given(instances())
def test_decoder_equals_reference_float64(case):
    """Same makespan in float64; the reference schedule is valid."""
    inst, x = case
    s = list_schedule(inst, x)
    _check_schedule(inst, s)
    with jax.enable_x64(True):
        got = ldec.evaluate(inst, x[None], dtype=jnp.float64, spec=SPEC)[0]
    # both divide bytes by bandwidth in the same order: equal to the last bit
    assert got == s.makespan or abs(got - s.makespan) <= 1e-12 * s.makespan


def test_decoder_float32_transformer():
    g = jp.generators.generate("transformer", layers=6, d_model=256, seq=128)
    inst = instance_from(g, load_cluster("moirai_intra"))
    # 65 rows: two chunks of LANES-bounded lanes (`score` pads the second)
    X = np.random.default_rng(0).random((65, g.num_nodes)).astype(np.float32)
    ref = makespans(inst, X)
    got = ldec.evaluate(inst, X)
    np.testing.assert_allclose(got, ref, rtol=ldec.FLOAT32_RTOL)


@settings(max_examples=25)
@given(instances(max_n=10, max_d=3))
def test_baselines_valid_on_random_instances(case):
    inst, _ = case
    spans = {}
    for name, fn in BASELINES.items():
        s = fn(inst)
        _check_schedule(inst, s)
        spans[name] = s.makespan
    assert spans["pipeline"] <= spans["single"]


def test_baselines_valid():
    g = jp.generators.generate("transformer", layers=3, d_model=512, seq=512)
    inst = instance_from(g, load_cluster("moirai_intra"))
    spans = {}
    for name, fn in BASELINES.items():
        s = fn(inst)
        validate_schedule(inst, s)
        spans[name] = s.makespan
    # the single-device schedule is a pipeline with one segment
    assert spans["pipeline"] <= spans["single"] * (1 + 1e-9)


# -- Problem and search ---------------------------------------------------------------


def test_problem_validation():
    g = CompGraph([1.0, 1.0], [(0, 1)])
    c = load_cluster("moirai_inter")
    assert jp.Problem(g, cluster=c, objective="latency").k == 4
    assert jp.Problem(g, 3).objective == "throughput"
    with pytest.raises(JaxplaceError, match="objective"):
        jp.Problem(g, 2, objective="speed")
    with pytest.raises(JaxplaceError, match="cluster"):
        jp.Problem(g, 2, objective="latency")
    with pytest.raises(JaxplaceError, match="^k: "):
        jp.Problem(g, 2, cluster=c, objective="latency")
    # throughput on unequal devices (hetero)
    assert jp.Problem(g, cluster=c).objective_impl.name == "throughput-unequal"
    with pytest.raises(JaxplaceError, match="^k: missing"):
        jp.Problem(g)
    assert jp.Problem(g, cluster=uniform_cluster(3)).k == 3
    big = CompGraph([1.0, 1.0], [(0, 1)], size_param=[3e10, 3e10])
    with pytest.raises(JaxplaceError, match="devices.memory"):
        jp.Problem(big, cluster=c, objective="latency")


def _small_problem():
    g = jp.generators.generate("transformer", layers=4, d_model=1024, seq=1024, seed=1)
    return jp.Problem(g, cluster=load_cluster("moirai_intra"), objective="latency")


def test_search_beats_eft():
    pr = _small_problem()
    eft = eft_greedy(pr.latency).makespan
    r = jp.search(pr, budget=600, seed=0)
    validate_schedule(pr.latency, r.schedule)
    assert r.cost == r.schedule.makespan <= eft * (1 + 1e-12)
    for fn in BASELINES.values():  # the default search keeps the best baseline
        assert r.cost <= fn(pr.latency).makespan * (1 + 1e-12)
    assert r.cost >= r.lower_bound * (1 - 1e-9)
    np.testing.assert_array_equal(r.assignment, r.schedule.device)
    for method in ("random", "brkga"):  # brkga shares the default's compiled program
        r2 = jp.search(pr, method, budget=200)
        validate_schedule(pr.latency, r2.schedule)
        assert r2.cost == r2.schedule.makespan
    with pytest.raises(JaxplaceError, match="method"):
        jp.search(pr, "policy")


@pytest.mark.heavy
@pytest.mark.parametrize("method", sorted(set(jp.search.programs.algorithms()) - {"BRKGA"}))
def test_every_evosax_method_schedules(method):
    pr = _small_problem()
    try:
        r = jp.search(pr, method, budget=200)
    except JaxplaceError as e:  # algorithms that need more than a population size
        if "cannot build" in str(e):
            pytest.skip(str(e))
        raise
    validate_schedule(pr.latency, r.schedule)
    assert r.cost == r.schedule.makespan


# -- CLI ------------------------------------------------------------------------------


def _cli(args, capsys):
    from jaxplace.cli.main import main

    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_latency(tmp_path, capsys):
    g = _small_problem().graph
    src = tmp_path / "g.json"
    src.write_text(json.dumps(nodelink_data(g)))
    out = tmp_path / "r.json"
    code, text, err = _cli(["partition", str(src), "--cluster", "moirai_intra",
                            "--objective", "latency", "--budget", "600", "-q",
                            "-o", str(out)], capsys)
    assert code == 0, err
    assert "makespan" in text and "critical path" in text
    data = json.loads(out.read_text())
    assert data["objective"] == "latency" and data["makespan"] > 0
    ops = data["ops"]
    assert len(ops) == g.num_nodes and {"device", "start", "finish"} <= set(ops[0])
    for t in data["transfers"]:
        assert {"tensor", "source", "destination", "start", "finish"} <= set(t)
    assert max(o["finish"] for o in ops) == pytest.approx(data["makespan"])


def test_cli_latency_certify(tmp_path, capsys):
    """--certify: the MILP's bound never exceeds the makespan written, whose schedule
    is valid; on a tiny graph it proves optimality."""
    from jaxplace.cluster.times import instance_from
    from jaxplace.generators import generate
    from jaxplace.objectives.latency.brute import brute_force

    g = generate("regal", seed=2, n=5)
    src = tmp_path / "g.json"
    src.write_text(json.dumps(nodelink_data(g)))
    cluster = tmp_path / "c.json"
    cluster.write_text(json.dumps({"devices": ["t4", "p4", "rtx2080ti"],
                                   "bandwidth": [[0, 2e3, 1e3], [3e3, 0, 2e3], [1e3, 5e3, 0]],
                                   "latency": 1e-7}))
    out = tmp_path / "r.json"
    code, text, err = _cli(["partition", str(src), "--cluster", str(cluster),
                            "--objective", "latency", "--budget", "200", "-q", "--certify",
                            "--certify-time", "20", "-o", str(out)], capsys)
    assert code == 0, err
    data = json.loads(out.read_text())
    cert = data["certificate"]
    assert cert["lower_bound"] <= data["makespan"] * (1 + 1e-9)
    best, _ = brute_force(instance_from(g, load_cluster(cluster)))
    assert cert["lower_bound"] <= best * (1 + 1e-9) and data["makespan"] >= best * (1 - 1e-9)
    assert cert["optimal"] and data["makespan"] == pytest.approx(best, rel=1e-6)
    assert "certificate: lower bound" in text


def test_cli_throughput_cluster(tmp_path, capsys):
    """Throughput with a cluster: identical devices set k; unequal devices get stages
    on distinct devices (`objectives.throughput_unequal`, tests/objectives/throughput_unequal/test_hetero_throughput.py)."""
    src = tmp_path / "g.json"
    src.write_text(json.dumps(nodelink_data(CompGraph([1.0, 2.0, 1.0], [(0, 1), (1, 2)]))))
    code, out, err = _cli(["partition", str(src), "--cluster", "moirai_inter", "--method",
                           "dfs", "-q"], capsys)
    assert code == 0, err
    assert "bottleneck" in out and "device" in out
    cf = tmp_path / "u.json"
    cf.write_text(json.dumps(uniform_cluster(2, "v100").to_dict()))
    code, out, err = _cli(["partition", str(src), "--cluster", str(cf), "--method", "dfs",
                           "-q"], capsys)
    assert code == 0, err
    assert "k=2" in out


@pytest.mark.parametrize("cluster, field", [
    ({"devices": [{"name": "a", "profile": "nope"}]}, "devices[0].profile"),
    ({"devices": ["v100", "v100"], "bandwidth": [[0, 1e9]]}, "bandwidth"),
    ({"devices": ["v100", "v100"], "bandwidth": [[0, -1e9], [1e9, 0]]}, "bandwidth[0][1]"),
    ({"devices": [{"name": "a", "profile": "p4", "memory": 1.0}]}, "devices.memory"),
])
def test_cli_bad_cluster(tmp_path, capsys, cluster, field):
    src = tmp_path / "g.json"
    g = CompGraph([1.0, 1.0], [(0, 1)], size_param=[8.0, 8.0])
    src.write_text(json.dumps(nodelink_data(g)))
    cf = tmp_path / "c.json"
    cf.write_text(json.dumps(cluster))
    code, _, err = _cli(["partition", str(src), "--cluster", str(cf), "--objective",
                         "latency", "-q"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert field in lines[0] and str(cf) in lines[0]
