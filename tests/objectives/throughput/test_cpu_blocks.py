"""CPU blocks (and CPU-only ops), colocation and training graphs in the reference model
("hetero" elsewhere means unequal devices: tests/objectives/throughput_unequal/test_hetero_throughput.py)."""

import glob
import os

import numpy as np
import pytest
from brute import brute_force_optimum, direct_block_cost, is_valid, topological_orders
from conftest import NEURIPS, NEURIPS_SKIP
from hypothesis import given
from hypothesis import strategies as st
from strategies import same_cost, tiny_cpu_block_problems

import jaxplace as jp

SHARED = NEURIPS


def min_over_orders(problem):
    return min(jp.reference.slice_order(problem, o).cost for o in topological_orders(problem.graph))


@given(tiny_cpu_block_problems(max_nodes=5))
def test_device_typed_slicing_equals_brute_force(problem):
    assert same_cost(min_over_orders(problem), brute_force_optimum(problem))


@given(tiny_cpu_block_problems(max_nodes=5, training=True))
def test_training_graphs_equal_brute_force(problem):
    assert same_cost(min_over_orders(problem), brute_force_optimum(problem))


@given(tiny_cpu_block_problems(max_nodes=6, training=True), st.randoms(use_true_random=False))
def test_decoded_partition_is_valid_and_costed(problem, rnd):
    part = jp.reference.decode_reference(problem, [rnd.random() for _ in range(problem.n)])
    if not np.isfinite(part.cost):
        return
    assert is_valid(problem, part.assignment)
    cost = jp.evaluate_partition(problem, part.assignment)
    assert same_cost(cost.bottleneck, part.cost)
    for b in range(problem.num_blocks):
        dev = "accel" if b < problem.k else "cpu"
        assert cost.device_types[b] == dev
        assert same_cost(cost.total[b], direct_block_cost(
            problem, np.flatnonzero(part.assignment == b), dev))


def test_colocation_contracts_cycles():
    # a -> b -> c with a and c colocated: b is forced into their unit
    g = jp.CompGraph([1, 1, 1, 1], [(0, 1), (1, 2), (2, 3)],
                     node_attrs={"color_class": np.array([7, -1, 7, -1])})
    assert g.units.num_units == 2 and g.units.unit_of.tolist() == [0, 0, 0, 1]
    p = jp.Problem(g, 2)
    with pytest.raises(jp.JaxplaceError, match="share color class 7"):
        jp.evaluate_partition(p, [0, 1, 1, 1])
    assert jp.reference.kahn(g, [0, 0, 0, 1]).tolist() == [0, 1, 2, 3]


def test_cpu_block_pays_no_transfers_and_unsupported_goes_to_cpu():
    g = jp.CompGraph([5, 1, 5], [(0, 1), (1, 2)], size_out=[2, 2, 0],
                     node_attrs={"cpu_latency": np.array([9.0, 3.0, 9.0]),
                                 "supported_on_accel": np.array([True, False, True])})
    p = jp.Problem(g, 2, cpus=1)
    cost = jp.evaluate_partition(p, [0, 2, 1])
    assert cost.total.tolist() == [7.0, 7.0, 3.0]
    assert cost.device_types == ["accel", "accel", "cpu"]
    with pytest.raises(jp.JaxplaceError, match="not supported on an accelerator"):
        jp.evaluate_partition(p, [0, 1, 1])
    assert jp.reference.slice_order(p, [0, 1, 2]).cost == 7.0
    with pytest.raises(jp.JaxplaceError, match="supported_on_accel") as exc:
        p.replace(cpus=0)  # no CPU block for the CPU-only op: refused up front
    assert exc.value.field == "cpus" and "\n" not in str(exc.value)
    assert jp.simple_lower_bound(p) == 5.0


def test_problem_cpu_validation():
    with pytest.raises(jp.JaxplaceError, match="cpu_latency"):
        jp.Problem(jp.CompGraph([1.0]), 1, cpus=1)
    with pytest.raises(jp.JaxplaceError, match="non-negative integer"):
        jp.Problem(jp.CompGraph([1.0]), 1, cpus=-1)


@pytest.mark.skipif(not SHARED.exists(), reason=NEURIPS_SKIP)
@pytest.mark.parametrize("name", ["resnet50_training.json", "bert_l-3_training.json"])
def test_training_workloads_decode(name):
    path = glob.glob(str(SHARED / "throughput" / "*" / name))[0]
    p = jp.load_problem(path)
    p = p.replace(cpus=p.graph.meta.get("maxCPUs", 0))
    part = jp.reference.decode_reference(p, np.random.default_rng(0).random(p.n))
    assert np.isfinite(part.cost)
    assert same_cost(jp.evaluate_partition(p, part.assignment).bottleneck, part.cost)
    assert os.path.basename(path) == name


def test_neurips_split_round_trip(tmp_path):
    import json

    from jaxplace.formats import load_assignment
    from jaxplace.formats.neurips import neurips_result

    g = jp.CompGraph([5, 1, 5, 2], [(0, 1), (1, 2), (2, 3)], size_out=[2, 2, 1, 0],
                     node_ids=[10, 11, 12, 13],
                     node_attrs={"cpu_latency": np.array([9.0, 3.0, 9.0, 1.0]),
                                 "color_class": np.array([-1, -1, 4, 4])})
    p = jp.Problem(g, 2, cpus=1)
    a = np.array([0, 2, 1, 1])
    data = neurips_result(p, a)
    assert data["maxLoad"] == jp.evaluate_partition(p, a).bottleneck
    assert [d["nodes"] for d in data["fpgas"]] == [[10], [12, 13]]
    assert data["cpus"] == [{"load": 3.0, "nodes": [11]}]
    path = tmp_path / "split.json"
    data["fpgas"][1]["nodes"] = [12]  # 13 follows its color class, as in their tools
    path.write_text(json.dumps(data))
    assert load_assignment(path, p).tolist() == a.tolist()
    res = jp.save_result(tmp_path / "r.json", p, a)
    # blocks are listed in pipeline order; the CPU stage sits between the accelerators
    assert [(b["block"], b["device"]) for b in res["blocks"]] == [
        (0, "accel"), (2, "cpu"), (1, "accel")]
    assert load_assignment(tmp_path / "r.json", p).tolist() == a.tolist()
    data["fpgas"][0]["nodes"] = [99]
    path.write_text(json.dumps(data))
    with pytest.raises(jp.JaxplaceError, match="unknown node id 99"):
        load_assignment(path, p)
