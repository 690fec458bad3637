"""Importers: device profiles, roofline FLOP/byte counts against hand counts, JAX/Flax
tracing, ONNX import, coarsening, CLI, and end-to-end partitioning of imported models."""

from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest

from jaxplace import JaxplaceError, Problem, evaluate_partition
from jaxplace.graph import CompGraph
from jaxplace.importers import (
    coarsen,
    device_names,
    expand_assignment,
    from_jax,
    get_device,
    load_model_file,
    summarize,
)
from jaxplace.importers import roofline as rl
from jaxplace.objectives.throughput.reference import decode_reference

H100 = get_device("h100")
F32 = 4


def op_nodes(g, op):
    return [i for i in range(g.num_nodes) if g.op_types[i] == op]


def roofline_us(flops, nbytes, dev=H100, dtype="fp32", matrix=False):
    """Independent hand formula (microseconds)."""
    peak = (dev.matrix if matrix else dev.vector)[dtype]
    return (max(flops / peak, nbytes / dev.mem_bw) + dev.launch_s) * 1e6


# --- devices -----------------------------------------------------------------------

def test_device_names_and_lookup():
    assert {"h100", "h200", "a100", "tpu-v4", "cpu"} <= set(device_names())
    assert get_device("H100") is get_device("h100")
    assert get_device("TPU_v4").name == "tpu-v4"
    with pytest.raises(JaxplaceError, match="valid names: .*h100"):
        get_device("v100x")


def test_device_overrides():
    d = get_device("h100", peak_tflops=100, mem_bw_gbs=1000, link_bw_gbs=50, launch_us=0)
    assert d.peak("bf16", matrix=True) == pytest.approx(100e12)
    assert d.mem_bw == 1e12 and d.link_bw == 50e9 and d.launch_s == 0.0
    # vector peaks scale with the fp32 matrix peak
    assert d.vector["fp32"] == pytest.approx(67e12 * 100e12 / 494.5e12, rel=1e-12)
    with pytest.raises(JaxplaceError):
        get_device("h100", mem_bw_gbs=-1)


def test_every_profile_has_sources_and_positive_numbers():
    for name in device_names():
        d = get_device(name)
        assert d.sources, name
        assert d.mem_bw > 0 and d.link_bw > 0 and d.launch_s >= 0
        assert all(v > 0 for v in [*d.matrix.values(), *d.vector.values()])
        for dt in ("fp32", "bf16", "fp16", "fp8", "int8", "fp64"):
            assert d.peak(dt, matrix=True) > 0 and d.peak(dt, matrix=False) > 0


# --- roofline hand counts ----------------------------------------------------------

def test_flop_formulas():
    assert rl.matmul_flops((3, 5, 7), (7, 11)) == 2 * 3 * 5 * 11 * 7
    assert rl.matmul_flops((2, 1, 5, 7), (3, 7, 11)) == 2 * 6 * 5 * 11 * 7
    assert rl.matmul_flops((7,), (7, 11)) == 2 * 11 * 7
    # (N, Cout, H, W) output, 3 input channels per group, 3x3 kernel
    assert rl.conv_flops((2, 8, 5, 5), 3, (3, 3)) == 2 * (2 * 8 * 5 * 5) * 3 * 9
    assert rl.generic_flops("exp", 10, 10) == rl.TRANSCENDENTAL_FLOPS * 10
    assert rl.generic_flops("reduce_sum", 12, 3) == 12
    assert rl.generic_flops("reshape", 12, 12) == 0
    t = rl.op_time(1e12, 1.0, H100, "bf16", matrix=True)
    assert t == pytest.approx(1e12 / 989.5e12 + 2e-6, rel=1e-12)
    t = rl.op_time(1.0, 3.35e9, H100, "fp32")  # memory bound: 1 ms
    assert t == pytest.approx(1e-3 + 2e-6, rel=1e-12)


# --- JAX ---------------------------------------------------------------------------

