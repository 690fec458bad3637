"""Fusion-aware coarsening (MOIRAI Algorithm 1 with rules as data): DAG output, the
mapping back, fused roofline costs, rules firing on ONNX and JAX models."""

from __future__ import annotations

import numpy as np
import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers import roofline as rl
from jaxplace.importers.coarsen import coarsen
from jaxplace.importers.coarsen import expand_assignment as coarsen_expand
from jaxplace.importers.devices import get_device
from jaxplace.importers.fusion import (
    DEFAULT_RULES,
    FusionRule,
    expand_assignment,
    fuse,
    group_cost,
)

onnx = pytest.importorskip("onnx")
from onnx_models import cnn_mlp_onnx  # noqa: E402

# float64 sums of the same terms in another order
RTOL = 1e-12


@pytest.fixture(scope="module")
def onnx_graph():
    from jaxplace.importers import from_onnx

    return from_onnx(cnn_mlp_onnx(), device="h100", fusion="none")  # as exported


def by_type(graph, op):
    return [i for i, t in enumerate(graph.op_types) if t == op]


def test_rules_fire_on_onnx(onnx_graph):
    f = fuse(onnx_graph)
    assert f.num_nodes == 4  # conv_bn_relu, conv_bn_add_relu, Reshape, matmul_bias_act
    assert set(f.op_types) == {"Conv+BatchNormalization+Relu",
                               "Conv+BatchNormalization+Add+Relu", "Reshape",
                               "MatMul+Add+Gelu"}
    assert f.meta["fusion_rules"] == {"conv_bn_relu": 1, "conv_bn_add_relu": 1,
                                      "matmul_bias_act": 1}
    # the importer option gives the same graph
    from jaxplace.importers import from_onnx

    g2 = from_onnx(cnn_mlp_onnx(), device="h100", coarsen="fusion", fusion="none")
    assert g2.op_types == f.op_types
    np.testing.assert_allclose(g2.work, f.work, rtol=RTOL)


def test_fused_cost_is_the_roofline_of_the_group(onnx_graph):
    g = onnx_graph
    f = fuse(g)
    dev = get_device("h100")
    (i,) = by_type(f, "Conv+BatchNormalization+Relu")
    members = f.meta["fusion_members"][i]
    # by hand: one round trip = input X, conv weights and bias, 4 BN vectors, output r1
    C, HW = 4, 8
    nbytes = 4 * (3 * HW * HW + C * 27 + C + 4 * C + C * HW * HW)
    flops = g.node_attrs["flops"][members]
    peaks = [dev.peak("fp32", matrix=rl.classify(g.op_types[v]) == "matrix")
             for v in members]
    want = (max(sum(fl / p for fl, p in zip(flops, peaks, strict=True)),
                nbytes / dev.mem_bw) + dev.launch_s) * 1e6
    assert f.node_attrs["bytes_moved"][i] == pytest.approx(nbytes, rel=RTOL)
    assert f.work[i] == pytest.approx(want, rel=RTOL)
    assert group_cost(g, members)["time_us"] == pytest.approx(want, rel=RTOL)
    assert f.node_attrs["flops"][i] == pytest.approx(flops.sum(), rel=RTOL)
    # every fused node costs at most its members, and singles keep their cost
    for i, m in enumerate(f.meta["fusion_members"]):
        assert f.work[i] <= g.work[m].sum() * (1 + RTOL)
        if len(m) == 1:
            assert f.work[i] == g.work[m[0]]
    assert f.size_param.sum() == g.size_param.sum()


def _block_dag(graph: CompGraph, assignment) -> bool:
    """The blocks of `assignment` form a DAG (Kahn on the quotient)."""
    a = np.asarray(assignment)
    blocks = sorted(set(a.tolist()))
    edges = {(a[u], a[v]) for u, v in graph.edges if a[u] != a[v]}
    indeg = {b: 0 for b in blocks}
    for _, v in edges:
        indeg[v] += 1
    ready = [b for b in blocks if indeg[b] == 0]
    seen = 0
    while ready:
        b = ready.pop()
        seen += 1
        for x, y in edges:
            if x == b:
                indeg[y] -= 1
                if indeg[y] == 0:
                    ready.append(y)
    return seen == len(blocks)


TYPES = ["Conv", "BatchNormalization", "Relu", "Add", "MatMul", "Gelu", "Reshape",
         "dot_general", "add", "tanh", "max", "mul", "reduce_sum", "exp"]


def random_typed_graph(seed: int, n: int) -> CompGraph:
    rng = np.random.default_rng(seed)
    edges = []
    for v in range(1, n):
        # mostly chains (so rules fire), some fan-in and fan-out
        edges.append((v - 1, v) if rng.random() < 0.7 else (int(rng.integers(0, v)), v))
        if rng.random() < 0.3:
            edges.append((int(rng.integers(0, v)), v))
    return CompGraph(rng.uniform(0, 2, n), edges, rng.uniform(0, 5, n), rng.uniform(0, 1, n),
                     op_types=[TYPES[i] for i in rng.integers(0, len(TYPES), n)])


