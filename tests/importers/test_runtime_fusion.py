"""The ONNX importer's runtime-fusion pass (`importers.runtime_fusion`), one pattern per
test on graphs built with onnx.helper: a fused node does the FLOPs of all its parts
(no work lost), reads its external inputs and writes its output once, and every op
outside a pattern keeps the cost it has as exported (`fusion="none"`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.importers import classify, from_onnx, get_device
from jaxplace.importers import runtime_fusion as rf

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F32 = 4
H100 = get_device("h100")


def _model(nodes, inputs, outputs, inits=(), opset=18):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _c(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _both(model):
    """(as exported, runtime-fused) graphs of `model`."""
    return from_onnx(model, fusion="none", warn=None), from_onnx(model, warn=None)


def _fused(graph_none, graph_rt, op_type):
    """(fused node index, its members in the as-exported graph)."""
    (i,) = [v for v, t in enumerate(graph_rt.op_types) if t == op_type]
    return i, graph_rt.meta["runtime_fusion_members"][i]


def _check_group(g0, g, op_type, ext_in_bytes, out_bytes):
    """The fused node's FLOPs are its parts' sum; its bytes one round trip; every node
    outside the group is the same op with the same cost."""
    i, members = _fused(g0, g, op_type)
    a0, a = g0.node_attrs, g.node_attrs
    assert a["flops"][i] == pytest.approx(a0["flops"][members].sum(), rel=1e-12)
    assert a["bytes_moved"][i] == pytest.approx(ext_in_bytes + out_bytes, rel=1e-12)
    assert a["out_bytes"][i] == pytest.approx(out_bytes, rel=1e-12)
    assert g.work[i] <= g0.work[members].sum()  # one launch, one round trip
    assert g.size_param[i] == pytest.approx(g0.size_param[members].sum())
    for j, m in enumerate(g.meta["runtime_fusion_members"]):
        if j != i and len(m) == 1:
            (v,) = m
            assert g.op_types[j] == g0.op_types[v]
            assert g.work[j] == g0.work[v]
            assert a["flops"][j] == a0["flops"][v]
            assert a["bytes_moved"][j] == a0["bytes_moved"][v]
    return i, members


# -- gemm -------------------------------------------------------------------------------

def _linear_relu(bias_shape=(32,), residual=False, extra_consumer=False):
    nodes = [helper.make_node("MatMul", ["X", "W"], ["h"]),
             helper.make_node("Add", ["h", "R" if residual else "B"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["Y"])]
    outputs = [_vi("Y", [4, 32])]
    if extra_consumer:
        nodes.append(helper.make_node("Sigmoid", ["h"], ["Z"]))
        outputs.append(_vi("Z", [4, 32]))
    inputs = [_vi("X", [4, 16])] + ([_vi("R", [4, 32])] if residual else [])
    return _model(nodes, inputs, outputs,
                  [_c("W", np.ones((16, 32))), _c("B", np.ones(bias_shape))])


def test_matmul_bias_add_is_one_gemm_with_the_bias_flops():
    g0, g = _both(_linear_relu())
    assert g0.op_types == ("MatMul", "Add", "Relu") and g.op_types == ("Gemm", "Relu")
    assert g.meta["runtime_fusion"] == {"gemm": 1}
    i, members = _check_group(g0, g, "Gemm", (4 * 16 + 16 * 32 + 32) * F32, 4 * 32 * F32)
    assert members == [0, 1]
    assert g.node_attrs["flops"][i] == 2 * 4 * 16 * 32 + 4 * 32  # the bias adds kept
    # by hand: the roofline of the fused kernel, one launch
    comp = 2 * 4 * 16 * 32 / H100.peak("fp32", matrix=True) + \
        min(4 * 32 / H100.peak("fp32", matrix=False), g0.node_attrs["bytes_moved"][1]
            / H100.mem_bw)
    want = (max(comp, (4 * 16 + 16 * 32 + 32 + 4 * 32) * F32 / H100.mem_bw)
            + H100.launch_s) * 1e6
    assert g.work[i] == pytest.approx(want, rel=1e-9)
    assert g.num_edges == 1 and g.work.sum() < g0.work.sum()


@pytest.mark.parametrize("variant", ["residual", "full_shape_bias", "two_consumers"])
def test_not_a_bias_add_is_not_fused(variant):
    model = _linear_relu(residual=variant == "residual",
                         bias_shape=(4, 32) if variant == "full_shape_bias" else (32,),
                         extra_consumer=variant == "two_consumers")
    g0, g = _both(model)
    assert g.op_types == g0.op_types and "runtime_fusion_members" not in g.meta
    np.testing.assert_array_equal(g.work, g0.work)
    assert g.meta["runtime_fusion"] == {}


# -- GELU -------------------------------------------------------------------------------

def _gelu_model(form: str, half: float = 0.5):
    """Linear input h -> GELU as an exporter writes it -> Y."""
    c = {"half": half, "one": 1.0, "k": 0.044715, "s": math.sqrt(2 / math.pi),
         "r2": math.sqrt(2.0), "three": 3.0}
    n = helper.make_node
    if form == "tanh":  # torch.onnx.export (TorchScript, opset 17): x*x*x, c*(.), 0.5*(x*(.))
        body = [n("Mul", ["x", "x"], ["x2"]), n("Mul", ["x", "x2"], ["x3"]),
                n("Mul", ["k", "x3"], ["kx3"]), n("Add", ["x", "kx3"], ["inner"]),
                n("Mul", ["s", "inner"], ["arg"]), n("Tanh", ["arg"], ["t"]),
                n("Add", ["one", "t"], ["t1"]), n("Mul", ["x", "t1"], ["xt"]),
                n("Mul", ["half", "xt"], ["Y"])]
    elif form == "tanh_pow":  # Pow(x, 3), 0.5 * x first
        body = [n("Pow", ["x", "three"], ["x3"]), n("Mul", ["x3", "k"], ["kx3"]),
                n("Add", ["kx3", "x"], ["inner"]), n("Mul", ["inner", "s"], ["arg"]),
                n("Tanh", ["arg"], ["t"]), n("Add", ["t", "one"], ["t1"]),
                n("Mul", ["x", "half"], ["hx"]), n("Mul", ["hx", "t1"], ["Y"])]
    else:  # erf: x / sqrt(2), Erf, + 1, * x, * 0.5
        body = [n("Div", ["x", "r2"], ["d"]), n("Erf", ["d"], ["e"]),
                n("Add", ["e", "one"], ["e1"]), n("Mul", ["x", "e1"], ["xe"]),
                n("Mul", ["xe", "half"], ["Y"])]
    nodes = [n("MatMul", ["X", "W"], ["x"]), *body]
    inits = [_c("W", np.ones((16, 64)))] + [_c(k, v) for k, v in c.items()]
    return _model(nodes, [_vi("X", [8, 16])], [_vi("Y", [8, 64])], inits), len(body)


@pytest.mark.parametrize("form", ["tanh", "tanh_pow", "erf"])
def test_gelu_cone_is_one_op_with_all_its_flops(form):
    model, parts = _gelu_model(form)
    g0, g = _both(model)
    assert g.meta["runtime_fusion"] == {"gelu": 1}
    assert g.op_types == ("MatMul", "Gelu")
    consts = len(_gelu_consts(model)) * F32  # scalars, each read once
    i, members = _check_group(g0, g, "Gelu", 8 * 64 * F32 + consts, 8 * 64 * F32)
    assert len(members) == parts and i == 1
    assert g.node_attrs["flops"][i] >= 4 * 8 * 64  # at least the Tanh / Erf's FLOPs


def _gelu_consts(model):
    """The scalar initializers the GELU ops read."""
    read = {s for nd in model.graph.node if nd.op_type != "MatMul" for s in nd.input}
    return [i.name for i in model.graph.initializer if i.name in read]


def test_gelu_after_a_zero_bias_leaves_the_bias_to_the_gemm():
    """x + 0 then GELU is GELU of the MatMul's output too: the nearest x wins, so the
    bias Add joins the Gemm, not the Gelu."""
    model, parts = _gelu_model("erf")
    g = model.graph
    g.node[0].output[0] = "h"
    g.node.insert(1, helper.make_node("Add", ["h", "zb"], ["x"]))
    g.initializer.append(_c("zb", np.zeros(64)))
    g0, gr = _both(model)
    assert gr.op_types == ("Gemm", "Gelu")
    assert gr.meta["runtime_fusion"] == {"gemm": 1, "gelu": 1}
    assert [len(m) for m in gr.meta["runtime_fusion_members"]] == [2, parts]


def test_near_gelu_is_not_fused():
    model, _ = _gelu_model("erf", half=0.6)  # 0.6 * x * (1 + erf(x / sqrt 2)): not GELU
    g0, g = _both(model)
    assert g.op_types == g0.op_types and g.meta["runtime_fusion"] == {}
    np.testing.assert_array_equal(g.work, g0.work)


def test_silu_and_opset20_gelu():
    n = helper.make_node
    model = _model([n("Sigmoid", ["X"], ["s"]), n("Mul", ["X", "s"], ["y"]),
                    n("Gelu", ["y"], ["Y"], approximate="tanh")],
                   [_vi("X", [8, 64])], [_vi("Y", [8, 64])], opset=20)
    g0, g = _both(model)
    assert g0.op_types == ("Sigmoid", "Mul", "Gelu")
    assert g.op_types == ("Swish", "Gelu") and g.meta["runtime_fusion"] == {"silu": 1}
    assert g.work[1] == g0.work[2]  # Gelu is one op already: untouched


# -- attention --------------------------------------------------------------------------

B, H, T, D = 2, 4, 8, 16


def _attention_model(softmax_consumers: int = 1, softmax_axis: int = -1,
                     mask_input: bool = False):
    """Q, K, V of shape (B, T, H*D) -> heads, scale on Q and K^T (as the exporters),
    causal mask Add, Softmax, P V, merge heads, output projection."""
    n = helper.make_node
    nodes = []
    for z in "qkv":
        nodes += [n("Reshape", [z.upper(), "shp"], [f"{z}r"]),
                  n("Transpose", [f"{z}r"], [f"{z}t"], perm=[0, 2, 1, 3])]
    nodes += [n("Transpose", ["kr"], ["kT"], perm=[0, 2, 3, 1]),
              n("Mul", ["qt", "sc"], ["qs"]), n("Mul", ["kT", "sc"], ["ks"]),
              n("MatMul", ["qs", "ks"], ["s"]),
              n("Add", ["mm" if mask_input else "mask", "s"], ["sm"]),
              n("Softmax", ["sm"], ["p"], axis=softmax_axis), n("MatMul", ["p", "vt"], ["o"]),
              n("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
              n("Reshape", ["ot", "shp2"], ["om"]), n("MatMul", ["om", "Wo"], ["Y"])]
    outputs = [_vi("Y", [B, T, H * D])]
    if softmax_consumers > 1:
        nodes.append(n("ReduceMax", ["p"], ["pm"], keepdims=0, axes=[3]))
        outputs.append(_vi("pm", None))
    inits = [numpy_helper.from_array(np.array([B, T, H, D], np.int64), "shp"),
             numpy_helper.from_array(np.array([B, T, H * D], np.int64), "shp2"),
             _c("sc", [D ** -0.25]), _c("mask", np.triu(np.full((T, T), -1e4), 1)),
             _c("Wo", np.ones((H * D, H * D)))]
    inputs = [_vi(z, [B, T, H * D]) for z in "QKV"]
    if mask_input:  # a padding mask input, prepared in the layer: (1 - M) * -1e4
        nodes[:0] = [n("Sub", ["one", "M"], ["m1"]), n("Mul", ["m1", "big"], ["mm"])]
        inputs.append(_vi("M", [B, 1, 1, T]))
        inits += [_c("one", 1.0), _c("big", -1e4)]
    return _model(nodes, inputs, outputs, inits)


def test_attention_is_one_op_and_its_transposes_are_free():
    g0, g = _both(_attention_model())
    assert g.meta["runtime_fusion"] == {"attention": 1, "free": 5}
    assert g0.op_types.count("Transpose") == 5 and g.op_types.count("Transpose(view)") == 5
    for v, t in enumerate(g.op_types):
        if t == "Transpose(view)":  # no kernel, no bytes, no FLOPs; the edge stays
            assert g.work[v] == 0 and g.node_attrs["bytes_moved"][v] == 0
            assert classify(t) == "view"
    i, members = _fused(g0, g, "Attention")
    assert [g0.op_types[v] for v in members] == ["MatMul", "Mul", "Mul", "Add", "Softmax",
                                                 "MatMul"]
    a0, a = g0.node_attrs, g.node_attrs
    assert a["flops"][i] == pytest.approx(a0["flops"][members].sum(), rel=1e-12)
    scores = B * H * T * T
    assert a["flops"][i] == 2 * 2 * scores * D + 2 * B * H * T * D + scores + 5 * scores
    qkv = B * H * T * D * F32
    # Q, K^T, V read and the output written once; the mask and the scale (read twice)
    assert a["bytes_moved"][i] == pytest.approx(4 * qkv + (T * T + 2) * F32, rel=1e-12)
    assert g.work[i] < g0.work[members].sum() / 5  # one launch instead of six
    # the output projection (no bias) is untouched
    (wo,) = [v for v, t in enumerate(g0.op_types) if t == "MatMul"][-1:]
    assert g.work[g.meta["runtime_fusion_members"].index([wo])] == g0.work[wo]


def test_attention_with_a_mask_input_keeps_the_mask_ops():
    g0, g = _both(_attention_model(mask_input=True))
    assert g.meta["runtime_fusion"]["attention"] == 1
    i, members = _fused(g0, g, "Attention")
    assert [g0.op_types[v] for v in members] == ["MatMul", "Mul", "Mul", "Add", "Softmax",
                                                 "MatMul"]
    for v, t in enumerate(g0.op_types[:2]):  # the mask's Sub and Mul: their own ops
        assert t == ("Sub", "Mul")[v]
        (j,) = [j for j, m in enumerate(g.meta["runtime_fusion_members"]) if m == [v]]
        assert g.work[j] == g0.work[v] > 0


@pytest.mark.parametrize("variant", ["softmax_read_twice", "softmax_not_last_axis"])
def test_not_an_attention_is_not_fused(variant):
    twice = variant == "softmax_read_twice"
    g0, g = _both(_attention_model(softmax_consumers=2 if twice else 1,
                                   softmax_axis=-1 if twice else 2))
    assert "attention" not in g.meta["runtime_fusion"]
    assert g.op_types.count("Softmax") == 1
    # the Q and K^T transposes feed the scale Muls, outside any group now: real copies
    tr = [v for v, t in enumerate(g.op_types) if t.startswith("Transpose")]
    assert sum(g.work[v] > 0 for v in tr) == 2
    assert sorted(g.op_types[v] for v in tr if g.work[v] > 0) == ["Transpose"] * 2
    for v, t in enumerate(g0.op_types):  # the scale, mask and softmax keep their cost
        if t in ("Softmax", "Add"):
            (j,) = [j for j, m in enumerate(g.meta["runtime_fusion_members"])
                    if m == [v]] if "runtime_fusion_members" in g.meta else [v]
            assert g.work[j] == g0.work[v]


# -- free layout ops and graphs without patterns ---------------------------------------

def test_layout_ops_free_only_when_a_matrix_op_reads_them_or_they_re_view():
    n = helper.make_node
    model = _model([n("Transpose", ["X"], ["xt"], perm=[1, 0]), n("Relu", ["xt"], ["a"]),
                    n("Transpose", ["X"], ["x1"], perm=[1, 0]),
                    n("MatMul", ["x1", "W"], ["b"]),
                    n("Unsqueeze", ["X", "ax"], ["u"]),
                    n("Transpose", ["u"], ["ut"], perm=[1, 0, 2]),
                    n("Sigmoid", ["ut"], ["c"])],
                   [_vi("X", [8, 16])], [_vi("a", None), _vi("b", None), _vi("c", None)],
                   [_c("W", np.ones((8, 4))),
                    numpy_helper.from_array(np.array([0], np.int64), "ax")])
    g0, g = _both(model)
    assert g.meta["runtime_fusion"] == {"free": 2}
    tr = [v for v, t in enumerate(g0.op_types) if t == "Transpose"]
    assert g.op_types == tuple(t + "(view)" if v in tr[1:] else t
                               for v, t in enumerate(g0.op_types))
    assert g.work[tr[0]] == g0.work[tr[0]] > 0  # feeds a Relu: a real copy
    assert g.work[tr[1]] == 0  # feeds a MatMul (transA)
    assert g.work[tr[2]] == 0  # moves only a size-1 axis: the same bytes
    others = [v for v in range(g.num_nodes) if v not in tr[1:]]
    np.testing.assert_array_equal(g.work[others], g0.work[others])


def test_a_graph_without_patterns_is_unchanged():
    n = helper.make_node
    model = _model([n("Relu", ["X"], ["a"]), n("Exp", ["a"], ["Y"])],
                   [_vi("X", [8, 16])], [_vi("Y", None)])
    g0, g = _both(model)
    assert g.op_types == g0.op_types and g.meta["runtime_fusion"] == {}
    np.testing.assert_array_equal(g.work, g0.work)
    assert "coarsen_members" not in g.meta and "coarsen_members" not in g0.meta
    assert rf.summary_line(g.meta).endswith("no pattern found; 2 ONNX compute ops -> 2 nodes")
    assert "off" in rf.summary_line(g0.meta)
    with pytest.raises(JaxplaceError, match="runtime, none"):
        from_onnx(model, fusion="ort")


def test_fused_import_maps_back_and_composes_with_coarsening():
    from jaxplace.importers.coarsen import expand_assignment as coarsen_expand

    g0, g = _both(_attention_model())
    a = np.arange(g.num_nodes) % 2
    back = rf.expand_assignment(g, a)
    assert back.shape == (g0.num_nodes,)
    for i, m in enumerate(g.meta["runtime_fusion_members"]):
        assert set(back[m].tolist()) == {a[i]}
    c = from_onnx(_attention_model(), coarsen=True, warn=None)
    assert sorted(v for m in c.meta["coarsen_members"] for v in m) == list(
        range(g0.num_nodes))
    assert coarsen_expand(c, np.zeros(c.num_nodes)).shape == (g0.num_nodes,)
    f = from_onnx(_attention_model(), coarsen="fusion", warn=None)
    assert sorted(v for m in f.meta["coarsen_members"] for v in m) == list(
        range(g0.num_nodes))


def test_expand_into_an_attention_mask_and_a_noop_cast_are_free():
    """A padding mask broadcast by Expand into the attention's mask Add (torch: a
    view), and a Cast of a bool to bool (an identity), cost nothing; an Expand that
    feeds an elementwise op outside a group is a real copy."""
    n = helper.make_node
    model = _attention_model()
    g = model.graph
    for node in g.node:  # the mask becomes: bool input -> Cast(bool) -> Where -> Expand
        if node.op_type == "Add" and "mask" in node.input:
            node.input[list(node.input).index("mask")] = "mexp"
    pre = [n("Cast", ["M"], ["mb"], to=TensorProto.BOOL),
           n("Where", ["mb", "ninf", "zero"], ["mf"]),
           n("Expand", ["mf", "eshape"], ["mexp"]),
           n("Expand", ["mf", "eshape"], ["mexp2"]), n("Relu", ["mexp2"], ["side"])]
    nodes = pre + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    g.input.append(helper.make_tensor_value_info("M", TensorProto.BOOL, [B, 1, 1, T]))
    g.output.append(_vi("side", None))
    g.initializer.extend([_c("ninf", -1e4), _c("zero", 0.0), numpy_helper.from_array(
        np.array([B, H, T, T], np.int64), "eshape")])
    g0, gr = _both(model)
    assert gr.meta["runtime_fusion"]["attention"] == 1
    kinds = {(g0.op_types[v], float(gr.work[i]) == 0.0)
             for i, m in enumerate(gr.meta["runtime_fusion_members"]) if len(m) == 1
             for v in m if g0.op_types[v] in ("Cast", "Expand")}
    assert kinds == {("Cast", True), ("Expand", True), ("Expand", False)}


def _layer_norm_model(eps_name="eps", gamma=None):
    """LayerNorm over the last axis as opset < 17 exports write it (9 ops)."""
    n = helper.make_node
    nodes = [n("ReduceMean", ["X"], ["mu"], axes=[-1]), n("Sub", ["X", "mu"], ["d"]),
             n("Pow", ["d", "two"], ["d2"]), n("ReduceMean", ["d2"], ["var"], axes=[-1]),
             n("Add", ["var", eps_name], ["ve"]), n("Sqrt", ["ve"], ["sd"]),
             n("Div", ["d", "sd"], ["z"]), n("Mul", ["z", "g"], ["zg"]),
             n("Add", ["zg", "b"], ["Y"])]
    rng = np.random.default_rng(0)
    inits = [_c("two", 2.0), _c("eps", 1e-5), _c("one", 1.0),
             _c("g", rng.standard_normal(32) if gamma is None else gamma),
             _c("b", rng.standard_normal(32))]
    return _model(nodes, [_vi("X", [4, 10, 32])], [_vi("Y", [4, 10, 32])], inits, opset=13)


def test_decomposed_layer_norm_is_one_op():
    g0, g = _both(_layer_norm_model())
    assert g.op_types == ("LayerNormalization",)
    assert g.meta["runtime_fusion"] == {"layer_norm": 1}
    x = 4 * 10 * 32 * F32
    # x read once, y written once, the constants: 2, eps, gamma, beta
    _check_group(g0, g, "LayerNormalization", x + (2 + 32 + 32) * F32, x)


def test_near_layer_norm_is_not_fused():
    """eps = 1 (the 'one' constant) still standardizes; a Sub of the mean then a Pow
    with another exponent does not: the check is on what the cone computes."""
    model = _layer_norm_model()
    for node in model.graph.node:
        if node.op_type == "Pow":
            node.input[1] = "one"  # (x - mean)^1: not a variance
    g0, g = _both(model)
    assert "layer_norm" not in g.meta["runtime_fusion"]
    np.testing.assert_array_equal(g.work, g0.work)


def test_a_tensor_a_subgraph_reads_is_not_dead():
    """A Transpose read only inside an If body is a real copy, not a dead node."""
    n = helper.make_node
    body = lambda name: helper.make_graph(  # noqa: E731
        [n("Relu", ["xt"], [f"{name}_y"])], name, [], [_vi(f"{name}_y", [16, 8])])
    model = _model([n("Transpose", ["X"], ["xt"], perm=[1, 0]),
                    n("If", ["C"], ["Y"], then_branch=body("then"),
                      else_branch=body("else"))],
                   [_vi("X", [8, 16]), helper.make_tensor_value_info("C", TensorProto.BOOL,
                                                                     [])],
                   [_vi("Y", [16, 8])])
    g0, g = _both(model)
    assert g.meta["runtime_fusion"] == {}
    np.testing.assert_array_equal(g.work, g0.work)


def test_free_ops_cost_nothing_on_a_cluster_either():
    """The cluster objectives cost ops from flops, bytes and op type: a free layout op
    (a view by type) gets no launch there either, the fused attention the matrix
    peak."""
    from jaxplace.cluster import load_cluster
    from jaxplace.cluster.times import is_matrix, op_times

    g0, g = _both(_attention_model())
    cluster = load_cluster("moirai_intra")
    t = op_times(g, cluster)
    for v, op in enumerate(g.op_types):
        if op.endswith("(view)"):
            assert np.all(t[v] == 0)
    assert is_matrix("Attention")


def test_select_and_slice_into_a_matmul_are_free_a_strided_slice_is_not():
    """x[:, 0] (Gather of one constant index) and x[:, 0:4] feeding a MatMul read
    through (torch: select / slice views); x[::2] (step 2, the axes input left out)
    feeding one is a copy."""
    n = helper.make_node
    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    model = _model([n("Relu", ["X"], ["r"]),
                    n("Gather", ["r", "zero"], ["sel"], axis=1),
                    n("MatMul", ["sel", "W"], ["a"]),
                    n("Slice", ["r", "s0", "s4", "ax1"], ["sl"]),
                    n("MatMul", ["sl", "W4"], ["b"]),
                    n("Slice", ["r", "s0", "s8", "", "two"], ["st"]),
                    n("MatMul", ["st", "W"], ["c"])],
                   [_vi("X", [2, 8, 16])], [_vi("a", None), _vi("b", None), _vi("c", None)],
                   [i64("zero", 0), i64("s0", [0]), i64("s4", [4]), i64("s8", [8]),
                    i64("ax1", [1]), i64("two", [2]), _c("W", np.ones((16, 4))),
                    _c("W4", np.ones((16, 4)))])
    g0, g = _both(model)
    assert g.meta["runtime_fusion"] == {"free": 2}
    assert [t for t in g.op_types if "(view)" in t] == ["Gather(view)", "Slice(view)"]
    (st,) = [v for v, t in enumerate(g0.op_types) if t == "Slice"][1:]
    assert g.op_types[st] == "Slice" and g.work[st] == g0.work[st] > 0