def test_jax_dense_tanh_hand_counts():
    M, K, N = 8, 16, 32
    x = jax.ShapeDtypeStruct((M, K), jnp.float32)
    w = jax.ShapeDtypeStruct((K, N), jnp.float32)
    g = from_jax(lambda x, w: jnp.tanh(x @ w), x, w, param_argnums=1)
    assert g.num_nodes == 2 and g.op_types == ("dot_general", "tanh")
    flops = g.node_attrs["flops"]
    assert flops[0] == 2 * M * N * K
    assert flops[1] == rl.TRANSCENDENTAL_FLOPS * M * N
    dot_bytes = (M * K + K * N + M * N) * F32
    assert g.node_attrs["bytes_moved"][0] == dot_bytes
    assert g.work[0] == pytest.approx(roofline_us(2 * M * N * K, dot_bytes, matrix=True),
                                      rel=1e-12)
    assert g.work[1] == pytest.approx(roofline_us(4 * M * N, 2 * M * N * F32), rel=1e-12)
    assert g.size_param.tolist() == [K * N * F32, 0.0]
    # one tensor dot -> tanh, size = bytes / link bandwidth in microseconds
    assert g.num_tensors == 1
    assert g.tensor_size[0] == pytest.approx(M * N * F32 / H100.link_bw * 1e6, rel=1e-12)
    assert g.meta["time_unit"] == "us" and g.meta["param_bytes_total"] == K * N * F32


def test_jax_conv_and_batched_dot_hand_counts():
    x = jax.ShapeDtypeStruct((2, 4, 9, 9), jnp.float32)  # NCHW
    w = jax.ShapeDtypeStruct((6, 2, 3, 3), jnp.float32)  # OIHW, 2 groups of 2 channels

    def f(x, w):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2)

    g = from_jax(f, x, w, param_argnums=1)
    (c,) = op_nodes(g, "conv_general_dilated")
    assert g.node_attrs["flops"][c] == 2 * (2 * 6 * 7 * 7) * 2 * 9

    a = jax.ShapeDtypeStruct((3, 5, 7), jnp.bfloat16)
    b = jax.ShapeDtypeStruct((3, 7, 11), jnp.bfloat16)
    g = from_jax(lambda a, b: jnp.einsum("bij,bjk->bik", a, b), a, b)
    (d,) = op_nodes(g, "dot_general")
    assert g.node_attrs["flops"][d] == 2 * 3 * 5 * 11 * 7
    nbytes = (3 * 5 * 7 + 3 * 7 * 11 + 3 * 5 * 11) * 2
    assert g.work[d] == pytest.approx(
        roofline_us(2 * 3 * 5 * 11 * 7, nbytes, dtype="bf16", matrix=True), rel=1e-12)
    assert g.size_param.sum() == 0  # no params declared


def test_jax_multi_output_is_one_node_with_several_tensors():
    def f(x):
        a, b = jnp.split(jnp.exp(x), 2, axis=0)
        return jnp.sin(a) + b, jnp.cos(b)

    g = from_jax(f, jnp.ones((4, 3)))
    (s,) = op_nodes(g, "split")
    ts = [t for t in range(g.num_tensors) if g.tensor_producer[t] == s]
    assert len(ts) == 2
    cons = sorted(tuple(g.op_types[c] for c in g.consumers(t)) for t in ts)
    assert cons == [("add",), ("cos", "sin")] or cons == [("add", "cos"), ("sin",)]
    assert not g.has_default_tensors


def test_jax_inlines_calls_and_keeps_loops_as_nodes():
    @jax.jit
    def inner(x):
        return jax.nn.relu(x) * 2.0  # custom_jvp inside jit

    def f(x):
        y = inner(x)
        y = jax.checkpoint(jnp.sin)(y)
        c = jax.lax.scan(lambda c, _: (c * 3.0 + 1.0, None), y, None, length=5)[0]
        w = jax.lax.while_loop(lambda s: s[0] < 7, lambda s: (s[0] + 1, s[1] * 2.0),
                               (0, c))[1]
        return jax.lax.cond(w.sum() > 0, lambda t: jnp.exp(t), lambda t: t - 1.0, w)

    x = jnp.ones((4, 4))
    g = from_jax(f, x)
    ops = set(g.op_types)
    assert {"max", "mul", "sin", "scan", "while", "cond"} <= ops
    assert not ops & {"jit", "pjit", "custom_jvp_call", "remat2", "checkpoint"}
    n = 16
    (s,) = op_nodes(g, "scan")
    assert g.node_attrs["flops"][s] == 5 * 2 * n  # mul + add per iteration
    (w,) = op_nodes(g, "while")
    # body: counter add (1) + mul (n); cond: lt (1); 7 trips
    assert g.node_attrs["flops"][w] == 7 * (1 + n + 1)
    assert g.meta["unknown_trip_counts"] == 0
    (c,) = op_nodes(g, "cond")
    assert g.node_attrs["flops"][c] == rl.TRANSCENDENTAL_FLOPS * n  # max over branches


