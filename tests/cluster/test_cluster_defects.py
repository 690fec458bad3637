"""Defects of the latency and cluster objectives found by an outside conformance run:
each test fails on the code before its fix.

- the speed-weighted load bound of latency treated a device whose median op time is 0
  as unusable (a bound above the optimum: a false proof);
- NaN or negative `cpu_latency`, fractional or NaN `color_class`, NaN flags were cast
  silently (a NaN `cpu_latency` gave a "proved" plan whose cost differed);
- a saved latency result reloaded at another makespan (its event order dropped);
- on unequal devices, `dfs` at k = 1 tried only the fastest device;
- a uniform cluster used the identical-device model, which ignores the cluster's
  links, device memory and per-device times: a hair's change of one device jumped the
  cost;
- the latency MILPs crashed in HiGHS when the best makespan is 0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict
from jaxplace.errors import JaxplaceError
from jaxplace.formats.results import load_assignment, save_result
from jaxplace.objectives.latency.milp import latency_lower_bound, moirai_lp_bound, solve_moirai
from jaxplace.testing import UNEQUAL, tiny_graph

TWO = {"devices": [{"name": "a", "peak_flops": 1e12, "mem_bw": 1e12, "memory": 100.0},
                   {"name": "b", "peak_flops": 1e12, "mem_bw": 1e12, "memory": 100.0}],
       "bandwidth": 10.0, "latency": 0.01}


def _latency(g, cluster=TWO):
    return jp.Problem(g, cluster=cluster_from_dict(cluster), objective="latency")


def _plain_latency_optimum(p) -> float:
    """Every placement, every op order on it (plain, independent of objectives.latency.brute):
    the makespan of independent ops is the largest device load."""
    t = p.latency.times
    n, d = t.shape
    best = math.inf
    for code in range(d ** n):
        dev = [(code // d ** i) % d for i in range(n)]
        best = min(best, max(sum(t[v, q] for v in range(n) if dev[v] == q)
                             for q in range(d)))
    return best


def test_load_bound_counts_a_free_device():
    # device a runs two ops in no time (median 0): the speed weights must not make it
    # unusable. Ops are independent, so the optimum is the best balance of loads.
    g = jp.CompGraph([1, 1, 1], [], node_attrs={"time_a": np.array([0.0, 0.0, 10.0]),
                                                "time_b": np.array([5.0, 5.0, 5.0])})
    p = _latency(g)
    opt = _plain_latency_optimum(p)
    assert opt == 5.0
    assert latency_lower_bound(p.latency) <= opt
    cert = jp.certify(p, None, methods=("simple",))
    assert cert.lower_bound <= opt
    # a poor plan (everything on b: 15) is not certified optimal
    poor = jp.certify(p, np.ones(3, np.int64), methods=("simple",))
    assert poor.upper_bound == 15.0 and not poor.optimal


@pytest.mark.parametrize("attr, values, field", [
    ("cpu_latency", [1.0, np.nan, 2.0], "cpu_latency"),
    ("cpu_latency", [1.0, -1.0, 2.0], "cpu_latency"),
    ("color_class", [0.0, 0.5, -1.0], "color_class"),
    ("color_class", [0.0, np.nan, -1.0], "color_class"),
    ("supported_on_accel", [1.0, np.nan, 0.0], "supported_on_accel"),
    ("is_backward", [1.0, np.nan, 0.0], "is_backward"),
    ("is_backward", [0, 2, 0], "is_backward"),
])
def test_node_attributes_validated(attr, values, field):
    with pytest.raises(JaxplaceError) as err:
        jp.CompGraph([1, 1, 1], [(0, 1)], node_attrs={attr: np.array(values)})
    assert err.value.field == field and "\n" not in str(err.value)


def test_node_attributes_kept_when_valid():
    g = jp.CompGraph([1, 1, 1], [(0, 1)], node_attrs={
        "cpu_latency": np.array([1, 2, 0]), "color_class": np.array([0.0, 0.0, -1.0]),
        "supported_on_accel": np.array([1, 0, 1]), "is_backward": np.array([0.0, 0, 0])})
    assert g.node_attrs["color_class"].dtype.kind == "i"
    assert g.node_attrs["supported_on_accel"].tolist() == [True, False, True]
    assert g.node_attrs["cpu_latency"].tolist() == [1.0, 2.0, 0.0]


def test_neurips_flags_and_classes_validated(tmp_path):
    import json

    data = {"nodes": [{"id": 0, "fpgaLatency": 1, "colorClass": 0.5},
                      {"id": 1, "fpgaLatency": 1}], "edges": []}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    with pytest.raises(JaxplaceError, match="color_class"):
        jp.load_graph(str(path))


def _milp_result(p, tmp_path):
    s = solve_moirai(p.latency, 20.0).schedule
    path = tmp_path / "r.json"
    return save_result(path, p, s), path


def test_latency_reload_keeps_the_saved_cost(tmp_path):
    # seed 6: the MILP's schedule (19.0) is no earliest-start schedule of the graph's
    # topological order on its devices (28.11), which a reload used to rebuild
    p = _latency(tiny_graph(6, 6), UNEQUAL)
    data, path = _milp_result(p, tmp_path)
    part = load_assignment(path, p)
    assert jp.evaluate_partition(p, part).cost == pytest.approx(data["makespan"], rel=1e-12)
    bare = jp.evaluate_partition(p, np.asarray(data["assignment"])).cost
    assert bare > data["makespan"] * 1.1  # what the reload cost before
    cert = jp.certify(p, part, methods=("simple",))
    assert cert.upper_bound == pytest.approx(data["makespan"], rel=1e-12)


def test_latency_search_partition_costs_its_result():
    p = _latency(tiny_graph(6, 6), UNEQUAL)
    r = jp.search(p, budget=300, progress=False, seed=0)
    assert jp.evaluate_partition(p, r.partition).cost == pytest.approx(r.cost, rel=1e-12)


def test_latency_reload_refuses_a_malformed_schedule(tmp_path):
    import json

    p = _latency(tiny_graph(6, 6), UNEQUAL)
    data, path = _milp_result(p, tmp_path)
    data = json.loads(path.read_text())
    data["ops"][2]["start"] = "soon"
    path.write_text(json.dumps(data))
    with pytest.raises(JaxplaceError) as err:
        load_assignment(path, p)
    assert err.value.field == "ops[2]" and "\n" not in str(err.value)


def test_latency_reload_of_edited_times_is_a_valid_schedule(tmp_path):
    """Start times edited in the file (every op at 0: overlaps) are only an event
    order: the reload replays it into a valid schedule, and saving it again writes
    that schedule, not the file's."""
    import json

    from jaxplace.objectives.latency.instance import validate_schedule

    p = _latency(tiny_graph(6, 6), UNEQUAL)
    data, path = _milp_result(p, tmp_path)
    data = json.loads(path.read_text())
    for op in data["ops"]:
        op["start"] = 0.0
    path.write_text(json.dumps(data))
    part = load_assignment(path, p)
    sched = jp.evaluate_partition(p, part).schedule
    validate_schedule(p.latency, sched)
    again = save_result(tmp_path / "again.json", p, part)
    assert again["makespan"] == pytest.approx(sched.makespan, rel=1e-12)
    assert again["makespan"] > max(op["finish"] - op["start"] for op in again["ops"])


