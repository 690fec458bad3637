"""ONNX import as a runtime sees it (constant subgraphs folded into parameters, only
compute ops placed), one cost rule shared with the spatial planner, and runnable
stage export: stages chained in onnxruntime reproduce the whole model."""

from __future__ import annotations

import glob
import json
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import PATTERNS, cnn, single

import jaxplace as jp
from jaxplace import JaxplaceError
from jaxplace.importers import device_names, from_onnx, get_device

ort = pytest.importorskip("onnxruntime")
OPSETS = (7, 9, 11, 13, 17, 21)


def _check_import(built, g):
    assert g.size_param.sum() == pytest.approx(4 * built.weight_elems, rel=0.01)
    assert g.num_nodes == built.compute_ops
    assert list(g.names) == built.names  # exactly the compute ops, by name
    assert jp.Problem(g, 2).graph.units.num_units == built.compute_ops


@pytest.mark.parametrize("pattern", [*PATTERNS, "cast", "identity", "gather", "unsqueeze"])
@pytest.mark.parametrize("opset", [9, 17])
def test_each_constant_pattern_is_a_parameter(pattern, opset):
    if pattern == "unsqueeze":  # a (C, 1, 1) bias added after the convolution
        built = cnn(opset, blocks=0)
    else:
        built = single(pattern, opset)
    g = from_onnx(built.model, dim_values={"N": 2})
    _check_import(built, g)
    conv = g.names.index(built.names[0])
    assert g.size_param[conv] > 0 and g.meta["unknown_ops"] == []


@pytest.mark.parametrize("opset", OPSETS)
def test_cnn_weights_counted_at_every_opset(opset):
    built = cnn(opset, blocks=3)
    g = from_onnx(built.model, dim_values={"N": 4})
    _check_import(built, g)
    assert g.meta["defaulted_dims"] == [] and g.meta["unshaped_tensors"] == []
    assert g.meta["folded_nodes"] == g.meta["onnx_nodes"] - built.compute_ops
    # the batch dimension scales activations, not weights
    g1 = from_onnx(built.model)
    assert g1.meta["defaulted_dims"] == ["N"]
    assert g1.size_param.sum() == g.size_param.sum()
    assert g.node_attrs["out_bytes"].sum() == pytest.approx(
        4 * g1.node_attrs["out_bytes"].sum(), rel=1e-9)


def test_constant_of_shape_weight_is_a_large_parameter():
    """A weight far over the evaluation limit keeps its shape without being made."""
    b = helper
    shape = numpy_helper.from_array(np.array([512, 1024], np.int64))
    nodes = [b.make_node("Constant", [], ["s"], value=shape),
             b.make_node("ConstantOfShape", ["s"], ["W"],
                         value=b.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
             b.make_node("MatMul", ["X", "W"], ["Y"], name="fc")]
    m = b.make_model(b.make_graph(nodes, "big", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [2, 512])], [b.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [2, 1024])]), opset_imports=[b.make_opsetid("", 17)])
    g = from_onnx(m)
    assert g.names == ("fc",) and g.size_param[0] == 512 * 1024 * 4
    assert g.node_attrs["flops"][0] == 2 * 2 * 512 * 1024


def test_external_data_model_is_read_without_its_weights(tmp_path):
    built = cnn(17, blocks=2)
    path = tmp_path / "ext.onnx"
    onnx.save(built.model, str(path), save_as_external_data=True, location="ext.bin",
              size_threshold=0)
    assert (tmp_path / "ext.bin").exists()
    g = from_onnx(path, dim_values={"N": 2})
    _check_import(built, g)


def test_unknown_op_types_one_warning_line(capsys):
    b = helper
    nodes = [b.make_node("Relu", ["X"], ["a"]),
             b.make_node("Swoosh", ["a"], ["c"], domain="com.example"),
             b.make_node("Swoosh", ["c"], ["d"], domain="com.example"),
             b.make_node("Relu", ["d"], ["Y"])]
    m = b.make_model(b.make_graph(nodes, "u", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [4, 8])], [b.make_tensor_value_info("Y", TensorProto.FLOAT,
                                                                    None)]),
        opset_imports=[b.make_opsetid("", 17), b.make_opsetid("com.example", 1)])
    g = from_onnx(m)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Swoosh" in err and "1 FLOP per output element" in err
    assert g.meta["unknown_ops"] == ["Swoosh"] and g.num_nodes == 4
    # the custom op's outputs take its input's shape, so the ops after it are shaped
    assert g.node_attrs["out_bytes"].tolist() == [4 * 8 * 4] * 4
    from_onnx(m, warn=None)
    assert capsys.readouterr().err == ""


