"""`--coarsen fusion` on the command line: parsing, and partition/import results that
map back to every op of the original ONNX model (issue 17)."""

from __future__ import annotations

import json

import pytest

from jaxplace.cli.main import build_parser, main

onnx = pytest.importorskip("onnx")
from onnx_models import cnn_mlp_onnx  # noqa: E402  (11 ops: conv/bn/relu, matmul/add/gelu)

N_ORIGINAL = 11


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("fusion") / "cnn_mlp.onnx"
    onnx.save(cnn_mlp_onnx(), str(path))
    return str(path)


def test_coarsen_flag_values():
    p = build_parser()
    assert p.parse_args(["partition", "m.onnx"]).coarsen is False
    assert p.parse_args(["partition", "m.onnx", "--coarsen"]).coarsen is True
    assert p.parse_args(["partition", "m.onnx", "--coarsen", "fusion"]).coarsen == "fusion"
    assert p.parse_args(["import", "m.onnx", "--coarsen=fusion"]).coarsen == "fusion"
    assert p.parse_args(["partition", "m.onnx", "--coarsen", "-k", "2"]).coarsen is True
    with pytest.raises(SystemExit) as e:
        p.parse_args(["partition", "m.onnx", "--coarsen", "bogus"])
    assert e.value.code == 2


def _check_original(data, key):
    ops = data["original_ops"]
    assert len(ops) == N_ORIGINAL > data["num_nodes"]
    groups = {}
    for op in ops:
        groups.setdefault(op["group"], []).append(op)
    assert len(groups) == data["num_nodes"]
    for members in groups.values():  # one group, one device/block
        assert len({json.dumps(m[key]) for m in members}) == 1
    return ops


def test_partition_throughput_fusion(model_path, tmp_path):
    out = tmp_path / "r.json"
    assert main(["partition", model_path, "-k", "2", "--budget", "30", "--coarsen",
                 "fusion", "-o", str(out), "--quiet"]) == 0
    data = json.loads(out.read_text())
    ops = _check_original(data, "block")
    by_node = dict(zip(data["node_ids"], data["assignment"], strict=True))
    assert all(op["block"] == by_node[op["group"]] for op in ops)


def test_partition_latency_fusion(model_path, tmp_path):
    out = tmp_path / "r.json"
    assert main(["partition", model_path, "--cluster", "moirai_intra", "--objective",
                 "latency", "--budget", "30", "--coarsen", "fusion", "-o", str(out),
                 "--quiet"]) == 0
    data = json.loads(out.read_text())
    ops = _check_original(data, "device")
    by_id = {op["id"]: op for op in data["ops"]}
    for op in ops:
        g = by_id[op["group"]]
        assert (op["device"], op["start"], op["finish"]) == (g["device"], g["start"],
                                                             g["finish"])


def test_import_fusion(model_path, tmp_path):
    out = tmp_path / "g.json"
    assert main(["import", model_path, "--coarsen", "fusion", "-o", str(out)]) == 0
    from jaxplace.formats import load_graph

    g = load_graph(str(out))
    assert g.num_nodes < N_ORIGINAL
    # MOIRAI's rules group the runtime-fused graph (MatMul + bias Add already one Gemm:
    # 10 nodes); coarsen_members compose both and reach the 11 ONNX ops
    assert sorted(v for m in g.meta["fusion_members"] for v in m) == list(
        range(N_ORIGINAL - 1))
    assert sorted(v for m in g.meta["coarsen_members"] for v in m) == list(range(N_ORIGINAL))
    out2 = tmp_path / "g2.json"
    assert main(["import", model_path, "--fusion", "none", "--coarsen", "fusion",
                 "-o", str(out2)]) == 0
    g2 = load_graph(str(out2))
    assert sorted(v for m in g2.meta["fusion_members"] for v in m) == list(range(N_ORIGINAL))


def test_runtime_fusion_line_and_flag(model_path, tmp_path, capsys):
    """import and partition say what the ONNX importer fused (the MatMul + bias Add of
    the model); --fusion none costs it as exported, and says so; a bad value exits 2."""
    assert main(["import", model_path, "-o", str(tmp_path / "g.json")]) == 0
    assert "runtime fusion (costed as ONNX Runtime" in capsys.readouterr().out
    assert main(["partition", model_path, "-k", "2", "-o", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "1 MatMul+Add -> Gemm" in out and f"{N_ORIGINAL} ONNX compute ops -> " \
        f"{N_ORIGINAL - 1} nodes" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["num_nodes"] == N_ORIGINAL - 1 and len(data["original_ops"]) == N_ORIGINAL
    assert main(["partition", model_path, "-k", "2", "--fusion", "none"]) == 0
    out = capsys.readouterr().out
    assert f"n={N_ORIGINAL} " in out and "runtime fusion: off (--fusion none)" in out
    assert main(["partition", model_path, "-k", "2", "--fusion", "ort"]) == 2
    assert "--fusion" in capsys.readouterr().err