def test_dfs_tries_every_device_at_k1():
    # the fast device cannot hold the graph; the slow one can
    c = {**UNEQUAL, "devices": [{**UNEQUAL["devices"][0], "memory": 5.0},
                                UNEQUAL["devices"][1]]}
    g = jp.CompGraph([1, 2, 3], [(0, 1), (1, 2)], size_param=[2, 2, 2], size_out=[1, 1, 1])
    p = jp.Problem(g, k=1, cluster=cluster_from_dict(c), objective="throughput")
    slow = float(p.pipeline_instance.times[:, 1].sum())
    r = jp.search(p, "dfs", progress=False)
    assert r.cost == pytest.approx(slow) and r.partition.devices == (1,)
    start = p.objective_impl.start_partition(p)
    assert start.cost == pytest.approx(slow)


def test_uniform_cluster_cost_is_continuous():
    # a DAG whose tensor skips a stage, on a uniform cluster and on one whose first
    # device has 1e-6 more bytes of memory: one model, the same cost
    g = jp.CompGraph([3, 1, 2, 4], [(0, 1), (0, 3), (1, 2), (2, 3)],
                     size_param=[1, 1, 1, 1], size_out=[5, 1, 2, 0])
    uni = {"devices": [{"name": n, "profile": "v100", "memory": 60.0} for n in "abc"],
           "bandwidth": 30.0, "latency": 0.01}
    near = {**uni, "devices": [{**uni["devices"][0], "memory": 60.0 + 1e-6},
                               *uni["devices"][1:]]}
    a = np.array([0, 1, 1, 2])
    pu = jp.Problem(g, cluster=cluster_from_dict(uni), objective="throughput")
    pn = jp.Problem(g, cluster=cluster_from_dict(near), objective="throughput")
    assert pu.cluster.is_uniform and not pn.cluster.is_uniform
    cu = jp.evaluate_partition(pu, a).cost
    cn = jp.evaluate_partition(pn, a).cost
    assert cu == pytest.approx(cn, rel=1e-12)
    # the cluster's link latency and bandwidth are in the cost: 0.01 s per tensor
    # crossing a cut, 3 tensors cross cut 1 (two sent, one forwarded) ...
    assert cu > 0.01


def test_uniform_cluster_reads_per_device_times():
    g = jp.CompGraph([1, 1], [(0, 1)], node_attrs={"time_a": np.array([1.0, 2.0]),
                                                   "time_b": np.array([1.0, 2.0])})
    c = {"devices": [{"name": n, "profile": "v100", "memory": 60.0} for n in "ab"],
         "bandwidth": 30.0, "latency": 0.0}
    p = jp.Problem(g, k=1, cluster=cluster_from_dict(c), objective="throughput")
    assert jp.evaluate_partition(p, np.zeros(2, np.int64)).cost == pytest.approx(3.0)


def test_uniform_cluster_refuses_what_it_cannot_model():
    g = tiny_graph(0, 4, cpu=True)
    c = cluster_from_dict({"devices": [{"name": n, "profile": "v100"} for n in "ab"]})
    with pytest.raises(JaxplaceError) as err:
        jp.Problem(g, cluster=c, objective="throughput", cpus=1)
    assert err.value.field == "cpus" and "\n" not in str(err.value)


@pytest.mark.parametrize("edges", [[(0, 2), (1, 2), (1, 3)], [(0, 1)]])
def test_latency_milps_at_makespan_zero(edges):
    g = jp.CompGraph([0, 0, 0, 0], edges, size_param=[1, 2, 3, 4], size_out=[3, 1, 2, 0])
    p = _latency(g)
    res = solve_moirai(p.latency, 10.0)
    assert res.makespan == 0.0 and res.bound == 0.0
    assert moirai_lp_bound(p.latency, 10.0) == 0.0
    for methods in (("milp",), ("milp-lp",), None):
        cert = jp.certify(p, None, methods=methods)
        assert cert.lower_bound == 0.0 and cert.optimal