def test_malformed_models_are_one_line_exit_2(tmp_path, capsys):
    from jaxplace.cli.main import main

    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    b = helper
    dangling = b.make_model(b.make_graph(
        [b.make_node("Relu", ["nowhere"], ["Y"])], "d",
        [b.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [b.make_tensor_value_info("Y", TensorProto.FLOAT, [2])]))
    dpath = tmp_path / "dangling.onnx"
    onnx.save(dangling, str(dpath))
    for path, what in ((bad, "garbage.onnx"), (dpath, "'nowhere'")):
        assert main(["import", str(path), "-o", str(tmp_path / "g.json"), "-q"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and what in err and str(path.name) in err


# -- one cost rule ------------------------------------------------------------------

@pytest.fixture(scope="module")
def layer_model():
    b = helper
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    nodes = [b.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1] * 4),
             b.make_node("Relu", ["c"], ["r"], name="relu"),
             b.make_node("Flatten", ["r"], ["f"], name="flat"),
             b.make_node("Gemm", ["f", "G", "GB"], ["Y"], name="gemm", transB=1)]
    graph = b.make_graph(nodes, "layers", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [8, 32, 14, 14])], [b.make_tensor_value_info(
            "Y", TensorProto.FLOAT, [8, 100])],
        [init("W", 64, 32, 3, 3), init("B", 64), init("G", 100, 64 * 14 * 14),
         init("GB", 100)])
    return b.make_model(graph, opset_imports=[b.make_opsetid("", 17)])


@pytest.mark.parametrize("device", device_names())
def test_import_spatial_and_latency_cost_a_layer_alike(device, layer_model):
    from jaxplace.cluster import uniform_cluster
    from jaxplace.cluster.times import op_times
    from jaxplace.spatial.cost import part_time
    from jaxplace.spatial.load import layers_from_onnx

    m = layer_model
    prof = get_device(device)
    g = from_onnx(m, device=prof)
    layers = {la.name: la for la in layers_from_onnx(m)}
    latency = op_times(g, uniform_cluster(1, prof))[:, 0] * 1e6
    for name in ("conv", "relu", "gemm"):
        imported = g.work[g.names.index(name)]
        spatial = part_time(layers[name], layers[name].full_box(), prof) * 1e6
        assert spatial == pytest.approx(imported, rel=0.01), (device, name)
        assert latency[g.names.index(name)] == pytest.approx(imported, rel=1e-9)
    # fp32 convolutions run on the matrix units at the fp32 (TF32 where so stated) rate
    conv = g.names.index("conv")
    flops = g.node_attrs["flops"][conv]
    compute_us = flops / prof.peak("fp32", matrix=True) * 1e6
    assert g.work[conv] >= compute_us
    assert g.work[conv] == pytest.approx(max(
        compute_us, g.node_attrs["bytes_moved"][conv] / prof.mem_bw * 1e6)
        + prof.launch_s * 1e6, rel=1e-9)


def test_devices_without_bf16_list_none():
    for name in ("v100", "t4", "rtx2080ti", "p100", "p4"):
        prof = get_device(name)
        assert "bf16" not in prof.matrix and "bf16" not in prof.vector
        assert prof.peak("bf16", matrix=True) == prof.peak("fp32", matrix=True)
        assert prof.sources


# -- stages that run ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cnn_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("onnx") / "cnn.onnx"
    onnx.save(cnn(17, blocks=3).model, str(path))
    return path


