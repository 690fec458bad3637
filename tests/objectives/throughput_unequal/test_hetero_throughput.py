"""Pipeline throughput on unequal devices (issue 17, `jaxplace.objectives.throughput_unequal`).

The reference DP against brute force over every split, every topological order and
every device order; the batched JAX decoder against the reference; the search, the
problem wiring and bad input.

Tolerances: reference vs brute force and `evaluate_stages`: 1e-9 relative (float64 sums
in another association). JAX (float32) vs reference (float64): FLOAT32_RTOL (1e-4); the
strategies draw integer times, memory and capacities (exact in float32, so a memory
limit never flips between the two) and bandwidths that are small integers.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from brute import topological_orders
from compiles import count_compiles
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import tiny_graphs

import jaxplace as jp
from jaxplace.cluster import cluster_from_dict, uniform_cluster
from jaxplace.cluster.times import instance_from
from jaxplace.errors import JaxplaceError
from jaxplace.objectives.latency.instance import LatencyInstance
from jaxplace.objectives.throughput_unequal import brute, decoder, reference
from jaxplace.objectives.throughput_unequal.bound import lower_bound

REL = 1e-9


def close(a: float, b: float, rtol: float = REL) -> bool:
    if np.isinf(a) or np.isinf(b):
        return a == b
    return abs(a - b) <= rtol * max(1.0, abs(a), abs(b))


@st.composite
def instances(draw, max_nodes: int = 5, max_devices: int = 3):
    """A LatencyInstance on a tiny graph: integer op times (d columns), memory and
    capacities, bandwidths 1..3, per-transfer latency 0, 0.5 or 1."""
    g = draw(tiny_graphs(max_nodes))
    n, d = g.num_nodes, draw(st.integers(1, max_devices))
    ints = lambda lo, hi, size: np.array(draw(st.lists(st.integers(lo, hi), min_size=size,  # noqa: E731
                                                       max_size=size)), float)
    times = ints(0, 9, n * d).reshape(n, d)
    memory = ints(0, 4, n)
    capacity = ints(2, 12, d)
    bw = ints(1, 3, d * d).reshape(d, d)
    lat = ints(0, 2, d * d).reshape(d, d) / 2
    np.fill_diagonal(bw, np.inf)
    np.fill_diagonal(lat, 0.0)
    return LatencyInstance(g, times, memory, capacity, bw, lat, g.tensor_size)


@given(instances(max_nodes=6), st.integers(1, 3), st.randoms(use_true_random=False))
def test_dp_equals_every_split(inst, k, rnd):
    """One order, one device sequence: the DP is the best of every split."""
    order = list(inst.graph.topo_order)
    devs = list(range(inst.num_devices))
    rnd.shuffle(devs)
    part = reference.slice_on_devices(inst, order, devs, k)
    assert close(part.cost, brute.best_split(inst, order, devs, k))
    if np.isfinite(part.cost):
        assert part.devices == tuple(devs[:part.num_blocks])
        sc = reference.evaluate_stages(inst, part.assignment, part.devices)
        assert close(sc.bottleneck, part.cost) and sc.feasible


@settings(max_examples=40)
@given(instances(max_nodes=5), st.integers(1, 3))
def test_dp_over_orders_equals_brute_force(inst, k):
    """Min over topological orders and device orders of the DP = the optimum over every
    pipeline (stage maps with forward edges, ordered distinct devices)."""
    best = min(reference.slice_on_devices(inst, o, list(p), k).cost
               for o in topological_orders(inst.graph)
               for p in itertools.permutations(range(inst.num_devices)))
    assert close(best, brute.optimum(inst, k))


def _rows(inst, rnd, P: int = 4) -> np.ndarray:
    n, d = inst.n, inst.num_devices
    X = np.array([[rnd.random() for _ in range(n + d)] for _ in range(P)], np.float32)
    X[0, :n] = X[0, 0]  # ties: Kahn goes by node index
    X[1, n:] = np.round(X[1, n:] * 2) / 2  # device-key ties: by device index
    return X


#: One padded shape for every drawn instance (3 devices): few compiles.
SPEC = decoder.HeteroSpec(N=16, Ds=16, T=16, E=64, D=3, K=3, B=4, window=True)


@given(instances(max_nodes=12, max_devices=3).filter(lambda i: i.num_devices == 3),
       st.randoms(use_true_random=False))
def test_jax_decoder_equals_reference(inst, rnd):
    """Both window forms: the memory windows (sparse table) and, when every device
    holds every op, the prefix minimum."""
    X = _rows(inst, rnd)
    want = np.array([reference.decode(inst, x, 3).cost for x in X])
    specs = [SPEC]
    if not decoder.make_spec(inst, 3).window:
        specs.append(decoder.HeteroSpec(**{**SPEC.__dict__, "window": False}))
    for spec in specs:
        got = decoder.evaluate(inst, 3, X, spec=spec)
        for a, b in zip(got, want, strict=True):
            assert close(a, b, decoder.FLOAT32_RTOL), (spec, got, want)


def _jit_static(fn):
    import jax

    return jax.jit(fn, static_argnums=0)


DENSE = _jit_static(decoder.slice_one)
BISECT = _jit_static(decoder.slice_bisect)


@pytest.mark.parametrize("k", [1, 4])
def test_jax_decoder_stages(k):
    """One stage, and 4 stages on 4 devices, on random graphs (one shape each)."""
    rng = np.random.default_rng(k)
    for _ in range(3):
        n = int(rng.integers(5, 15))
        g = jp.CompGraph(rng.integers(1, 9, n).astype(float),
                         [(i, j) for i in range(n) for j in range(i + 1, n)
                          if rng.random() < 0.3], size_out=rng.integers(0, 5, n).astype(float))
        d = 4
        bw = rng.integers(1, 4, (d, d)).astype(float)
        np.fill_diagonal(bw, np.inf)
        inst = LatencyInstance(g, rng.integers(0, 9, (n, d)).astype(float),
                               np.zeros(n), rng.integers(4, 14, d).astype(float), bw,
                               np.full((d, d), 0.5) - 0.5 * np.eye(d), g.tensor_size)
        # no op memory: the prefix-minimum form (the windows are the hypothesis test's)
        spec = decoder.HeteroSpec(N=16, Ds=16, T=16, E=128, D=4, K=k, B=4, window=False)
        X = rng.random((4, n + d)).astype(np.float32)
        got = decoder.evaluate(inst, k, X, spec=spec)
        want = np.array([reference.decode(inst, x, k).cost for x in X])
        assert all(close(a, b, decoder.FLOAT32_RTOL) for a, b in zip(got, want, strict=True))
        # the bisection equals the dense O(K N^2) DP on the same order
        import jax.numpy as jnp

        from jaxplace.decoder.kahn import priority_keys

        _, dg = decoder.hetero_graph(inst, k, spec)
        x = jnp.zeros(spec.N, jnp.float32).at[:n].set(X[0, :n])
        order = decoder.kahn_blocked(spec, dg, priority_keys(x, dg.n))
        seq = decoder.device_order(jnp.asarray(X[0, n:]))
        dense = DENSE(spec, dg, order, seq)
        bis = BISECT(spec, dg, order, seq)
        assert close(float(dense), float(bis), decoder.FLOAT32_RTOL)


def test_decoder_no_recompile():
    rng = np.random.default_rng(0)
    g = jp.CompGraph(rng.integers(1, 9, 12).astype(float),
                     [(i, i + 1 + (i % 3)) for i in range(9)], size_out=np.ones(12))
    c = uniform_cluster(3)
    inst = LatencyInstance(g, rng.integers(1, 9, (12, 3)).astype(float), np.zeros(12),
                           c.memory, np.full((3, 3), 2.0), np.zeros((3, 3)), g.tensor_size)
    spec, dg = decoder.hetero_graph(inst, 3, SPEC)  # the hypothesis test's shape
    X = rng.random((4, spec.width)).astype(np.float32)
    decoder.score_jit(spec, dg, X)
    with count_compiles() as counts:
        for _ in range(3):
            decoder.score_jit(spec, dg, rng.random((4, spec.width)).astype(np.float32))
    assert counts.built() == 0


def test_chain_on_identical_devices_is_mtpp():
    """On a chain every tensor crosses one cut: on identical devices the stage cost
    is the MTPP block cost with B = the link bandwidth (the fast special case)."""
    rng = np.random.default_rng(1)
    n = 9
    g = jp.CompGraph(rng.integers(1, 9, n).astype(float), [(i, i + 1) for i in range(n - 1)],
                     size_out=rng.integers(1, 5, n).astype(float))
    c = uniform_cluster(3, "v100", bandwidth=2.0, memory=1e12)
    inst = instance_from(g, c)
    for k in (1, 2, 3):
        ours = reference.slice_on_devices(inst, np.arange(n), [0, 1, 2], k).cost
        pr = jp.Problem(jp.CompGraph(inst.times[:, 0], g.edges, size_out=g.size_out),
                        k=k, bandwidth=2.0)
        assert close(ours, jp.reference.slice_order(pr, np.arange(n)).cost)


# -- the Problem, the search, the CLI ---------------------------------------------------

CLUSTER = {"devices": [{"name": "fast", "peak_flops": 4e12, "mem_bw": 1e12, "memory": 60.0},
                       {"name": "mid", "peak_flops": 2e12, "mem_bw": 1e12, "memory": 40.0},
                       {"name": "slow", "peak_flops": 1e12, "mem_bw": 1e12, "memory": 40.0}],
           "bandwidth": [[0, 40.0, 10.0], [20.0, 0, 40.0], [40.0, 10.0, 0]],
           "latency": 0.01}


def _problem(n: int = 14, seed: int = 0, **kw) -> jp.Problem:
    rng = np.random.default_rng(seed)
    edges = [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 4))
             if rng.random() < 0.6]
    g = jp.CompGraph(rng.integers(1, 9, n).astype(float), edges,
                     size_param=rng.integers(0, 8, n).astype(float),
                     size_out=rng.integers(1, 9, n).astype(float))
    return jp.Problem(g, cluster=cluster_from_dict(CLUSTER), objective="throughput", **kw)


def test_problem_wiring():
    pr = _problem()
    assert pr.objective_impl.name == "throughput-unequal"
    assert pr.k == 3 and pr.pipeline_instance.num_devices == 3
    # a uniform cluster too: its links and devices give the costs (no identical model)
    same = jp.Problem(pr.graph, cluster=uniform_cluster(3)).objective_impl
    assert same.name == "throughput-unequal"
    assert jp.Problem(pr.graph, k=3).objective_impl.supports("identical_devices")
    assert jp.Problem(pr.graph, k=2, cluster=pr.cluster).k == 2
    inst = pr.pipeline_instance
    x = np.random.default_rng(0).random(pr.n + 3).astype(np.float32)
    part = jp.decode(pr, x)
    assert part.devices is not None and len(set(part.devices)) == len(part.devices)
    assert close(jp.evaluate(pr, x[None])[0], part.cost, decoder.FLOAT32_RTOL)
    sc = jp.evaluate_partition(pr, part)  # devices from the Partition
    assert close(sc.bottleneck, part.cost)
    assert lower_bound(inst, pr.k) <= part.cost * (1 + REL)


@pytest.mark.parametrize("method", ["default", "brkga"])
def test_search_result_validates(method):
    pr = _problem()
    # budgets giving both methods the same compiled BRKGA chunk (15 generations)
    budget = 600 if method == "default" else 300
    r = jp.search(pr, method, budget=budget, population_size=20, progress=False)
    part = r.partition
    sc = jp.evaluate_partition(pr, part.assignment, devices=part.devices)
    assert close(sc.bottleneck, r.cost) and sc.feasible
    assert len(set(part.devices)) == len(part.devices) <= pr.k
    assert r.lower_bound <= r.cost * (1 + REL)
    assert r.cost <= reference.decode(pr.pipeline_instance, r.priorities, pr.k).cost * (1 + REL)
    # the stages follow the edges and fit their devices
    e = pr.graph.edges
    assert np.all(sc.assignment[e[:, 0]] <= sc.assignment[e[:, 1]])
    assert np.all(sc.memory <= pr.pipeline_instance.capacity[sc.devices])
    if method == "default":  # never worse than the DFS order on the fastest devices
        assert r.cost <= jp.search(pr, "dfs", progress=False).cost * (1 + REL)


def test_bad_input():
    pr = _problem()
    g, c = pr.graph, pr.cluster
    with pytest.raises(JaxplaceError, match="^k: must be at most"):
        jp.Problem(g, k=4, cluster=c)
    with pytest.raises(JaxplaceError, match="^cpus"):
        jp.Problem(g, cluster=c, cpus=1)
    big = jp.CompGraph([1.0, 1.0], [(0, 1)], size_param=[90.0, 90.0])
    with pytest.raises(JaxplaceError, match="devices.memory"):
        jp.Problem(big, cluster=c)
    for bad, field in ((dict(CLUSTER, bandwidth=[[0, 1.0], [1.0, 0]]), "bandwidth"),
                       (dict(CLUSTER, bandwidth=[[0, -1, 1], [1, 0, 1], [1, 1, 0]]),
                        r"bandwidth\[0\]\[1\]"),
                       ({"devices": [{"name": "a", "profile": "nope"}]}, "profile")):
        with pytest.raises(JaxplaceError, match=field):
            cluster_from_dict(bad, "c.json")
    inst = pr.pipeline_instance
    a = np.zeros(pr.n, np.int64)
    a[0] = 1  # node 0 feeds later nodes from a later stage
    with pytest.raises(JaxplaceError, match="goes from stage"):
        reference.evaluate_stages(inst, a, [0, 1])
    with pytest.raises(JaxplaceError, match="distinct"):
        reference.evaluate_stages(inst, np.zeros(pr.n, np.int64), [1, 1])
    with pytest.raises(JaxplaceError, match="priorities"):
        reference.decode(inst, np.zeros(pr.n + 1), 3)
    with pytest.raises(JaxplaceError, match="method"):
        jp.search(pr, "mla", budget=10, progress=False)


def test_cli(tmp_path, capsys):
    import json

    from jaxplace.cli.main import main
    from jaxplace.formats.nodelink import nodelink_data

    pr = _problem()
    src, cf, out = tmp_path / "g.json", tmp_path / "c.json", tmp_path / "r.json"
    src.write_text(json.dumps(nodelink_data(pr.graph)))
    cf.write_text(json.dumps(CLUSTER))
    code = main(["partition", str(src), "--cluster", str(cf), "--objective", "throughput",
                 "--method", "dfs", "-q", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0 and "bottleneck" in text and "compute ms" in text
    data = json.loads(out.read_text())
    sc = jp.evaluate_partition(pr, np.array(data["assignment"]),
                               devices=[pr.cluster.index(x) for x in data["stage_devices"]])
    assert close(sc.bottleneck, data["bottleneck"])
    cf.write_text(json.dumps(dict(CLUSTER, bandwidth=[[0, 1.0], [1.0, 0]])))
    code = main(["partition", str(src), "--cluster", str(cf), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and "bandwidth" in err and str(cf) in err
