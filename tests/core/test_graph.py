"""CompGraph and Problem construction, validation and networkx round trips."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from strategies import tiny_graphs

import jaxplace as jp


def test_arrays_and_csr():
    g = jp.CompGraph([1, 2, 3], [(0, 2), (0, 1), (1, 2), (0, 1)], [0, 1, 0], [5, 6, 7])
    assert g.num_nodes == 3 and g.num_edges == 3  # duplicate collapsed
    assert g.edges.tolist() == [[0, 1], [0, 2], [1, 2]]
    assert g.successors(0).tolist() == [1, 2] and g.predecessors(2).tolist() == [0, 1]
    assert g.num_tensors == 2  # node 2 has no consumers
    assert g.consumers(0).tolist() == [1, 2]
    assert g.consumed_tensors(2).tolist() == [0, 1]
    assert g.topo_order.tolist() == [0, 1, 2]
    with pytest.raises(ValueError):
        g.work[0] = 5  # read-only


@pytest.mark.parametrize("kwargs, match", [
    (dict(work=[1, 1], edges=[(0, 1), (1, 0)]), "cycle through node"),
    (dict(work=[1, 1], edges=[(1, 1)]), "self-loop"),
    (dict(work=[1, -1]), "negative"),
    (dict(work=[1, float("nan")]), "NaN"),
    (dict(work=[1, 1], edges=[(0, 5)]), "outside"),
    (dict(work=[]), "no nodes"),
    (dict(work=[1, 1], size_out=[1]), "entries"),
])
def test_graph_errors(kwargs, match):
    with pytest.raises(jp.JaxplaceError, match=match):
        jp.CompGraph(**kwargs)


def test_cycle_error_names_a_node_on_the_cycle():
    names = ["in", "a", "b", "c", "out"]
    with pytest.raises(jp.JaxplaceError) as err:
        jp.CompGraph([1] * 5, [(0, 1), (1, 2), (2, 3), (3, 1), (3, 4)], names=names)
    assert any(f"'{x}'" in str(err.value) for x in ("a", "b", "c"))


@pytest.mark.parametrize("kwargs, match", [
    (dict(k=0), "at least 1"), (dict(k=2.5), "integer"), (dict(k=2, bandwidth=0), "positive"),
    (dict(k=2, bandwidth=float("inf")), "positive"), (dict(k=2, memory=-1), "non-negative"),
    (dict(k=2, capacity=float("nan")), "non-negative")])
def test_problem_errors(kwargs, match):
    with pytest.raises(jp.JaxplaceError, match=match):
        jp.Problem(jp.CompGraph([1.0]), **kwargs)


def test_evaluate_partition_errors():
    g = jp.CompGraph([1, 1, 1], [(0, 1), (1, 2)], names=["x", "y", "z"])
    p = jp.Problem(g, 2)
    with pytest.raises(jp.JaxplaceError, match="cycle: edge '(x|y)' -> '(y|z)'"):
        jp.evaluate_partition(p, [0, 1, 0])
    with pytest.raises(jp.JaxplaceError, match="outside 0..1"):
        jp.evaluate_partition(p, [0, 1, 2])
    with pytest.raises(jp.JaxplaceError, match="shape"):
        jp.evaluate_partition(p, [0, 1])
    # labels need not be in DAG order
    assert jp.evaluate_partition(p, [1, 1, 0]).bottleneck == 2.0


@given(tiny_graphs(max_nodes=7))
def test_networkx_round_trip(g):
    assert jp.CompGraph.from_networkx(g.to_networkx()) == g


@given(tiny_graphs(max_nodes=6, multi_tensor=True))
def test_networkx_round_trip_multi_tensor(g):
    back = jp.CompGraph.from_networkx(g.to_networkx())
    assert back == g


def test_from_networkx_fields_and_errors():
    G = nx.DiGraph(k=3)
    G.add_node("a", work=2.0, size_param=1, op_type="matmul", cpu=7)
    G.add_node("b", work=1.0)
    G.add_edge("a", "b")
    g = jp.CompGraph.from_networkx(G)
    assert g.node_ids == ("a", "b") and g.size_out.tolist() == [0, 0]
    assert g.op_types == ("matmul", "") and g.meta == {"k": 3}
    assert "cpu" not in g.node_attrs  # not present on every node
    del G.nodes["b"]["work"]
    with pytest.raises(jp.JaxplaceError, match="node 'b' has no 'work'"):
        jp.CompGraph.from_networkx(G)
    with pytest.raises(jp.JaxplaceError, match="undirected"):
        jp.CompGraph.from_networkx(nx.Graph())
    G.nodes["b"]["work"] = "fast"
    with pytest.raises(jp.JaxplaceError, match="non-numeric"):
        jp.CompGraph.from_networkx(G)


def test_multi_tensor_sizes():
    g = jp.CompGraph([1, 1, 1], tensors=[(0, 2.0, [1]), (0, 3.0, [2]), (1, 1.0, [2])])
    assert g.size_out.tolist() == [5.0, 1.0, 0.0]
    assert g.edges.tolist() == [[0, 1], [0, 2], [1, 2]]
    p = jp.Problem(g, 3)
    cost = jp.evaluate_partition(p, [0, 1, 2])
    assert cost.io_out.tolist() == [5.0, 1.0, 0.0]
    assert cost.io_in.tolist() == [0.0, 2.0, 4.0]
    assert np.isclose(cost.bottleneck, 5.0 + 1.0)
