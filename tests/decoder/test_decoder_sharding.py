"""Population sharding across 4 fake CPU devices (run in a subprocess so the XLA flag
takes effect before jax initializes)."""

from __future__ import annotations

import textwrap

from host_devices import run_on_host_devices

SCRIPT = textwrap.dedent("""
    import jax, numpy as np
    import jaxplace as jp
    from jaxplace.decoder import evaluate, FLOAT32_RTOL
    import importlib
    assert len(jax.devices()) == 4, jax.devices()
    rng = np.random.default_rng(0)
    n = 30
    perm = rng.permutation(n)
    edges = [(int(perm[i]), int(perm[j])) for i in range(n) for j in range(i + 1, n)
             if rng.random() < 0.15]
    g = jp.CompGraph(rng.uniform(0.1, 10, n), edges, rng.uniform(0, 3, n),
                     rng.uniform(0.1, 5, n))
    problem = jp.Problem(g, 4, memory=float(g.size_param.sum()) / 4)
    X = rng.random((50, n)).astype(np.float32)
    want = jp.reference.evaluate_reference(problem, X)
    for impl in IMPLS:
        got = evaluate(problem, X, impl=impl)
        np.testing.assert_allclose(got, want, rtol=FLOAT32_RTOL)
        got = evaluate(problem, X, impl=impl, chunk_size=16)
        np.testing.assert_allclose(got, want, rtol=FLOAT32_RTOL)
        got = evaluate(problem, X, impl=impl, devices=jax.devices()[:2])
        np.testing.assert_allclose(got, want, rtol=FLOAT32_RTOL)
    # 4 devices give the same costs as 1, bit for bit, on the lanes and fused paths
    # (candidates never interact; full DP, so no window depends on the chunking).
    # Not the vmapped oracle ("simple"): its per-candidate reductions vectorize
    # differently for other batch shapes (seen: 2 of 50 float64 costs 1.4e-14 apart).
    for impl in ("lanes", "fused"):
        for precision in ("float32", "float64"):
            one = evaluate(problem, X, impl=impl, window=None, precision=precision,
                           devices=jax.devices()[:1], threads=1)
            four = evaluate(problem, X, impl=impl, window=None, precision=precision)
            assert np.array_equal(one, four), (impl, precision, one - four)
    # the sharded call really splits the population over the 4 devices
    from jaxplace.decoder.batching import make_mesh
    from jaxplace.decoder.evaluator import Evaluator, score_chunk
    evr = Evaluator(problem, window=None)
    Z, use_keys = evr._rows(X[:48])
    mesh, ndev = make_mesh(None)
    assert ndev == 4
    from jax.sharding import NamedSharding, PartitionSpec as P
    z = jax.device_put(Z, NamedSharding(mesh, P("pop")))
    out = score_chunk(evr.spec, evr.graph, z, use_keys=False, impl=IMPLS[-1], mesh=mesh)
    assert len(out.sharding.device_set) == 4, out.sharding
    np.testing.assert_allclose(np.asarray(out), want[:48], rtol=FLOAT32_RTOL)
    print("OK")
""")


IMPLS = ("simple", "lanes", "fused")


def test_sharded_population_on_4_cpu_devices():
    run_on_host_devices(f"IMPLS = {IMPLS!r}\n" + SCRIPT, timeout=600)
