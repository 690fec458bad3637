"""Spatial (intra-layer) plans: interval arithmetic, the graph optimizer, axis choice,
and proof by execution (each device's part run on its own slice plus the halos the
plan sends, reassembled, compared with the unsplit model).

Float tolerance: parts and the reference are both float32 XLA convolutions, but a
device's convolution sees a different (smaller) input, so XLA may pick another
summation order: rtol=1e-4, atol=1e-5 covers that for unit-scale activations
(fan-in-scaled weights keep them near 1); a dropped halo gives NaN, never close.
"""

import itertools
import json

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from jaxplace.cli.main import main
from jaxplace.cluster import load_cluster, uniform_cluster
from jaxplace.spatial.api import plan_spatial, to_json
from jaxplace.spatial.execute import execute, init_params, reference
from jaxplace.spatial.intervals import (
    even_shares,
    output_size,
    paper_bounds,
    shares_to_intervals,
    true_kernel,
    weighted_shares,
    window_input,
)
from jaxplace.spatial.layers import required_box
from jaxplace.spatial.models import NetBuilder, resnet18, yolo
from jaxplace.spatial.optimize import ALL_AXES, SPLIT_AXES, SpatialProblem
from jaxplace.spatial.pipeline import best_pipeline
from jaxplace.spatial.plan import (
    INPUT,
    OUTPUT,
    Plan,
    classify,
    initial_transfers,
    optimized_transfers,
    split,
    total_bytes,
)

RTOL, ATOL = 1e-4, 1e-5
# Examples that run XLA are slow to shrink (each step compiles): report them as drawn.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


def sub_cluster(cluster, k: int):
    """The first k devices of a cluster and their links."""
    from jaxplace.cluster import Cluster

    return Cluster(cluster.devices[:k], cluster.bandwidth[:k, :k].copy(),
                   cluster.latency[:k, :k].copy(), name=f"{cluster.name}[:{k}]")


def close(out, ref) -> bool:
    return all(np.allclose(out[k], ref[k], rtol=RTOL, atol=ATOL) for k in ref)


# -- interval arithmetic -------------------------------------------------------------

def test_eq1_round_robin_example():
    assert even_shares(8, 3) == [3, 3, 2]  # the paper's 8x8 map on three nodes
    assert even_shares(2, 4) == [1, 1, 0, 0]
    assert weighted_shares(8, [1, 1, 1]) == [3, 3, 2]
    assert weighted_shares(10, [3, 1, 1]) == [6, 2, 2]
    assert true_kernel(3, 2) == 5 and true_kernel(3, 3) == 7  # Fig. 3


@given(st.integers(0, 50), st.lists(st.floats(0, 10), min_size=1, max_size=5))
def test_weighted_shares_sum_and_proportion(n, weights):
    s = weighted_shares(n, weights)
    assert sum(s) == n and min(s) >= 0
    if sum(weights) > 0:
        for x, w in zip(s, weights, strict=True):
            assert abs(x - n * w / sum(weights)) < 1 + 1e-9
    if len(set(weights)) == 1:
        assert s == even_shares(n, len(weights))


@given(n_in=st.integers(1, 30), k=st.integers(1, 5), s=st.integers(1, 3),
       d=st.integers(1, 2), p0=st.integers(0, 4), p1=st.integers(0, 4),
       parts=st.integers(1, 4))
def test_window_input_matches_brute_force(n_in, k, s, d, p0, p1, parts):
    n_out = output_size(n_in, k, s, d, p0, p1)
    if n_out < 1:
        return
    for a, b in shares_to_intervals(even_shares(n_out, parts)):
        (lo, hi), pad_lo, pad_hi = window_input((a, b), k, s, d, p0, n_in)
        if b <= a:
            assert (lo, hi) == (0, 0)
            continue
        taps = {r * s - p0 + t * d for r in range(a, b) for t in range(k)}
        inside = [x for x in taps if 0 <= x < n_in]
        # an envelope: every row read is inside; exact at both ends when no window
        # reaches into the padding (rows between may still be unread when s > tK)
        assert all(lo <= x < hi for x in inside)
        if min(taps) >= 0 and max(taps) < n_in:
            assert (lo, hi) == (min(taps), max(taps) + 1)
        assert pad_lo + (hi - lo) + pad_hi == (b - a - 1) * s + true_kernel(k, d)