def test_jax_param_charged_once_to_first_consumer_and_consts():
    w = jnp.ones((8, 8))
    g = from_jax(lambda x, w: (x @ w) @ w.T, jnp.ones((2, 8)), w, param_argnums=1)
    dots = op_nodes(g, "dot_general")
    assert len(dots) == 2 and "transpose" not in g.op_types  # w.T folded into the param
    assert g.size_param[dots[0]] == 8 * 8 * F32 and g.size_param[dots[1]] == 0
    # closed-over arrays count as parameters
    g2 = from_jax(lambda x: x @ w, jnp.ones((2, 8)))
    assert g2.size_param.sum() == w.nbytes
    g3 = from_jax(lambda x: x @ w, jnp.ones((2, 8)), consts_as_params=False)
    assert g3.size_param.sum() == 0


def test_jax_tracing_errors_are_jaxplace_errors():
    with pytest.raises(JaxplaceError, match="could not trace"):
        from_jax(lambda x: x @ jnp.ones((3, 3)), jnp.ones((2, 4)))
    with pytest.raises(JaxplaceError):
        from_jax(lambda x: x, jnp.ones(2), params={}, param_argnums=0)


# --- Flax models -------------------------------------------------------------------

def _flax_mlp():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.gelu(nn.Dense(32)(x))
            x = nn.LayerNorm()(x)
            return nn.Dense(10)(nn.relu(nn.Dense(24)(x)))

    m = MLP()
    x = jnp.ones((4, 16))
    return m, m.init(jax.random.key(0), x), x


