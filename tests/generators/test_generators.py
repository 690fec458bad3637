"""Generators: determinism, DAG validity, the REGAL recipe, DNN structure, the CLI."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from jaxplace.cli.main import main
from jaxplace.errors import JaxplaceError
from jaxplace.generators import (
    EXAMPLES,
    GENERATORS,
    MODELS,
    derive_seed,
    example,
    generate,
    inception,
    regal,
    regal_set,
    resnet,
    training_graph,
    transformer,
    unet,
)
from jaxplace.generators.regal import SIZE_MIN, WORK_FLOOR_FRACTION
from jaxplace.graph import CompGraph

SMALL = {
    "regal": {"n": 60},
    "transformer": {"layers": 2, "d_model": 64, "heads": 4, "seq": 32, "vocab": 100},
    "resnet": {"stages": (1, 1), "width": 8, "image": 32},
    "inception": {"modules": 3, "width": 8, "image": 64},
    "unet": {"depth": 2, "width": 8, "image": 32},
}


def _is_dag(g: CompGraph) -> bool:
    G = nx.DiGraph(list(map(tuple, g.edges.tolist())))
    G.add_nodes_from(range(g.num_nodes))
    return nx.is_directed_acyclic_graph(G)


def _weakly_connected(g: CompGraph) -> bool:
    G = nx.Graph(list(map(tuple, g.edges.tolist())))
    G.add_nodes_from(range(g.num_nodes))
    return nx.is_connected(G)


# -- every family ----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(GENERATORS))
def test_same_seed_same_graph_other_seed_differs(name):
    a = generate(name, seed=5, **SMALL[name])
    b = generate(name, seed=5, **SMALL[name])
    c = generate(name, seed=6, **SMALL[name])
    assert a == b
    assert not np.array_equal(a.work, c.work)
    assert a.meta["seed"] == 5 and c.meta["seed"] == 6


@pytest.mark.parametrize("name", list(GENERATORS))
def test_valid_dag_with_sane_weights(name):
    g = generate(name, seed=1, **SMALL[name])
    assert _is_dag(g)
    assert _weakly_connected(g)
    assert np.all(np.isfinite(g.work)) and np.all(g.work > 0)
    assert np.all(g.size_out > 0)
    assert np.all(g.size_param >= 0)
    assert g.names is not None and len(set(g.names)) == g.num_nodes
    assert g.op_types is not None
    assert g.meta["generator"] == name


@pytest.mark.parametrize("name", list(GENERATORS))
def test_example_is_small_and_fixed(name):
    g = example(name)
    assert g == example(name)
    assert 30 <= g.num_nodes <= 200
    assert _is_dag(g)


def test_default_example_is_transformer_of_100_to_150_nodes():
    g = example()
    assert g.meta["generator"] == "transformer"
    assert 100 <= g.num_nodes <= 150
    assert set(EXAMPLES) == set(GENERATORS)


def test_generate_rejects_unknown_names_and_options():
    with pytest.raises(JaxplaceError, match="unknown generator"):
        generate("vgg")
    with pytest.raises(JaxplaceError, match="does not apply"):
        generate("regal", layers=3)
    with pytest.raises(JaxplaceError, match="seed"):
        generate("unet", seed=-1)


@pytest.mark.parametrize("call", [
    lambda: regal(0, n=1),
    lambda: regal(0, model="lattice"),
    lambda: regal(0, noise="loud"),
    lambda: regal(0, n_range=(10, 5)),
    lambda: regal_set(-1),
    lambda: transformer(layers=0),
    lambda: transformer(d_model=100, heads=3),
    lambda: resnet(stages=()),
    lambda: resnet(block="dense"),
    lambda: resnet(stages=(2, 2, 2, 2), image=8),
    lambda: inception(modules=0),
    lambda: unet(depth=10, image=256),
    lambda: unet(jitter=1.5),
    lambda: unet(link_gbs=0),
])
def test_bad_arguments_raise_jaxplace_error(call):
    with pytest.raises(JaxplaceError):
        call()


# -- REGAL -----------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("noise", ["local", "global"])
def test_regal_work_formula_holds_exactly(model, noise):
    g = regal(11, model=model, noise=noise)
    size = g.size_out
    # Inputs of v = outputs of its predecessors (one tensor per op, all consumers).
    s = size + np.array([size[g.predecessors(v)].sum() for v in range(g.num_nodes)])
    scale = s if noise == "local" else np.full(g.num_nodes, size.sum())
    expect = np.maximum(s + g.node_attrs["regal_r"] * scale,
                        WORK_FLOOR_FRACTION * size.mean())
    np.testing.assert_allclose(g.work, expect, rtol=1e-12, atol=0)  # same float64 ops
    assert g.meta["model"] == model and g.meta["noise"] == noise
    assert g.has_default_tensors and np.all(g.size_param == 0)


@pytest.mark.parametrize("model", MODELS)
def test_regal_models_are_connected_and_sensibly_dense(model):
    degs = []
    for seed in range(4):
        g = regal(seed, model=model)
        assert 50 <= g.num_nodes <= 200
        assert _weakly_connected(g) and _is_dag(g)
        degs.append(2 * g.num_edges / g.num_nodes)
    assert 1.9 <= np.mean(degs) <= 6.0, degs


def test_regal_sizes_and_noise_statistics():
    gs = regal_set(20, seed=3)
    size = np.concatenate([g.size_out for g in gs])
    r = np.concatenate([g.node_attrs["regal_r"] for g in gs])
    assert size.min() >= SIZE_MIN
    # ~2500 draws: mean and std within a few standard errors of Normal(50, 10).
    assert abs(size.mean() - 50) < 1.0 and abs(size.std() - 10) < 1.0
    assert abs(r.mean()) < 0.01 and abs(r.std() - 0.1) < 0.01
    assert all(50 <= g.num_nodes <= 200 for g in gs)
    assert len({g.meta["model"] for g in gs}) >= 3


def test_regal_orientation_is_not_index_order():
    g = regal(0, n=100)
    assert (g.edges[:, 0] > g.edges[:, 1]).any()
    assert (g.edges[:, 0] < g.edges[:, 1]).any()


def test_regal_set_is_fixed_and_uses_derived_seeds():
    a = regal_set(4, seed=7, n_range=(60, 70))
    b = regal_set(4, seed=7, n_range=(60, 70))
    assert all(x == y for x, y in zip(a, b, strict=True))
    assert [g.meta["seed"] for g in a] == [derive_seed(7, i) for i in range(4)]
    assert len({g.meta["seed"] for g in a}) == 4
    assert all(60 <= g.num_nodes <= 70 for g in a)
    assert a[2] == regal(derive_seed(7, 2), n_range=(60, 70))
    assert regal_set(2, seed=8)[0] != regal_set(2, seed=7)[0]


def test_regal_param_sizes_optional():
    g = regal(2, n=80, param_mean=100.0)
    assert np.all(g.size_param >= 0) and 80 < g.size_param.mean() < 120


def test_regal_known_values_pin_the_stream():
    # Pins the random stream so an accidental change of draw order is noticed.
    g = regal(0)
    assert (g.num_nodes, g.num_edges, g.meta["model"]) == (178, 302, "random_geometric")


# -- DNN families ----------------------------------------------------------------------


@pytest.mark.parametrize("layers", [1, 3, 10])
def test_transformer_structure(layers):
    g = transformer(layers=layers, d_model=64, heads=4, seq=16, vocab=50)
    assert g.num_nodes == 14 * layers + 3
    idx = {name: i for i, name in enumerate(g.names)}
    edges = {tuple(e) for e in g.edges.tolist()}
    for i in range(layers):
        prev = idx["embed"] if i == 0 else idx[f"l{i - 1}.add2"]
        assert (prev, idx[f"l{i}.add1"]) in edges  # residual around attention
        assert (idx[f"l{i}.add1"], idx[f"l{i}.add2"]) in edges  # residual around MLP
        assert {(idx[f"l{i}.{w}"], idx[f"l{i}.scores"]) for w in "qk"} <= edges
        assert (idx[f"l{i}.v"], idx[f"l{i}.attn"]) in edges
    ops = dict(zip(g.names, g.op_types, strict=True))
    assert ops["l0.softmax"] == "softmax" and ops["l0.mlp_up"] == "matmul"
    assert ops["l0.gelu"] == "gelu" and ops["l0.ln1"] == "layernorm"
    # The matmuls carry the weights: q's parameters are d*d + d elements of 2 bytes.
    assert g.size_param[idx["l0.q"]] == (64 * 64 + 64) * 2


def test_transformer_costs_scale_with_size():
    small = transformer(layers=1, d_model=1024, heads=8, seq=2048, jitter=0.0)
    wide = transformer(layers=1, d_model=2048, heads=8, seq=2048, jitter=0.0)
    i = small.names.index("l0.mlp_up")
    # At these sizes mlp_up is compute-bound (roofline), so its work grows 4x with
    # d_model 2x (FLOPs 2*T*d*4d); activations grow 2x.
    assert wide.work[i] == pytest.approx(4 * small.work[i], rel=1e-9)
    assert wide.size_out[small.names.index("l0.q")] == pytest.approx(
        2 * small.size_out[small.names.index("l0.q")], rel=1e-12)


def test_jitter_is_bounded():
    base = transformer(layers=2, jitter=0.0)
    for seed in range(3):
        g = transformer(layers=2, seed=seed)
        ratio = g.work / base.work
        assert np.all(ratio >= 0.9 - 1e-12) and np.all(ratio <= 1.1 + 1e-12)
        np.testing.assert_array_equal(g.size_out, base.size_out)


@pytest.mark.parametrize("block,stages", [("basic", (2, 2)), ("bottleneck", (3, 4, 6, 3)),
                                          ("basic", (1,))])
def test_resnet_structure(block, stages):
    g = resnet(stages=stages, block=block, width=16, image=64)
    per = 7 if block == "basic" else 10
    # stem: input, conv, bn, relu, pool; projections: 2 nodes where the shape changes.
    projections = (len(stages) - 1) + (block == "bottleneck")
    assert g.num_nodes == 5 + per * sum(stages) + 2 * projections + 2
    idx = {name: i for i, name in enumerate(g.names)}
    edges = {tuple(e) for e in g.edges.tolist()}
    # Identity skip: block 1 of stage 0 adds its input (block 0's relu output).
    if stages[0] > 1:
        assert (idx["s0.b0.relu"], idx["s0.b1.add"]) in edges
    if len(stages) > 1:
        assert (idx["s1.b0.proj.bn"], idx["s1.b0.add"]) in edges
        assert (idx[f"s0.b{stages[0] - 1}.relu"], idx["s1.b0.proj"]) in edges
    assert g.op_types.count("add") == sum(stages)


@pytest.mark.parametrize("modules", [1, 3, 9, 12])
def test_inception_structure(modules):
    g = inception(modules=modules, width=16, image=128)
    reductions = len({modules // 3, 2 * modules // 3} - {0, modules}) if modules >= 3 else 0
    assert g.num_nodes == 1 + 7 + 9 * modules + 6 * reductions + 2
    idx = {name: i for i, name in enumerate(g.names)}
    preds = set(g.predecessors(idx["m0.concat"]).tolist())
    assert preds == {idx[f"m0.{b}"] for b in ("b1.1x1", "b2.3x3", "b3.3x3b", "b4.proj")}
    assert g.op_types.count("concat") == modules + reductions


@pytest.mark.parametrize("depth,convs", [(2, 1), (4, 2), (6, 3)])
def test_unet_structure_long_skips(depth, convs):
    g = unet(depth=depth, convs=convs, width=8, image=128)
    assert g.num_nodes == depth * (2 * convs + 3) + convs + 2
    idx = {name: i for i, name in enumerate(g.names)}
    for lvl in range(depth):
        skip = idx[f"enc{lvl}.conv{convs - 1}"]
        cat = idx[f"dec{lvl}.concat"]
        assert set(g.predecessors(cat).tolist()) == {skip, idx[f"dec{lvl}.up"]}
        # The skip tensor is the same size as the upsampled one it is concatenated to.
        assert g.size_out[skip] == pytest.approx(g.size_out[idx[f"dec{lvl}.up"]])


def test_large_graphs_can_be_made():
    assert transformer(layers=142, d_model=64, heads=4, seq=16).num_nodes == 14 * 142 + 3
    assert resnet(stages=(30, 30, 30, 30), width=8, image=64).num_nodes > 800


# -- CLI -------------------------------------------------------------------------------


def _read(path) -> CompGraph:
    data = json.loads(path.read_text())
    return CompGraph.from_networkx(nx.node_link_graph(data, edges="edges"))


@pytest.mark.parametrize("name,args", [
    ("regal", ["--n", "70", "--model", "watts_strogatz"]),
    ("transformer", ["--layers", "2", "--d-model", "64", "--heads", "4", "--seq", "16"]),
    ("resnet", ["--stages", "1,2", "--block", "bottleneck", "--width", "8", "--image", "32"]),
    ("inception", ["--modules", "3", "--width", "8", "--image", "64"]),
    ("unet", ["--depth", "2", "--convs", "1", "--width", "8", "--image", "32"]),
])
def test_cli_generate_round_trip(tmp_path, name, args):
    out = tmp_path / "g.json"
    assert main(["generate", name, "--seed", "4", *args, "-k", "3", "-o", str(out)]) == 0
    g = _read(out)
    assert g.meta.pop("k") == 3
    kwargs = {a.lstrip("-").replace("-", "_"): v for a, v in zip(args[::2], args[1::2],
                                                                   strict=True)}
    for key, v in kwargs.items():
        kwargs[key] = (tuple(int(x) for x in v.split(",")) if key == "stages"
                       else v if not v.isdigit() else int(v))
    ref = generate(name, seed=4, **kwargs)
    np.testing.assert_array_equal(g.work, ref.work)
    np.testing.assert_array_equal(g.edges, ref.edges)
    np.testing.assert_array_equal(g.size_out, ref.size_out)
    np.testing.assert_array_equal(g.size_param, ref.size_param)
    assert g.names == ref.names and g.op_types == ref.op_types
    assert not list(tmp_path.glob(".*.tmp"))  # no temp file left behind


def test_cli_generate_stdout(capsys):
    assert main(["generate", "unet", "--depth", "2", "--image", "32", "--width", "4"]) == 0
    data = json.loads(capsys.readouterr().out)
    g = CompGraph.from_networkx(nx.node_link_graph(data, edges="edges"))
    assert g == unet(depth=2, image=32, width=4)


@pytest.mark.parametrize("argv", [
    ["generate", "vgg"],
    ["generate", "regal", "--layers", "3"],
    ["generate", "transformer", "--n", "50"],
    ["generate", "unet", "--depth", "12"],
    ["generate", "regal", "--seed", "-2"],
    ["generate", "regal", "-k", "0"],
])
def test_cli_generate_bad_input_exits_2(tmp_path, capsys, argv):
    out = tmp_path / "g.json"
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxplace: error:") and "\n" not in err
    assert not out.exists()


def test_training_graph_mirrors_the_forward_graph():
    """2n nodes: the forward graph, the reverse of each of its edges between backward
    nodes, activation edges for the stashed share; each backward op colocated with its
    forward op, so the units are the forward nodes (no merges) and the unit DAG is the
    forward graph; the float64 reference gives every node's device its class's."""
    import jaxplace as jp
    from jaxplace.objectives.throughput.reference import decode_reference

    g = resnet(seed=3, stages=(1, 1, 1, 1))
    n, fwd = g.num_nodes, {tuple(e) for e in g.edges.tolist()}
    for stash in (0.0, 1.0):
        t = training_graph(g, 7, stash=stash)
        assert t.num_nodes == 2 * n
        bwd = t.node_attrs["is_backward"]
        assert not bwd[:n].any() and bwd[n:].all()
        np.testing.assert_array_equal(t.node_attrs["color_class"][n:],
                                      t.node_attrs["color_class"][:n])
        edges = {tuple(e) for e in t.edges.tolist()}
        assert {e for e in edges if max(e) < n} == fwd
        assert {(v - n, u - n) for u, v in edges if min(u, v) >= n} == fwd
        stashed = {(u, v - n) for u, v in edges if u < n <= v}
        assert stashed == (fwd if stash else set())
        assert t.units.num_units == n
        np.testing.assert_array_equal(t.units.unit_of[n:], t.units.unit_of[:n])
        assert np.all(t.work[n:] >= 1.5 * g.work - 1e-9)
        assert np.all(t.work[n:] <= 2.5 * g.work + 1e-9)
        np.testing.assert_array_equal(t.size_param[n:], g.size_param)
    a = decode_reference(jp.Problem(t, 4), np.linspace(0, 1, 2 * n)).assignment
    np.testing.assert_array_equal(a[n:], a[:n])
    assert training_graph(g, 7, stash=0.5, merge=0.5) == training_graph(
        g, 7, stash=0.5, merge=0.5)


def test_training_graph_merges_chains_into_classes():
    g = transformer(seed=0, layers=2)
    t = training_graph(g, 1, merge=1.0)
    cls = t.node_attrs["color_class"][:g.num_nodes]
    assert len(set(cls.tolist())) < g.num_nodes
    for v in range(g.num_nodes):  # a node joins only its one predecessor, its one user
        if cls[v] != v:
            (u,) = g.predecessors(v)
            assert cls[u] == cls[v] and g.successors(u).tolist() == [v]



def test_training_graph_orphans_are_free_backward_units():
    g = transformer(seed=0, layers=2)
    n = g.num_nodes
    assert training_graph(g, 3, orphan=0.0) == training_graph(g, 3)
    t = training_graph(g, 3, orphan=0.3)
    cls = t.node_attrs["color_class"]
    np.testing.assert_array_equal(cls[:n], training_graph(g, 3).node_attrs["color_class"][:n])
    lone = np.flatnonzero(cls[n:] != cls[:n]) + n
    assert 0.1 * n < len(lone) < 0.5 * n
    assert len(set(cls[lone].tolist())) == len(lone) and cls[lone].min() >= n
    u = t.units
    assert u.num_units == n + len(lone)
    for v in lone:  # its own unit, with no ordering edge
        w = u.unit_of[v]
        assert u.unit_members(w).tolist() == [v]
        assert u.succ_ptr[w + 1] == u.succ_ptr[w] and u.pred_ptr[w + 1] == u.pred_ptr[w]
    np.testing.assert_array_equal(u.free_units(), np.sort(u.unit_of[lone]))
    assert len(training_graph(g, 3).units.free_units()) == 0

@pytest.mark.parametrize("kw,field", [({"stash": 1.5}, "stash"), ({"merge": -0.1}, "merge"),
                                      ({"orphan": 2.0}, "orphan"),
                                      ({"backward_work": (2.0, 1.0)}, "backward_work"),
                                      ({"seed": -1}, "seed")])
def test_training_graph_bad_options_name_the_field(kw, field):
    with pytest.raises(JaxplaceError) as e:
        training_graph(regal(0, n=20), **kw)
    assert e.value.field == field
    with pytest.raises(JaxplaceError, match="backward"):
        training_graph(training_graph(regal(0, n=20)))


def test_regal_suite_cycles_k_over_the_regal_set():
    """The regal-time suite (benchmarks, `jaxplace warmup --many`): regal_set's graphs,
    graph i with k = ks[i % len(ks)]; no k is bad input."""
    from jaxplace.generators import regal_set, regal_suite

    suite = regal_suite(5, [4, 8], seed=3)
    assert [(i, k) for i, _, k in suite] == [(0, 4), (1, 8), (2, 4), (3, 8), (4, 4)]
    for (_, g, _), h in zip(suite, regal_set(5, seed=3), strict=True):
        np.testing.assert_array_equal(g.edges, h.edges)
        np.testing.assert_array_equal(g.work, h.work)
    with pytest.raises(JaxplaceError, match="at least one k"):
        regal_suite(2, [])