def test_paper_equations_agree_without_slack_and_miss_rows_with_it():
    # stride 1, 'same' padding: no spare padded row; Eqs. 4-5 give the exact rows
    shares = even_shares(8, 2)
    exact = [window_input(iv, 3, 1, 1, 1, 8)[0] for iv in [(0, 4), (4, 8)]]
    assert paper_bounds(shares, 3, 1, 1, 1, 1) == exact == [(0, 5), (3, 8)]
    # stride 2 over 8 rows with padding 1: the padded map has a spare row; Eq. 5
    # ends the last device's input one row early (row 7 is read by output row 3)
    n_out = output_size(8, 3, 2, 1, 1, 1)
    shares = even_shares(n_out, 2)
    assert paper_bounds(shares, 3, 2, 1, 1, 1)[1] == (3, 7)
    assert window_input((2, 4), 3, 2, 1, 1, 8)[0] == (3, 8)


def test_required_box_grouped_and_concat_channels():
    b = NetBuilder(8, 10, 10)
    x = b.conv("input", 12, 3, groups=4)  # 3 out / 2 in channels per group
    y = b.conv("input", 4, 1)
    c = b.concat(x, y)
    conv, _, cat = b.layers
    box, pad = required_box(conv, 0, ((3, 7), (0, 5), (0, 10)))
    assert box == ((2, 6), (0, 6), (0, 10)) and pad == (1, 1, 0, 1)
    assert required_box(cat, 0, ((10, 14), (0, 10), (0, 10)))[0][0] == (10, 12)
    assert required_box(cat, 1, ((10, 14), (0, 10), (0, 10)))[0][0] == (0, 2)
    assert c == "concat2"


# -- random CNNs: proof by execution ---------------------------------------------------

@st.composite
def random_cnn(draw):
    """A small random CNN: a chain of window ops with a residual add or a concat."""
    c0 = draw(st.integers(1, 3))
    h, w = draw(st.integers(8, 20)), draw(st.integers(8, 20))
    b = NetBuilder(c0, h, w)
    x, layers_wanted = "input", draw(st.integers(2, 4))
    for _ in range(layers_wanted):
        _, cin, hh, ww = b.shapes[x]
        k = draw(st.integers(1, 5))
        s = draw(st.integers(1, 3))
        d = draw(st.integers(1, 2))
        tk = true_kernel(k, d)
        pad = tuple(draw(st.integers(0, tk - 1)) for _ in range(4))
        if output_size(hh, k, s, d, pad[0], pad[2]) < 1 or \
                output_size(ww, k, s, d, pad[1], pad[3]) < 1:
            continue
        kind = draw(st.sampled_from(["conv", "conv", "dw", "max", "avg"]))
        if kind == "conv":
            g = draw(st.sampled_from([g for g in (1, 2, 3) if cin % g == 0]))
            x = b.conv(x, g * draw(st.integers(1, 3)), k, s, pad, d, groups=g)
        elif kind == "dw":
            x = b.conv(x, cin * draw(st.integers(1, 2)), k, s, pad, d, groups=cin)
        else:
            x = b.pool(x, k, s, pad, kind=kind, dilation=d)
        x = b.act(x, draw(st.sampled_from(["relu", "bn", "leaky"])))
    _, cin, _, _ = b.shapes[x]
    branch = draw(st.sampled_from(["add", "concat", "up", "none"]))
    if branch == "add":
        y = b.conv(x, cin, 3, 1, 1)
        x = b.add(x, y)
    elif branch == "concat":
        y = b.pool(x, 3, 1, 1, kind="max")
        x = b.concat(y, b.conv(x, 2, 1, 1, 0))
    elif branch == "up":
        x = b.upsample(b.conv(x, 2, 1, 1, 0), 2)
    return b


def _check_random_cnn(net, nd, data):
    layers = net.layers
    axes = [data.draw(st.sampled_from(["h", "w", "c", None])) for _ in layers]
    weights = data.draw(st.lists(st.floats(0.2, 3.0), min_size=nd, max_size=nd))
    host = data.draw(st.integers(0, nd - 1))
    plan = Plan(tuple(layers), tuple(split(la, a, weights, owner=host)
                                     for la, a in zip(layers, axes, strict=True)), nd, host)
    params = init_params(layers, seed=1)
    x = np.random.default_rng(2).standard_normal(net.shapes["input"]).astype(np.float32)
    ref = reference(layers, params, x, every_layer=True)
    opt = optimized_transfers(plan)
    assert close(execute(plan, params, x, opt, every_layer=True), ref)
    init = initial_transfers(plan)
    assert total_bytes(opt) <= total_bytes(init) + 1e-9
    halos = [t for t in opt if t.tensor != INPUT and t.consumer != OUTPUT]
    if halos:  # mutation: a plan that drops a needed halo must fail the check
        dropped = data.draw(st.sampled_from(halos))
        result = execute(plan, params, x, [t for t in opt if t is not dropped],
                         every_layer=True)
        # intervals are envelopes (see window_input): a piece may hold only rows no
        # window reads; one holding a row that is read breaks its consumer's output
        # (checked on every layer: later layers may not read the broken cells)
        if _reads_some(plan, dropped):
            assert not close(result, ref)