def _nnx_block(d=32, h=4, f=64):
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=h, in_features=d, decode=False,
                                               rngs=rngs)
            self.fc1 = nnx.Linear(d, f, rngs=rngs)
            self.fc2 = nnx.Linear(f, d, rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

    return Block(nnx.Rngs(0))


def test_flax_linen_mlp():
    m, params, x = _flax_mlp()
    g = from_jax(m.apply, x, params=params)
    total = sum(leaf.nbytes for leaf in jax.tree.leaves(params))
    assert g.size_param.sum() == total and g.meta["unused_param_bytes"] == 0
    dots = op_nodes(g, "dot_general")
    assert len(dots) == 3
    assert sorted(g.node_attrs["flops"][dots]) == sorted(
        [2 * 4 * 16 * 32, 2 * 4 * 32 * 24, 2 * 4 * 24 * 10])
    # each Dense kernel is charged to its dot_general, each bias to its add
    assert sorted(g.size_param[dots]) == sorted([16 * 32 * F32, 32 * 24 * F32,
                                                 24 * 10 * F32])
    assert all("Dense_" in g.names[i] for i in dots)
    # every node is reachable from a dot (no dangling inputs apart from the graph input)
    assert g.num_nodes == len(set(g.names))


def test_flax_nnx_transformer_block():
    from flax import nnx

    B, L, D, H, F = 2, 8, 32, 4, 64
    block = _nnx_block(D, H, F)
    g = from_jax(block, jnp.ones((B, L, D)))
    total = sum(leaf.nbytes for leaf in jax.tree.leaves(nnx.state(block)))
    assert g.size_param.sum() == total
    dots = op_nodes(g, "dot_general")
    dh = D // H
    hand = (3 * 2 * B * L * D * D  # q, k, v projections
            + 2 * (2 * B * H * L * L * dh)  # logits and weighted values
            + 2 * B * L * D * D  # output projection
            + 2 * (2 * B * L * D * F))  # MLP
    assert len(dots) == 8 and g.node_attrs["flops"][dots].sum() == hand
    assert len(op_nodes(g, "exp")) == 1  # the softmax


@pytest.mark.parametrize("k", [2, 4])
def test_partition_imported_transformer_end_to_end(k):
    g = from_jax(_nnx_block(), jnp.ones((2, 8, 32)))
    p = Problem(g, k=k)
    rng = np.random.default_rng(0)
    for _ in range(4):
        part = decode_reference(p, rng.random(g.num_nodes))
        cost = evaluate_partition(p, part.assignment)
        assert cost.feasible
        assert cost.bottleneck == pytest.approx(part.cost, rel=1e-12)
        np.testing.assert_allclose(cost.work.sum(), g.work.sum(), rtol=1e-12)
        np.testing.assert_allclose(cost.param.sum(), g.size_param.sum(), rtol=1e-12)


# --- coarsening ----------------------------------------------------------------------

def test_coarsen_preserves_costs_and_maps_back():
    g = from_jax(_nnx_block(), jnp.ones((2, 8, 32)))
    c = coarsen(g)
    assert c.num_nodes < g.num_nodes
    np.testing.assert_allclose(c.work.sum(), g.work.sum(), rtol=1e-12)
    assert c.size_param.sum() == g.size_param.sum()
    assert c.node_attrs["flops"].sum() == g.node_attrs["flops"].sum()
    members = c.meta["coarsen_members"]
    assert sorted(v for m in members for v in m) == list(range(g.num_nodes))
    # every fused non-head member is cheap and had exactly one predecessor
    for m in members:
        for v in m[1:]:
            assert rl.is_cheap(g.op_types[v]) and len(g.predecessors(v)) == 1
    # a partition of the coarse graph costs the same on the original graph
    rng = np.random.default_rng(1)
    pc, po = Problem(c, k=3), Problem(g, k=3)
    for _ in range(5):
        part = decode_reference(pc, rng.random(c.num_nodes))
        orig = expand_assignment(c, part.assignment)
        cost = evaluate_partition(po, orig)
        coarse = evaluate_partition(pc, part.assignment)
        # same blocks, same tensors crossing: equal up to summation order
        np.testing.assert_allclose(cost.total, coarse.total, rtol=1e-12, atol=1e-12)
        assert cost.bottleneck == pytest.approx(part.cost, rel=1e-12)


def test_coarsen_needs_op_types():
    with pytest.raises(JaxplaceError, match="op types"):
        coarsen(CompGraph([1.0, 2.0], [(0, 1)]))


# --- ONNX ----------------------------------------------------------------------------

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def _mlp_onnx():
    nodes = [helper.make_node("MatMul", ["X", "W"], ["h"]),
             helper.make_node("Add", ["h", "B"], ["h2"]),
             helper.make_node("Relu", ["h2"], ["Y"])]
    return _model(nodes, [_vi("X", ["batch", 16])], [_vi("Y", None)],
                  [_init("W", (16, 32)), _init("B", (32,))])


def test_onnx_matmul_add_relu_hand_counts():
    from jaxplace.importers import from_onnx

    g = from_onnx(_mlp_onnx(), dim_values={"batch": 4}, fusion="none")  # as exported
    assert g.op_types == ("MatMul", "Add", "Relu") and g.num_nodes == 3
    assert g.node_attrs["flops"].tolist() == [2 * 4 * 32 * 16, 4 * 32, 4 * 32]
    assert g.size_param.tolist() == [16 * 32 * F32, 32 * F32, 0.0]
    mm_bytes = (4 * 16 + 16 * 32 + 4 * 32) * F32
    assert g.node_attrs["bytes_moved"][0] == mm_bytes
    assert g.work[0] == pytest.approx(roofline_us(2 * 4 * 32 * 16, mm_bytes, matrix=True),
                                      rel=1e-12)
    assert g.edges.tolist() == [[0, 1], [1, 2]]
    assert g.meta["defaulted_dims"] == []
    g1 = from_onnx(_mlp_onnx())  # batch defaults to 1, and says so
    assert g1.node_attrs["flops"][0] == 2 * 1 * 32 * 16 + 32  # the Gemm does the bias adds
    assert g1.meta["defaulted_dims"] == ["batch"]
    # the default costs it as a runtime launches it: MatMul + bias Add is one Gemm
    gr = from_onnx(_mlp_onnx(), dim_values={"batch": 4})
    assert gr.op_types == ("Gemm", "Relu") and gr.meta["runtime_fusion"] == {"gemm": 1}
    assert gr.node_attrs["flops"].tolist() == [2 * 4 * 32 * 16 + 4 * 32, 4 * 32]
    assert gr.node_attrs["bytes_moved"][0] == (4 * 16 + 16 * 32 + 32 + 4 * 32) * F32
    assert gr.meta["coarsen_members"] == [[0, 1], [2]]


def test_onnx_gemm_and_grouped_conv():
    from jaxplace.importers import from_onnx

    nodes = [helper.make_node("Conv", ["X", "W", "Bc"], ["c"], group=2,
                              kernel_shape=[3, 3]),
             helper.make_node("Flatten", ["c"], ["f"]),
             helper.make_node("Gemm", ["f", "G", "Bg"], ["Y"], transB=1)]
    m = _model(nodes, [_vi("X", [2, 4, 9, 9])], [_vi("Y", None)],
               [_init("W", (6, 2, 3, 3)), _init("Bc", (6,)), _init("G", (10, 6 * 7 * 7)),
                _init("Bg", (10,))])
    g = from_onnx(m)
    conv, flat, gemm = range(3)
    out = 2 * 6 * 7 * 7
    assert g.node_attrs["flops"][conv] == 2 * out * 2 * 9 + out  # + bias
    assert g.node_attrs["flops"][gemm] == 2 * 2 * 10 * 294 + 2 * 10
    assert g.work[flat] == 0  # a view
    assert g.size_param[conv] == (6 * 2 * 9 + 6) * F32
    assert g.size_param[gemm] == (10 * 294 + 10) * F32


def test_onnx_split_two_outputs_and_constant_folding():
    from jaxplace.importers import from_onnx

    const = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
        np.ones((4, 3), np.float32)))
    nodes = [const,
             helper.make_node("Split", ["X"], ["a", "b"], axis=1, num_outputs=2),
             helper.make_node("Exp", ["a"], ["ea"]),
             helper.make_node("Mul", ["b", "k"], ["mb"]),
             helper.make_node("Add", ["ea", "mb"], ["Y"])]
    g = from_onnx(_model(nodes, [_vi("X", [4, 6])], [_vi("Y", None)]))
    assert g.op_types == ("Split", "Exp", "Mul", "Add")  # Constant is a parameter
    assert g.size_param.tolist() == [0, 0, 12 * F32, 0]
    split_tensors = [t for t in range(g.num_tensors) if g.tensor_producer[t] == 0]
    assert len(split_tensors) == 2
    assert [g.consumers(t).tolist() for t in split_tensors] == [[1], [2]]
    assert g.tensor_size[split_tensors[0]] == pytest.approx(
        12 * F32 / H100.link_bw * 1e6, rel=1e-12)
    # partition end to end: each split output pays separately when cut
    p = Problem(g, k=2)
    cost = evaluate_partition(p, [0, 1, 1, 1])
    assert cost.io_out[0] == pytest.approx(2 * g.tensor_size[split_tensors[0]], rel=1e-12)


