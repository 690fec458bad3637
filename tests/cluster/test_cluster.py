"""Cluster files: the documented form loads, examples ship, bad input names the field."""

import json

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict, example_names, load_cluster, uniform_cluster
from jaxplace.errors import JaxplaceError


def test_documented_form_loads():
    c = cluster_from_dict({"devices": [{"name": "gpu0", "profile": "h100", "memory": 80e9},
                                       {"name": "gpu1", "profile": "a100", "memory": 40e9}],
                           "bandwidth": [[0, 4.5e10], [4.0e10, 0]]})
    assert c.names == ["gpu0", "gpu1"]
    assert c.profiles[1].name == "a100"
    np.testing.assert_array_equal(c.memory, [80e9, 40e9])
    # row = sender: 0 -> 1 runs at 4.5e10, 1 -> 0 at 4.0e10
    assert c.transfer_time(4.5e10, 0, 1) == pytest.approx(1.0)
    assert c.transfer_time(4.0e10, 1, 0) == pytest.approx(1.0)
    assert c.transfer_time(1e12, 1, 1) == 0.0
    assert not c.is_uniform


def test_explicit_rates_overrides_and_defaults():
    c = cluster_from_dict({"devices": [
        {"name": "a", "peak_flops": 1e14, "mem_bw": 1e12, "memory": 16e9},
        {"name": "b", "profile": "t4", "peak_tflops": 30},
        "v100"], "bandwidth": 1e10, "latency": 1e-5})
    assert c.profiles[0].peak("fp32", matrix=True) == 1e14
    assert c.profiles[1].peak("fp16", matrix=True) == 30e12
    assert c.devices[1].memory == c.profiles[1].memory_bytes
    assert c.names[2] == "v1002"
    assert c.transfer_time(1e10, 0, 2) == pytest.approx(1.0 + 1e-5)
    # no bandwidth: the slower of the two profiles' links
    d = cluster_from_dict({"devices": ["h100", "t4"]})
    assert d.bandwidth[0, 1] == d.profiles[1].link_bw


def test_examples_are_moirai_testbeds():
    assert example_names() == ["moirai_inter", "moirai_intra"]
    inter = load_cluster("moirai_inter")
    assert [p.name for p in inter.profiles] == ["rtx2080ti", "t4", "p4", "rtx3060ti"]
    # Table III: B -> A at 42.39 Gbit/s, A -> B at 44.26 (asymmetric)
    assert inter.bandwidth[1, 0] == pytest.approx(42.39e9 / 8)
    assert inter.bandwidth[0, 1] == pytest.approx(44.26e9 / 8)
    intra = load_cluster("moirai_intra")
    np.testing.assert_array_equal(intra.memory, [32e9, 32e9, 16e9, 16e9])
    assert np.all(np.isinf(np.diag(intra.bandwidth)))


def test_round_trip_and_uniform(tmp_path):
    c = load_cluster("moirai_intra")
    path = tmp_path / "c.json"
    path.write_text(json.dumps(c.to_dict()))
    d = load_cluster(path)
    np.testing.assert_array_equal(c.bandwidth, d.bandwidth)
    np.testing.assert_array_equal(c.latency, d.latency)
    assert c.names == d.names and [p.name for p in d.profiles] == ["v100"] * 2 + ["p100"] * 2
    u = uniform_cluster(3, "a100")
    assert u.is_uniform and u.num_devices == 3 and u.bandwidth[0, 2] == u.profiles[0].link_bw
    assert jp.load_cluster is load_cluster


@pytest.mark.parametrize("data, field", [
    ({"devices": []}, "devices"),
    ({"devices": [{"name": "x", "profile": "h900"}]}, "devices[0].profile"),
    ({"devices": [{"name": "x"}]}, "devices[0]"),
    ({"devices": ["h100", {"name": "h1000", "profile": "h100"}]}, "devices[1].name"),
    ({"devices": ["h100", "h100"], "bandwidth": [[0, 1], [1, 0], [1, 1]]}, "bandwidth"),
    ({"devices": ["h100", "h100"], "bandwidth": [[0, 1], [1]]}, "bandwidth[1]"),
    ({"devices": ["h100", "h100"], "bandwidth": [[0, -1], [1, 0]]}, "bandwidth[0][1]"),
    ({"devices": ["h100", "h100"], "bandwidth": 1e9, "latency": [[0, "a"], [0, 0]]},
     "latency[0][1]"),
    ({"devices": [{"name": "x", "profile": "h100", "memory": -1}]}, "devices[0].memory"),
    ({"devices": ["h100"], "links": 3}, "links"),
])
def test_bad_input_names_file_and_field(tmp_path, data, field):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JaxplaceError) as e:
        load_cluster(path)
    assert e.value.source == str(path)
    assert e.value.field == field, str(e.value)
    assert "\n" not in str(e.value)


def test_missing_file():
    with pytest.raises(JaxplaceError, match="no-such"):
        load_cluster("no-such-cluster.json")
