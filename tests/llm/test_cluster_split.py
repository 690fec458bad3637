"""Layer chains on unequal clusters: the DP over device orders equals brute force."""

import itertools

import numpy as np
import pytest

from jaxplace.cluster import cluster_from_dict, load_cluster, uniform_cluster
from jaxplace.errors import JaxplaceError
from jaxplace.llm.cluster_split import (
    _class_orders,
    _count_sequences,
    chain_arrays,
    cluster_split,
    stage_costs,
)
from jaxplace.llm.graph import layer_graph
from jaxplace.llm.hetero import chain_split

TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 32000, "max_position_embeddings": 512}


def _mixed(bw=None):
    data = {"devices": [{"name": "a", "profile": "h100", "memory": 80e9},
                        {"name": "b", "profile": "a100", "memory": 40e9},
                        {"name": "c", "profile": "t4", "memory": 16e9}],
            "bandwidth": bw or [[0, 5e10, 1e10], [3e10, 0, 2e10], [1e10, 4e10, 0]],
            "latency": 1e-5}
    return cluster_from_dict(data)


def _brute(chain, cluster, k, training):
    m = chain.work.shape[1]
    best = np.inf
    for order in itertools.permutations(range(cluster.num_devices), k):
        for inner in itertools.combinations(range(1, m), k - 1):
            cuts = (0, *inner, m)
            times, mems = stage_costs(chain, cluster, order, cuts, training)
            if np.all(mems <= chain.caps[list(order)]):
                best = min(best, times.max())
    return best


@pytest.mark.parametrize("mode, k", [("training", 3), ("inference", 2), ("training", 1)])
def test_dp_over_orders_equals_brute_force(mode, k):
    cluster = _mixed()
    plan = cluster_split(TINY, cluster, stages=k, mode=mode)
    from jaxplace.llm.config import read_config
    from jaxplace.llm.graph import _workload

    wl = _workload(read_config(TINY, "t"), None, {"mode": mode}, "t")
    chain, _ = chain_arrays(TINY, cluster, wl)
    assert plan.bottleneck == pytest.approx(_brute(chain, cluster, k, wl.training), rel=1e-12)
    assert plan.stage_times.max() == pytest.approx(plan.bottleneck, rel=1e-12)
    assert len(set(plan.devices)) == k
    # stages in pipeline order along the chain, none empty
    assert np.all(np.diff(plan.assignment) >= 0) and set(plan.assignment) == set(range(k))


def test_memory_forces_the_small_device_to_take_less():
    # a tight T4: the best plan still fits every stage in its device's share
    cluster = _mixed()
    plan = cluster_split(TINY, cluster, stages=3)
    caps = cluster.memory[list(plan.devices)] * 0.9
    assert np.all(plan.stage_memory <= caps)
    small = cluster_from_dict({"devices": [{"name": "x", "profile": "t4", "memory": 1e6}]})
    with pytest.raises(JaxplaceError, match="memory"):
        cluster_split(TINY, small)


def test_uniform_cluster_matches_chain_split():
    """On identical devices and links the cluster DP is `chain_split` with link times."""
    cluster = uniform_cluster(3, "h100")
    plan = cluster_split(TINY, cluster)
    g = layer_graph(TINY, device="h100")
    _, cost = chain_split(g, [80e9 * 0.9] * 3)
    assert plan.bottleneck == pytest.approx(cost, rel=1e-9)
    assert plan.orders_tried == 1


def test_orders_are_distinct_class_sequences():
    c = load_cluster("moirai_intra")  # V100, V100, P100, P100
    orders = _class_orders(c, 4)
    assert len(orders) == 6 == _count_sequences([2, 2], 4)
    assert len({tuple(o) for o in orders}) == 6
    assert _count_sequences([1, 1, 1], 2) == 6
    with pytest.raises(JaxplaceError, match="between 1"):
        cluster_split(TINY, c, stages=5)


def test_evaluate_split_agrees_with_the_plan_and_finds_overflow():
    cluster = _mixed()
    plan = cluster_split(TINY, cluster, stages=3)
    from jaxplace.llm.cluster_split import evaluate_split

    times, mems, fits = evaluate_split(TINY, cluster, plan.assignment, plan.devices)
    np.testing.assert_allclose(times, plan.stage_times, rtol=1e-12)
    assert fits.all()
    big = cluster_from_dict({"devices": [{"name": "x", "profile": "t4", "memory": 1e8},
                                         {"name": "y", "profile": "t4", "memory": 16e9}]})
    g = layer_graph(TINY, device="t4")
    uniform = np.r_[np.zeros(g.num_nodes - 2, int), [1, 1]]
    _, _, fits = evaluate_split(TINY, big, uniform)
    assert not fits[0] and fits[1]


def test_partition_config_on_cluster_then_export(tmp_path, capsys):
    import json

    from jaxplace.cli.main import main

    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({**TINY, "jaxplace": {"mode": "inference"}}))
    result = tmp_path / "r.json"
    assert main(["partition", str(config), "--cluster", "moirai_intra", "-q",
                 "-o", str(result)]) == 0
    r = json.loads(result.read_text())
    plan = cluster_split(TINY, load_cluster("moirai_intra"), mode="inference")
    assert r["assignment"] == plan.assignment.tolist()
    assert r["bottleneck"] == pytest.approx(plan.bottleneck)
    assert r["stage_devices"] == [load_cluster("moirai_intra").names[d] for d in plan.devices]
    capsys.readouterr()
    assert main(["export", str(result), "--to", "vllm"]) == 0
    out = capsys.readouterr().out
    assert "VLLM_PP_LAYER_PARTITION=" in out and "rank 0: " in out
    # training does not fit a 1 MB device: one line, exit 2, nothing written
    small = tmp_path / "c.json"
    small.write_text(json.dumps({"devices": [{"name": "x", "profile": "t4", "memory": 1e6}]}))
    bad = tmp_path / "bad.json"
    assert main(["partition", str(config), "--cluster", str(small), "-q", "-o", str(bad)]) == 2
    assert not bad.exists()
    assert "memory" in capsys.readouterr().err