@pytest.mark.parametrize("k", [2, 4, 8])
def test_exported_stages_reproduce_the_model(cnn_file, tmp_path, k, capsys):
    from jaxplace.cli.main import main
    from jaxplace.export.onnx_stages import run_stages

    result = tmp_path / "result.json"
    assert main(["partition", str(cnn_file), "--dim", "N=2", "-k", str(k), "--method",
                 "dfs", "-q", "-o", str(result)]) == 0
    data = json.loads(result.read_text())
    assert data["source_model"]["sha256"] and data["source_model"]["path"]
    out = tmp_path / "stages"
    assert main(["export", str(result), "--to", "onnx", "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["dims"] == {"N": 2} == data["source_model"]["dims"]  # as partitioned
    used = len({b for b in data["assignment"]})
    assert plan["num_stages"] == used and used >= 2
    placed = [op for st in plan["stages"] for op in st["ops"]]
    assert sorted(placed) == sorted(data["node_ids"])
    for st in plan["stages"][1:]:
        assert all(i["from_stage"] is None or i["from_stage"] < st["stage"]
                   for i in st["inputs"])
        assert all(i["bytes"] > 0 for i in st["inputs"])
    for batch in (2, 3):  # the stages keep the symbolic batch dimension
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype(
            np.float32)
        whole = ort.InferenceSession(str(cnn_file), providers=["CPUExecutionProvider"])
        want = whole.run(None, {"X": x})
        got = run_stages(str(out), {"X": x})
        for o, w in zip(whole.get_outputs(), want, strict=True):
            np.testing.assert_allclose(got[o.name], w, rtol=1e-4, atol=1e-7)
    capsys.readouterr()


def test_export_json_any_result_and_refusals(cnn_file, tmp_path, capsys):
    from jaxplace.cli.main import main

    result = tmp_path / "result.json"
    assert main(["partition", str(cnn_file), "-k", "3", "--method", "dfs", "-q", "-o",
                 str(result)]) == 0
    capsys.readouterr()
    assert main(["export", str(result), "--to", "json", "-o", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["num_stages"] == 3 and plan["tensor_unit"] == "bytes"
    crossing = {t["name"] for st in plan["stages"] for t in st["outputs"]}
    assert crossing and all(t["bytes"] > 0 for st in plan["stages"] for t in st["inputs"])
    assert main(["export", str(result), "--to", "megatron"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "needs a layer chain" in err
    other = tmp_path / "other.onnx"
    onnx.save(cnn(17, blocks=1, seed=5).model, str(other))
    assert main(["export", str(result), "--to", "onnx", "-o", str(tmp_path / "s"),
                 "--model", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "sha256" in err
    # a graph file's result: stages, ops and crossing tensors in the graph's unit
    gpath = tmp_path / "g.json"
    g = jp.CompGraph([1.0, 2.0, 3.0], [(0, 1), (1, 2)], size_out=[5.0, 6.0, 0.0])
    jp.formats.write_json(gpath, jp.formats.nodelink_data(g))
    gres = tmp_path / "gres.json"
    jp.save_result(gres, jp.Problem(g, 2), [0, 0, 1], source=str(gpath))
    assert main(["export", str(gres), "--to", "json", "-o", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [len(st["ops"]) for st in plan["stages"]] == [2, 1]
    assert plan["stages"][1]["inputs"][0]["size"] == 6.0


def test_external_data_model_exports_runnable_stages(tmp_path, capsys):
    from jaxplace.cli.main import main
    from jaxplace.export.onnx_stages import run_stages

    path = tmp_path / "ext.onnx"
    onnx.save(cnn(13, blocks=1).model, str(path), save_as_external_data=True,
              location="ext.bin", size_threshold=0)
    result = tmp_path / "r.json"
    assert main(["partition", str(path), "-k", "3", "--method", "dfs", "-q", "-o",
                 str(result)]) == 0
    assert main(["export", str(result), "--to", "onnx", "-o", str(tmp_path / "s")]) == 0
    x = np.ones((1, 3, 16, 16), np.float32)
    whole = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    want = whole.run(None, {"X": x})[0]
    got = list(run_stages(str(tmp_path / "s"), {"X": x}).values())[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    capsys.readouterr()


# -- honest reports -----------------------------------------------------------------------

def test_capacity_binds_on_folded_weights():
    built = cnn(9, blocks=1)
    g = from_onnx(built.model)
    total = g.size_param.sum()
    prefix = np.cumsum(g.size_param)
    cut = int(np.argmin(np.maximum(prefix, total - prefix)))  # nodes are in graph order
    cap = max(prefix[cut], total - prefix[cut])
    assert cap < 0.9 * total
    p = jp.Problem(g, 2, capacity=cap)
    assert np.isinf(jp.evaluate_partition(p, np.zeros(g.num_nodes, int)).bottleneck)
    a = (np.arange(g.num_nodes) > cut).astype(int)
    assert np.isfinite(jp.evaluate_partition(p, a).bottleneck)


def test_stage_table_units_and_notes():
    from jaxplace.objectives.throughput.report import stage_notes, stage_table

    g = from_onnx(cnn(17, blocks=1).model)
    p = jp.Problem(g, 4)
    a = np.zeros(g.num_nodes, int)
    a[-3:] = 1  # Reshape, Gemm, Softmax: a two-stage plan at k = 4
    cost = jp.evaluate_partition(p, a)
    head = stage_table(p, cost).splitlines()[0].split()
    assert {"work[us]", "param[bytes]", "total[us]", "io_in[us]"} <= set(head)
    notes = stage_notes(p, cost)
    assert len(notes) == 1 and "k = 4 asked, 2 stages do work" in notes[0]
    a2 = a.copy()
    reshape = g.op_types.index("Reshape")
    a2[reshape], a2[reshape + 1:] = 1, 2  # a stage holding only the (view) Reshape
    cost2 = jp.evaluate_partition(p, a2)
    assert "(no work)" in stage_table(p, cost2)
    notes2 = stage_notes(p, cost2)
    assert "2 stages do work" in notes2[0] and "stage 1 holds only ops without work" in \
        notes2[1]
    plain = jp.Problem(jp.CompGraph([1.0, 2.0], [(0, 1)]), 2)
    assert stage_notes(plain, jp.evaluate_partition(plain, [0, 1])) == []
    one = stage_notes(plain, jp.evaluate_partition(plain, [0, 0]))
    assert "k = 2 asked, 1 stage does work" in one[0]


def test_info_prints_units(cnn_file, capsys):
    from jaxplace.cli.main import main

    assert main(["info", str(cnn_file), "--dim", "N=2"]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("params"))
    assert "bytes" in line and "GB" in line
    assert " us" in next(s for s in out.splitlines() if s.startswith("work"))


# -- the onnx package's "light" models: real architectures, weights stripped to ------------
# -- ConstantOfShape (opset 9, IR 3: initializers listed as graph inputs) -----------------

LIGHT = sorted(glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend", "test",
                                      "data", "light", "light_*.onnx")))


def _independent_counts(m):
    """(float weight elements, compute ops): weights are ConstantOfShape outputs (their
    shapes read from the shape tensors) and float initializers / Constants; compute
    ops are the nodes that depend on a real graph input."""
    vals = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Constant":
            vals[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    shapes = {n.input[0] for n in m.graph.node if n.op_type == "ConstantOfShape"}
    weights = sum(int(np.prod(vals[n.input[0]])) for n in m.graph.node
                  if n.op_type == "ConstantOfShape")
    weights += sum(v.size for k, v in vals.items() if k not in shapes and v.dtype.kind == "f")
    live = {i.name for i in m.graph.input} - {t.name for t in m.graph.initializer}
    compute = 0
    for n in m.graph.node:
        if any(s in live for s in n.input):
            live.update(n.output)
            compute += 1
    return weights, compute


@pytest.mark.skipif(not LIGHT, reason="the onnx package ships no light models")
@pytest.mark.parametrize("path", LIGHT, ids=lambda p: os.path.basename(p)[6:-5])
def test_light_models_weights_and_compute_ops(path):
    m = onnx.load(path)
    weights, compute = _independent_counts(m)
    g = from_onnx(path)
    assert g.size_param.sum() == pytest.approx(4 * weights, rel=0.01)
    assert g.num_nodes == compute
    assert g.meta["unknown_ops"] == [] and g.meta["unshaped_tensors"] == []
    assert "ConstantOfShape" not in g.op_types


@pytest.mark.skipif(not LIGHT, reason="the onnx package ships no light models")
@pytest.mark.parametrize("name", ["resnet50", "inception_v2"])
def test_light_model_stages_reproduce_it(name, tmp_path, capsys):
    from jaxplace.cli.main import main
    from jaxplace.export.onnx_stages import run_stages

    path = next(p for p in LIGHT if p.endswith(f"light_{name}.onnx"))
    result, out = tmp_path / "r.json", tmp_path / "stages"
    assert main(["partition", path, "-k", "8", "--method", "dfs", "-q", "-o",
                 str(result)]) == 0
    assert main(["export", str(result), "--to", "onnx", "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert plan["num_stages"] == 8
    assert all(st["constant_nodes"] > 0 for st in plan["stages"])  # their own weights
    whole = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    feed = {whole.get_inputs()[0].name: x}
    want = whole.run(None, feed)[0]
    got = list(run_stages(str(out), feed).values())[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    capsys.readouterr()


def test_data_dependent_shapes_are_one_warning_line(capsys):
    b = helper
    nodes = [b.make_node("NonZero", ["X"], ["nz"]), b.make_node("Cast", ["nz"], ["c"], to=1),
             b.make_node("Relu", ["c"], ["Y"])]
    m = b.make_model(b.make_graph(nodes, "nz", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [4, 4])], [b.make_tensor_value_info("Y", TensorProto.FLOAT,
                                                                    None)]),
        opset_imports=[b.make_opsetid("", 17)])
    g = from_onnx(m)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "3 tensors have no static shape" in err
    assert g.num_nodes == 3 and g.node_attrs["out_bytes"].sum() == 0


def test_unequal_device_result_exports_stages_on_its_devices(cnn_file, tmp_path, capsys):
    from jaxplace.cli.main import main
    from jaxplace.export.onnx_stages import run_stages

    result, out = tmp_path / "r.json", tmp_path / "stages"
    assert main(["partition", str(cnn_file), "--dim", "N=2", "--cluster", "moirai_intra",
                 "--objective", "throughput", "--method", "dfs", "-q", "-o",
                 str(result)]) == 0
    data = json.loads(result.read_text())
    assert main(["export", str(result), "--to", "onnx", "-o", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text())
    assert [st["device"] for st in plan["stages"]] == \
        [data["stage_devices"][st["block"]] for st in plan["stages"]]
    assert len(plan["stages"]) >= 2
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32)
    want = ort.InferenceSession(str(cnn_file), providers=["CPUExecutionProvider"]).run(
        None, {"X": x})[0]
    got = list(run_stages(str(out), {"X": x}).values())[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)
    capsys.readouterr()


def test_lstm_has_a_cost_rule_and_its_weights():
    b = helper
    rng = np.random.default_rng(0)
    seq, batch, inp, hid = 5, 2, 8, 16
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("W", (1, 4 * hid, inp)), ("R", (1, 4 * hid, hid)),
                          ("B", (1, 8 * hid)))]
    nodes = [b.make_node("LSTM", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hid,
                         name="lstm"),
             b.make_node("Relu", ["Y_h"], ["Z"], name="relu")]
    m = b.make_model(b.make_graph(nodes, "rnn", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [seq, batch, inp])], [b.make_tensor_value_info(
            "Z", TensorProto.FLOAT, None)], inits), opset_imports=[b.make_opsetid("", 14)])
    g = from_onnx(m)
    assert g.meta["unknown_ops"] == [] and g.names == ("lstm", "relu")
    steps = seq * batch
    assert g.node_attrs["flops"][0] == 2 * steps * (4 * hid * inp + 4 * hid * hid) + \
        4 * steps * 4 * hid
    assert g.size_param[0] == 4 * (4 * hid * inp + 4 * hid * hid + 8 * hid)
    assert g.node_attrs["out_bytes"][0] == 4 * (seq * batch * hid + batch * hid)


def test_torch_pipelining_split_points_by_op_and_module(tmp_path, capsys):
    from jaxplace.cli.main import main
    from jaxplace.export.op_splits import module_chain, split_points

    assert module_chain("/layer1/layer1.0/conv1/Conv") == ["layer1", "layer1.0",
                                                           "layer1.0.conv1"]
    assert module_chain("Conv_7") == []
    b = helper
    names = ["/stem/conv/Conv", "/stem/relu/Relu", "/layer1/layer1.0/conv/Conv",
             "/layer1/layer1.0/relu/Relu", "/layer1/layer1.1/conv/Conv",
             "/layer1/layer1.1/relu/Relu"]
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "X"
    for i, nm in enumerate(names):
        if nm.endswith("Conv"):
            w = numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(
                np.float32), f"w{i}")
            inits.append(w)
            nodes.append(b.make_node("Conv", [x, w.name], [f"t{i}"], name=nm))
        else:
            nodes.append(b.make_node("Relu", [x], [f"t{i}"], name=nm))
        x = f"t{i}"
    m = b.make_model(b.make_graph(nodes, "scoped", [b.make_tensor_value_info(
        "X", TensorProto.FLOAT, [1, 4, 4, 4])], [b.make_tensor_value_info(
            x, TensorProto.FLOAT, [1, 4, 4, 4])], inits), opset_imports=[
        b.make_opsetid("", 17)])
    path = tmp_path / "scoped.onnx"
    onnx.save(m, str(path))
    g = from_onnx(path)
    result = tmp_path / "r.json"
    jp.save_result(result, jp.Problem(g, 3), [0, 0, 1, 1, 1, 2], source=str(path))
    assert main(["export", str(result), "--to", "torch-pipelining", "-o", "-"]) == 0
    value = json.loads(capsys.readouterr().out)["value"]
    assert value["split_spec"] == {"layer1": "BEGINNING", "layer1.1.relu": "BEGINNING"}
    assert [p["before_op"] for p in value["split_points"]] == [names[2], names[5]]
    ops = list(g.names)
    with pytest.raises(JaxplaceError, match="one run of ops"):
        split_points(ops, dict(zip(ops, [0, 1, 0, 1, 1, 1], strict=True)))
    plain = split_points(["a", "b", "c"], {"a": 0, "b": 1, "c": 1})
    assert plain == [{"stage": 1, "before_op": "b", "module": None}]