def test_onnx_file_roundtrip_and_errors(tmp_path, monkeypatch):
    from jaxplace.importers import from_onnx

    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp_onnx(), str(path))
    g = load_model_file(path, device="a100", dim_values={"batch": 4})
    assert g.meta["device"]["name"] == "a100" and g.num_nodes == 2  # Gemm, Relu
    gc = load_model_file(path, coarsen=True)
    assert gc.num_nodes == 1 and gc.meta["coarsen_members"] == [[0, 1, 2]]
    with pytest.raises(JaxplaceError, match="no such file"):
        from_onnx(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(JaxplaceError, match="bad.onnx"):
        from_onnx(bad)
    with pytest.raises(JaxplaceError, match="model file"):
        load_model_file(tmp_path / "model.pt")
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(JaxplaceError, match="pip install"):
        from_onnx(path)


# --- CLI and summary ---------------------------------------------------------------

def test_cli_import_writes_node_link_json(tmp_path, capsys):
    from jaxplace.cli.main import main

    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp_onnx(), str(path))
    out = tmp_path / "sub" / "g.json"
    rc = main(["import", str(path), "-o", str(out), "--device", "H200", "--dim", "batch=4",
               "--link-bw", "100"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "MatMul" in text and "wrote" in text
    data = json.loads(out.read_text())
    back = CompGraph.from_networkx(nx.node_link_graph(data, edges="edges"))
    g = load_model_file(path, device=get_device("h200", link_bw_gbs=100),
                        dim_values={"batch": 4})
    assert back == g
    assert data["graph"]["device"]["link_bw"] == 100e9
    assert list(tmp_path.glob("sub/*.tmp")) == []
    assert main(["import", str(path), "--device", "nope"]) == 2
    assert "valid names" in capsys.readouterr().err
    assert main(["import", str(path), "--dim", "batch"]) == 2
    assert main(["import", "--list-devices"]) == 0
    assert "tpu-v4" in capsys.readouterr().out


def test_summarize_lists_op_types_and_heaviest():
    g = from_jax(_nnx_block(), jnp.ones((2, 8, 32)))
    s = summarize(g, top=3)
    assert "dot_general" in s and "heaviest 3 ops" in s and "h100" in s
    heaviest = g.names[int(np.argmax(g.work))]
    assert heaviest in s
    assert "ops" in summarize(CompGraph([1.0, 2.0], [(0, 1)]))


def test_load_problem_of_an_onnx_file_uses_device_defaults(tmp_path):
    import jaxplace as jp

    path = tmp_path / "mlp.onnx"
    onnx.save(_mlp_onnx(), str(path))
    g = jp.load_graph(path, device="tpu-v4")
    assert g.meta["device"]["name"] == "tpu-v4" and g.num_nodes == 2  # Gemm, Relu
    p = jp.load_problem(path, k=2)
    assert p.bandwidth == 1.0 and p.capacity == get_device("h100").memory_bytes
    part = decode_reference(p, np.arange(2.0))
    assert np.isfinite(part.cost)