def _reads_some(plan, t) -> bool:
    """Whether a consumer on t.dst reads a cell of t's boxes (brute-force taps)."""
    index = plan.index()
    for name in t.consumer.split(","):
        la = plan.layers[index[name]]
        out = plan.placements[index[name]].out_boxes(la, plan.num_devices)[t.dst]
        for k, src in enumerate(la.inputs):
            if src != t.tensor:
                continue
            chans = required_box(la, k, out)[0][0]
            rows = []
            for ax in (1, 2):
                a, b = out[ax]
                if la.op in ("conv", "maxpool", "avgpool", "sumpool"):
                    s, d, kk = la.stride[ax - 1], la.dilation[ax - 1], la.kernel[ax - 1]
                    p0 = la.padding[ax - 1]
                    rows.append({r * s - p0 + i * d for r in range(a, b) for i in range(kk)})
                elif la.op == "upsample":
                    rows.append({r // la.stride[ax - 1] for r in range(a, b)})
                else:
                    rows.append(set(range(a, b)))
            for box in t.boxes:
                if (max(box[0][0], chans[0]) < min(box[0][1], chans[1])
                        and any(box[1][0] <= r < box[1][1] for r in rows[0])
                        and any(box[2][0] <= c < box[2][1] for c in rows[1])):
                    return True
    return False


@settings(max_examples=5, phases=NO_SHRINK)
@given(net=random_cnn(), nd=st.integers(1, 4), data=st.data())
def test_random_cnn_split_execution_matches_unsplit(net, nd, data):
    _check_random_cnn(net, nd, data)


@pytest.mark.heavy
@settings(max_examples=60, phases=NO_SHRINK)
@given(net=random_cnn(), nd=st.integers(1, 4), data=st.data())
def test_random_cnn_split_execution_many(net, nd, data):
    _check_random_cnn(net, nd, data)


def test_initial_full_sync_plan_is_also_correct_and_moves_more():
    b = NetBuilder(2, 16, 12)
    x = b.conv("input", 3, 3, 1, 1)
    x = b.pool(x, 3, 2, 1, kind="max")
    x = b.conv(x, 4, 3, 1, pad=2, dilation=2)
    plan = Plan(tuple(b.layers), tuple(split(la, "h", [1, 1, 1]) for la in b.layers), 3)
    params = init_params(b.layers)
    x = np.random.default_rng(0).standard_normal((1, 2, 16, 12)).astype(np.float32)
    ref = reference(b.layers, params, x)
    init, opt = initial_transfers(plan), optimized_transfers(plan)
    assert close(execute(plan, params, x, init), ref)
    assert close(execute(plan, params, x, opt), ref)
    assert total_bytes(opt) < total_bytes(init) / 2
    # Fig. 5 cases: device 0 of the pool reads rows [0, 7) of the 16 rows it and
    # device 1 produced; its own are [0, 6): fetch one row and concatenate
    assert classify(((0, 3), (0, 6), (0, 12)), ((0, 3), (0, 7), (0, 12))) == "fetch"
    assert classify(((0, 3), (0, 6), (0, 12)), ((0, 3), (0, 6), (0, 12))) == "identical"
    assert classify(((0, 3), (0, 6), (0, 12)), ((0, 3), (1, 5), (0, 12))) == "crop"
    assert classify(((0, 3), (2, 6), (0, 12)), ((0, 3), (1, 5), (0, 12))) == "fetch+crop"


def _small_resnet18(size=32):
    layers = resnet18(size)
    # channels / 16 keeps the CPU convolutions tiny; same kernels, strides, padding
    from dataclasses import replace

    out, shapes = [], {"input": (1, 3, size, size)}
    for la in layers[:-1]:  # drop the fully-connected layer (not executable here)
        ins = tuple(shapes[s] for s in la.inputs)
        n, c, h, w = la.out_shape
        c = max(c // 16, 1) if la.op == "conv" else (ins[0][1] if la.op != "concat"
                                                         else sum(s[1] for s in ins))
        out.append(replace(la, in_shapes=ins, out_shape=(n, c, h, w)))
        shapes[la.name] = out[-1].out_shape
    return out


def _small_yolo(size=64):
    from dataclasses import replace

    out, shapes = [], {"input": (1, 3, size, size)}
    for la in yolo(size):
        ins = tuple(shapes[s] for s in la.inputs)
        n, c, h, w = la.out_shape
        if la.op == "conv":
            c = max(c // 32, 2)
        elif la.op == "concat":
            c = sum(s[1] for s in ins)
        else:
            c = ins[0][1]
        out.append(replace(la, in_shapes=ins, out_shape=(n, c, h, w)))
        shapes[la.name] = out[-1].out_shape
    return out


HEAVY = pytest.mark.heavy


@pytest.mark.parametrize("build, cluster, forced", [
    (_small_resnet18, sub_cluster(load_cluster("moirai_inter"), 2), None),
    (_small_yolo, uniform_cluster(2, "h100"), None),
    pytest.param(_small_resnet18, load_cluster("moirai_inter"), None, marks=HEAVY),
    pytest.param(_small_resnet18, uniform_cluster(3, "t4"), "h", marks=HEAVY),
    pytest.param(_small_resnet18, load_cluster("moirai_inter"), "w", marks=HEAVY),
    pytest.param(_small_yolo, load_cluster("moirai_inter"), None, marks=HEAVY),
    pytest.param(_small_yolo, uniform_cluster(3, "t4"), "c", marks=HEAVY),
])
def test_optimizer_plans_of_resnet18_and_yolo_execute_correctly(build, cluster, forced):
    layers = build()
    sp = SpatialProblem(layers, cluster)
    params = init_params(layers, seed=3)
    x = np.random.default_rng(4).standard_normal(layers[0].in_shape).astype(np.float32)
    ref = reference(layers, params, x)
    axes = (sp.choose_axes(SPLIT_AXES) if forced is None
            else tuple(forced if la.splittable else None for la in layers))
    assert sum(a is not None for a in axes) >= len(layers) - 2  # really split
    assert close(execute(sp.plan(axes), params, x), ref)


# -- axis choice, hybrid, pipeline ----------------------------------------------------

def test_chain_dp_is_exact_against_brute_force():
    b = NetBuilder(3, 24, 16)
    x = b.conv("input", 8, 3, 1, 1)
    x = b.pool(x, 2, 2)
    x = b.conv(x, 16, 3, 1, 1)
    x = b.conv(x, 32, 1, 1, 0)
    cl = load_cluster("moirai_inter")
    sp = SpatialProblem(b.layers, cl)
    assert sp.is_chain
    got = sp.objective(sp.choose_axes(ALL_AXES))
    brute = min(sp.objective(a) for a in itertools.product(ALL_AXES, repeat=len(b.layers)))
    assert got == pytest.approx(brute, rel=1e-12)


def test_frontier_dp_is_exact_on_a_branching_graph():
    b = NetBuilder(3, 20, 16)
    x = b.conv("input", 8, 3, 2, 1)
    y = b.conv(x, 8, 3, 1, 1)
    z = b.add(x, b.conv(y, 8, 3, 1, 1))
    b.concat(b.pool(z, 3, 1, 1), b.upsample(b.pool(x, 2, 2), 2))
    cl = load_cluster("moirai_inter")
    sp = SpatialProblem(b.layers, cl)
    assert not sp.is_chain and 2 <= sp.max_frontier <= 3
    got = sp.objective(sp.choose_axes(ALL_AXES))
    brute = min(sp.objective(a) for a in itertools.product(ALL_AXES, repeat=len(b.layers)))
    assert got == pytest.approx(brute, rel=1e-12)
    local = sp._local_search([sp.options(i, ALL_AXES) for i in range(len(b.layers))])
    assert sp.objective(local) >= brute - 1e-15  # the fallback is never better


def test_hybrid_sweep_ends_are_one_device_and_all_split():
    layers = _small_resnet18(64)
    cl = uniform_cluster(3, "t4", latency=5e-6)
    sp = SpatialProblem(layers, cl)
    sweep = sp.hybrid_sweep()
    assert len(sweep) == len(layers) + 1
    assert sweep[0]["latency"] == pytest.approx(sp.one_device_times[sp.host], rel=1e-9)
    assert all(a is None for a in sweep[0]["axes"])
    res = plan_spatial(layers, cl)
    assert res.latency <= min(res.latency_one, res.latency_spatial, res.hybrid["latency"])
    assert res.halo_optimized < res.halo_initial


def test_pipeline_dp_on_equal_devices():
    layers = _small_resnet18(64)
    one = best_pipeline(layers, uniform_cluster(1, "t4"))
    three = best_pipeline(layers, uniform_cluster(3, "t4"))
    assert one.cuts == (0, len(layers)) and one.latency == pytest.approx(one.period)
    assert three.period <= one.period and three.latency >= one.latency - 1e-12


# -- importers ------------------------------------------------------------------------

def test_layers_from_jax_reads_conv_and_pool_params():
    import jax
    import jax.numpy as jnp
    from jax import lax

    from jaxplace.spatial.load import layers_from_jax

    w1, w2 = jnp.ones((4, 3, 3, 3)), jnp.ones((4, 1, 3, 3))

    def f(x):
        y = lax.conv_general_dilated(x, w1, (2, 2), [(1, 1), (0, 1)], rhs_dilation=(1, 2))
        y = jax.nn.relu(y + 1.0)
        z = lax.conv_general_dilated(y, w2, (1, 1), [(1, 1), (1, 1)], feature_group_count=4)
        y = y + z
        p = lax.reduce_window(y, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                              ((0, 0), (0, 0), (1, 1), (1, 1)))
        return jnp.concatenate([p, p * 2], axis=1).mean(axis=(2, 3))

    layers = layers_from_jax(f, jax.ShapeDtypeStruct((1, 3, 16, 16), jnp.float32))
    ops = [la.op for la in layers]
    assert ops[:6] == ["conv", "elementwise", "elementwise", "conv", "add", "maxpool"]
    c1, c2, pool = layers[0], layers[3], layers[5]
    assert (c1.stride, c1.dilation, c1.padding, c1.out_shape) == \
        ((2, 2), (1, 2), (1, 0, 1, 1), (1, 4, 8, 7))
    assert c2.groups == 4 and pool.kernel == (3, 3) and pool.padding == (1, 1, 1, 1)
    assert "concat" in ops and ops[-1] == "other"
    plan = plan_spatial(layers, uniform_cluster(2, "t4"), hybrid=False)
    assert plan.unsupported == [la.name for la in layers if la.op == "other"]


def _onnx_model(path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", strides=[2, 2],
                         pads=[1, 1, 1, 1], dilations=[1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "s", "t", "m", "v"], ["bn1"],
                         name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[3, 3],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], name="dw", group=8,
                         auto_pad="SAME_UPPER", kernel_shape=[3, 3], dilations=[2, 2]),
        helper.make_node("Add", ["c2", "p1"], ["a1"], name="add1"),
        helper.make_node("Concat", ["a1", "p1"], ["cat"], name="cat", axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 32, 32])],
        [helper.make_tensor_value_info("f", TensorProto.FLOAT, None)],
        [init("w1", (8, 3, 3, 3)), init("b1", (8,)), init("s", (8,)), init("t", (8,)),
         init("m", (8,)), init("v", (8,)), init("w2", (8, 1, 3, 3))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return path


def test_layers_from_onnx_attributes(tmp_path):
    from jaxplace.spatial.load import layers_from_onnx

    layers = layers_from_onnx(_onnx_model(tmp_path / "m.onnx"))
    by = {la.name: la for la in layers}
    assert [la.op for la in layers] == ["conv", "elementwise", "elementwise", "maxpool",
                                        "conv", "add", "concat", "other", "other"]
    assert by["conv1"].out_shape == (1, 8, 16, 16) and by["conv1"].padding == (1, 1, 1, 1)
    # ceil_mode: 16 rows, k 3, s 2 -> 8 rows, one extra bottom/right padding row
    assert by["pool1"].out_shape == (1, 8, 8, 8) and by["pool1"].padding == (0, 0, 1, 1)
    # SAME_UPPER with dilation 2 (true kernel 5): 2 rows each side
    assert by["dw"].groups == 8 and by["dw"].padding == (2, 2, 2, 2)
    assert by["add1"].inputs == ("dw", "pool1") and by["cat"].out_shape[1] == 16


def test_cli_spatial_onnx_writes_plan_json(tmp_path, capsys):
    model = _onnx_model(tmp_path / "m.onnx")
    out = tmp_path / "plan.json"
    assert main(["spatial", str(model), "--devices", "3", "--device", "t4", "-o",
                 str(out)]) == 0
    text = capsys.readouterr().out
    assert "latency: one device" in text and "conv1" in text and "kept whole" in text
    doc = json.loads(out.read_text())
    assert doc["latency"] > 0 and doc["latency_one"] > 0
    la = doc["layers"][0]
    assert la["name"] == "conv1" and la["kernel"] == [3, 3] and la["stride"] == [2, 2]
    assert la["dilation"] == [1, 1] and la["padding"] == [1, 1, 1, 1]
    assert la["input_shape"] == [1, 3, 32, 32] and la["output_shape"] == [1, 8, 16, 16]
    for row in doc["layers"]:
        assert row["axis"] in ("h", "w", "c", None)
        if row["axis"] is not None:
            ax = "chw".index(row["axis"])
            assert sum(d["out"][1] - d["out"][0] for d in row["devices"]) == \
                row["output_shape"][1 + ax]
            for d in row["devices"]:
                assert 0 <= d["in"][0] <= d["in"][1] <= row["input_shape"][1 + ax]
    assert set(doc["unsupported"]) == {"gap", "flat"}


def test_cli_builtin_model_and_cluster(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["spatial", "resnet18", "--size", "64", "--cluster", "moirai_inter",
                 "-q", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["devices"] == ["A", "B", "C", "D"] and doc["plan"] in (
        "one", "spatial", "auto", "hybrid")
    assert doc["halo_bytes_optimized"] < doc["halo_bytes_initial"]
    assert any(x["layer"].startswith("s4") for x in doc["impossible"])  # 2x2 maps, 4 devices


@pytest.mark.parametrize("argv, match", [
    (["spatial", "nosuch.onnx", "--devices", "2"], "nosuch.onnx: no such file"),
    (["spatial", "alexnet", "--devices", "2"], "alexnet: no such file, and not a built-in"),
    (["spatial", "vgg16", "--size", "8"], "--size: must be at least 32"),
    (["spatial", "vgg16", "--cluster", "{bad}"], "bandwidth"),
    (["spatial", "vgg16", "--cluster", "moirai_inter", "--devices", "3"], "--devices"),
    (["spatial", "{notonnx}"], "not a readable ONNX model"),
])
def test_cli_spatial_bad_input_one_line_exit_2(tmp_path, capsys, argv, match):
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps({"devices": ["t4", "t4"], "bandwidth": [[0, 1]]}))
    junk = tmp_path / "junk.onnx"
    junk.write_text("not a model")
    argv = [a.replace("{bad}", str(bad)).replace("{notonnx}", str(junk)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err and "Traceback" not in err


def test_plan_json_roundtrip_fields():
    res = plan_spatial(_small_yolo(64), uniform_cluster(2, "t4"), hybrid=False)
    doc = to_json(res, "yolo")
    json.dumps(doc)
    assert {"layers", "latency", "latency_one"} <= set(doc)


def test_execute_compiles_once_per_part():
    from jaxplace.spatial.execute import apply_part_jit

    b = NetBuilder(2, 12, 12)
    b.pool(b.conv("input", 3, 3, 1, 1), 2, 2)
    plan = Plan(tuple(b.layers), tuple(split(la, "h", [1, 1]) for la in b.layers), 2)
    params = init_params(b.layers)
    x = np.ones((1, 2, 12, 12), np.float32)
    execute(plan, params, x)
    size = apply_part_jit._cache_size()
    execute(plan, params, x * 2)
    assert apply_part_jit._cache_size() == size


def test_channel_split_holds_a_share_of_the_weights():
    from jaxplace.spatial.api import weight_bytes

    b = NetBuilder(4, 8, 8)
    b.conv(b.conv("input", 6, 3), 9, 1)
    full = sum(4 * np.prod(la.weight_shape) for la in b.layers)
    by_c = Plan(tuple(b.layers), tuple(split(la, "c", [1, 1, 1]) for la in b.layers), 3)
    by_h = Plan(tuple(b.layers), tuple(split(la, "h", [1, 1, 1]) for la in b.layers), 3)
    assert weight_bytes(by_c) == pytest.approx([full / 3] * 3)
    assert weight_bytes(by_h) == pytest.approx([full] * 3)