@pytest.mark.parametrize("seed", range(12))
def test_fused_graph_is_a_dag_and_maps_back(seed):
    g = random_typed_graph(seed, 30)
    f = fuse(g)  # CompGraph's constructor rejects cycles
    members = f.meta["fusion_members"]
    assert sorted(v for m in members for v in m) == list(range(g.num_nodes))
    for m in members:  # edges leave a group only from its last member
        for v in m[:-1]:
            assert set(g.successors(v).tolist()) <= set(m)
    # no attributes or device profile: costs add up
    np.testing.assert_allclose(f.work.sum(), g.work.sum(), rtol=RTOL)
    assert f.meta["fusion_cost"] == "sum of members"
    rng = np.random.default_rng(seed)
    pos = np.empty(f.num_nodes, dtype=np.int64)
    pos[f.topo_order] = np.arange(f.num_nodes)
    for k in (2, 3, 5):
        cuts = np.sort(rng.choice(np.arange(1, f.num_nodes), size=k - 1, replace=False))
        part = np.searchsorted(cuts, pos, side="right")  # contiguous in a topo order
        assert _block_dag(f, part)
        orig = expand_assignment(f, part)
        assert orig.shape == (g.num_nodes,)
        assert set(orig.tolist()) == set(part.tolist())
        assert _block_dag(g, orig)
        for i, m in enumerate(members):
            assert np.all(orig[m] == part[i])


def test_jax_rules_fire():
    import jax
    import jax.numpy as jnp

    from jaxplace.importers import from_jax

    def net(x, w, scale, shift, wd, bd):
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME")
        y = jnp.maximum(y * scale + shift, 0.0)  # inference batch norm, relu
        return jnp.tanh(y.reshape(y.shape[0], -1) @ wd + bd)

    args = (jnp.ones((2, 3, 8, 8)), jnp.ones((4, 3, 3, 3)), jnp.ones((1, 4, 1, 1)),
            jnp.ones((1, 4, 1, 1)), jnp.ones((256, 10)), jnp.ones(10))
    g = from_jax(net, *args, param_argnums=(1, 2, 3, 4, 5))
    f = fuse(g)
    assert f.meta["fusion_rules"].get("conv_epilogue") == 1
    assert f.meta["fusion_rules"].get("matmul_bias_act") == 1
    assert "conv_general_dilated+mul+add+max" in f.op_types
    assert "dot_general+add+tanh" in f.op_types
    for i, m in enumerate(f.meta["fusion_members"]):
        assert f.work[i] <= g.work[m].sum() * (1 + RTOL)
    assert from_jax(net, *args, param_argnums=(1, 2, 3, 4, 5),
                    coarsen="fusion").num_nodes == f.num_nodes


def test_transformer_op_count_reduction():
    import jax.numpy as jnp
    from flax import nnx

    from jaxplace.importers import from_jax

    class Block(nnx.Module):
        def __init__(self, d, h, f, rngs):
            self.ln1 = nnx.LayerNorm(d, rngs=rngs)
            self.ln2 = nnx.LayerNorm(d, rngs=rngs)
            self.attn = nnx.MultiHeadAttention(num_heads=h, in_features=d, decode=False,
                                               rngs=rngs)
            self.fc1 = nnx.Linear(d, f, rngs=rngs)
            self.fc2 = nnx.Linear(f, d, rngs=rngs)

        def __call__(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

    g = from_jax(Block(32, 4, 64, nnx.Rngs(0)), jnp.ones((2, 8, 32)))
    f = fuse(g)
    ratio = f.num_nodes / g.num_nodes
    print(f"transformer block: {g.num_nodes} -> {f.num_nodes} ops ({ratio:.2f}x), "
          f"work {g.work.sum():.2f} -> {f.work.sum():.2f} us, rules {f.meta['fusion_rules']}")
    assert ratio < 0.85
    assert f.work.sum() < g.work.sum()
    # composing with the conservative coarsening still maps back to the raw graph
    c = coarsen(g)
    fc = fuse(c)
    raw = coarsen_expand(fc, np.arange(fc.num_nodes))
    assert raw.shape == (g.num_nodes,)


def test_bad_input():
    with pytest.raises(JaxplaceError, match="op types"):
        fuse(CompGraph([1.0, 2.0], [(0, 1)]))
    g = random_typed_graph(0, 5)
    with pytest.raises(JaxplaceError, match="rules"):
        fuse(g, rules=[("Conv", "Relu")])
    with pytest.raises(JaxplaceError, match="not fused"):
        expand_assignment(g, np.zeros(5))
    f = fuse(g)
    with pytest.raises(JaxplaceError, match="assignment"):
        expand_assignment(f, np.zeros(f.num_nodes + 1))
    with pytest.raises(JaxplaceError, match="node_attrs"):
        group_cost(g, [0, 1])


def test_custom_rules_and_empty_rule_set():
    g = random_typed_graph(1, 20)
    assert fuse(g, rules=()).num_nodes == g.num_nodes
    only = (FusionRule("conv_bn", (frozenset({"Conv"}), frozenset({"BatchNormalization"}))),)
    f = fuse(g, rules=only)
    assert set(f.meta["fusion_rules"]) <= {"conv_bn"}
    assert len(DEFAULT_RULES) >= 8
