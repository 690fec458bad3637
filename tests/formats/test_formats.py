"""Reading graph files, result JSON, and every error path of the readers."""

import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import NEURIPS, NEURIPS_SKIP
from hypothesis import HealthCheck, given, settings
from strategies import tiny_graphs

import jaxplace as jp
from jaxplace.formats import load_assignment, nodelink_data, write_json

SHARED = NEURIPS
WORKLOADS = sorted(glob.glob(str(SHARED / "throughput" / "*" / "*.json")))


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.skipif(not WORKLOADS, reason=NEURIPS_SKIP)
@pytest.mark.parametrize("path", WORKLOADS, ids=[os.path.basename(p) for p in WORKLOADS])
def test_shared_workloads_load(path):
    raw = json.loads(Path(path).read_text())
    p = jp.load_problem(path)
    g = p.graph
    assert g.num_nodes == len(raw["nodes"]) and p.k == raw["maxFPGAs"]
    assert p.capacity == raw["maxSizePerFPGA"]
    by_id = {d["id"]: d for d in raw["nodes"]}
    for i in range(0, g.num_nodes, 17):
        d = by_id[g.node_ids[i]]
        assert g.work[i] == d["fpgaLatency"] and g.size_param[i] == d["size"]
        assert g.node_attrs["cpu_latency"][i] == d["cpuLatency"]
        assert bool(g.node_attrs["is_backward"][i]) == bool(d["isBackwardNode"])
    costs = {}
    for e in raw["edges"]:
        costs.setdefault(e["sourceId"], set()).add(e["cost"])
    for u, cs in costs.items():
        assert g.size_out[g.node_ids.index(u)] == max(cs)
    assert jp.load_problem(path, k=2).k == 2  # the argument overrides the file


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tiny_graphs(max_nodes=6, multi_tensor=True))
def test_nodelink_round_trip(tmp_path, g):
    path = str(tmp_path / "g.json")
    write_json(path, nodelink_data(g, k=3))
    back = jp.load_graph(path)
    assert back.meta.pop("k") == 3 and back == g


def test_links_key_and_problem_fields(tmp_path):
    data = {"directed": True, "graph": {"k": 2, "bandwidth": 2.0, "memory": 1.5},
            "nodes": [{"id": "a", "work": 1, "size_out": 4}, {"id": "b", "work": 2}],
            "links": [{"source": "a", "target": "b"}]}
    p = jp.load_problem(write(tmp_path, "g.json", data))
    assert (p.k, p.bandwidth, p.memory) == (2, 2.0, 1.5)
    assert jp.evaluate_partition(p, [0, 1]).total.tolist() == [3.0, 4.0]


NODE = {"id": 1, "fpgaLatency": 1.0, "cpuLatency": 2.0, "size": 0, "supportedOnFpga": 1,
        "isBackwardNode": 0}


@pytest.mark.parametrize("data, match", [
    ("{not json", "not valid JSON"),
    ({"nodes": []}, "unrecognized format"),
    ({"nodes": [{"id": 1}], "edges": []}, r"nodes\[0\] \(id 1\): missing field 'work'"),
    ({"nodes": [{"id": 1, "work": -2}], "edges": []}, "work: negative value"),
    ({"nodes": [{"id": 1, "work": 1}, {"id": 2, "work": 1}],
      "edges": [{"source": 1, "target": 2}, {"source": 2, "target": 1}]}, "cycle through"),
    ({"nodes": [{"id": 1, "work": 1}], "edges": [{"source": 1, "target": 9}]},
     r"edges\[0\].target: unknown node 9"),
    ({"nodes": [{"id": 1, "work": 1}], "edges": [{"source": 1, "target": 1}]}, "self-loop"),
    ({"maxFPGAs": 2, "nodes": [dict(NODE, fpgaLatency="x")], "edges": []}, "expected a number"),
    ({"maxFPGAs": 2, "nodes": [{"id": 1}], "edges": []}, "missing field 'fpgaLatency'"),
    ({"maxFPGAs": 0, "nodes": [NODE], "edges": []}, "k: must be at least 1"),
    ({"maxFPGAs": 2, "nodes": [NODE, dict(NODE, id=2)],
      "edges": [{"sourceId": 1, "destId": 2, "cost": -1}]}, "negative"),
    ({"maxFPGAs": 2, "nodes": [NODE, NODE], "edges": []}, "duplicate node id"),
])
def test_reader_errors_name_file_and_field(tmp_path, data, match):
    path = write(tmp_path, "bad.json", data)
    with pytest.raises(jp.JaxplaceError, match=match) as err:
        jp.load_problem(path)
    assert str(err.value).startswith(path) and "\n" not in str(err.value)


def test_missing_file_and_missing_k(tmp_path):
    with pytest.raises(jp.JaxplaceError, match="no such file"):
        jp.load_graph(tmp_path / "nope.json")
    path = write(tmp_path, "g.json", {"nodes": [{"id": 0, "work": 1}], "edges": []})
    with pytest.raises(jp.JaxplaceError, match="pass k"):
        jp.load_problem(path)


def test_result_json_round_trip(tmp_path):
    g = jp.CompGraph([1, 2, 3, 4], [(0, 1), (1, 2), (2, 3)], size_out=[1, 1, 1, 0],
                     node_ids=["a", "b", "c", "d"])
    p = jp.Problem(g, 3)
    part = jp.reference.slice_order(p, [0, 1, 2, 3])
    out = str(tmp_path / "r.json")
    data = jp.save_result(out, p, part, method="test", seed=7, timings={"s": 0.1})
    assert data["bottleneck"] == part.cost and data["seed"] == 7
    assert sum(len(b["nodes"]) for b in data["blocks"]) == 4
    back = json.loads(Path(out).read_text())
    assert back["assignment"] == part.assignment.tolist()
    assert np.array_equal(load_assignment(out, p), part.assignment)
    back["assignment"] = [0, 1, 0, 1]
    Path(out).write_text(json.dumps(back))
    with pytest.raises(jp.JaxplaceError, match="cycle"):
        load_assignment(out, p)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(TypeError):
        write_json(tmp_path / "x.json", {"bad": object()})
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(jp.JaxplaceError, match="folder does not exist"):
        write_json(tmp_path / "no" / "x.json", {})
