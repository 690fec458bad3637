"""Issue 14 pieces: the C++ BRKGA bench peer, the library's persistent compilation
cache, `jaxplace warmup`, and the library's compile counter."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from repo_paths import ROOT

import jaxplace as jp
from jaxplace.bench import cpp_peer
from jaxplace.objectives.throughput.reference import decode_reference, evaluate_reference

#: Both sides are float64 over the same float32 priorities, so the orders are equal;
#: only the summation order of the segment costs differs.
RTOL = 1e-9

needs_cxx = pytest.mark.skipif(cpp_peer.compiler() is None,
                               reason="the C++ peer needs g++ (or $CXX) on PATH")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    folder = os.environ.get("JAXPLACE_CPP_DIR") or tmp_path_factory.mktemp("cpp")
    return cpp_peer.build(folder)


def random_problem(seed: int, n: int, k: int, **kw) -> jp.Problem:
    """A random DAG whose nodes produce 0-2 tensors (hyperedges) with parameters."""
    rng = np.random.default_rng(seed)
    tensors, edges = [], set()
    for u in range(n - 1):
        for _ in range(rng.integers(0, 3)):
            later = np.arange(u + 1, n)
            cons = sorted(rng.choice(later, size=min(len(later), rng.integers(1, 4)),
                                     replace=False).tolist())
            tensors.append((u, float(rng.uniform(0.0, 4.0)), cons))
            edges.update((u, c) for c in cons)
    g = jp.CompGraph(rng.uniform(0.5, 5.0, n), sorted(edges),
                     size_param=rng.uniform(0.0, 3.0, n), tensors=tensors)
    return jp.Problem(g, k, **kw)


@needs_cxx
@pytest.mark.parametrize("seed,n,k,kw", [
    (0, 12, 3, {}), (1, 25, 4, {}), (2, 30, 8, {"bandwidth": 2.5}),
    (3, 20, 4, {"memory": 4.0}), (4, 24, 3, {"capacity": 12.0}),
    (5, 18, 30, {}), (6, 1, 2, {})])
def test_cpp_decoder_matches_the_reference(exe, seed, n, k, kw):
    p = random_problem(seed, n, k, **kw)
    X = np.random.default_rng(seed).random((12, n), dtype=np.float32)
    X[0] = 0.5  # all ties: smaller index first
    got = cpp_peer.evaluate(p, X, exe=exe)
    want = evaluate_reference(p, X)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=RTOL, atol=0)


@needs_cxx
def test_cpp_decoder_on_a_regal_graph(exe):
    from jaxplace.generators import regal_set

    p = jp.Problem(regal_set(1, seed=3, n_range=(60, 60))[0], 8)
    X = np.random.default_rng(0).random((6, p.n), dtype=np.float32)
    np.testing.assert_allclose(cpp_peer.evaluate(p, X, exe=exe), evaluate_reference(p, X),
                               rtol=RTOL)


@needs_cxx
def test_cpp_brkga_is_seeded_and_reports_its_best(exe):
    p = random_problem(7, 30, 4)
    a = cpp_peer.run_brkga(p, seed=3, population=20, generations=10, exe=exe)
    b = cpp_peer.run_brkga(p, seed=3, population=20, generations=10, exe=exe)
    assert a.cost == b.cost and np.array_equal(a.priorities, b.priorities)
    assert a.evaluations == 20 + 9 * (20 - 4)  # elites are not decoded again
    assert a.trace.shape == (10, 3) and np.all(np.diff(a.trace[:, 2]) <= 0)
    assert a.trace[-1, 2] == a.cost
    np.testing.assert_allclose(decode_reference(p, a.priorities).cost, a.cost, rtol=RTOL)
    assert a.cost >= jp.simple_lower_bound(p) * (1 - 1e-12)


def test_cpp_peer_refuses_cpu_blocks():
    g = jp.CompGraph(np.ones(4), [(0, 1), (1, 2), (2, 3)],
                     node_attrs={"cpu_latency": np.full(4, 2.0)})
    p = jp.Problem(g, 2, cpus=1)
    with pytest.raises(jp.JaxplaceError, match="plain throughput"):
        cpp_peer.write_graph(p, os.devnull)


def _python(code: str, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))}
    return {**env, **extra}


def test_compile_cache_turns_on_at_first_decoder_use_not_at_import(tmp_path):
    code = ("import os, sys\nimport jaxplace\n"
            "assert 'jax' not in sys.modules\n"
            "assert 'JAX_COMPILATION_CACHE_DIR' not in os.environ\n"
            "import jaxplace.decoder, jax\n"
            "print(jax.config.jax_compilation_cache_dir)\n")
    r = _python(code, _env(JAXPLACE_CACHE_DIR=str(tmp_path / "xla")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "xla")
    r = _python(code, _env(JAXPLACE_CACHE_DIR=""))  # empty: off
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("", "None")


def test_warmup_writes_the_cache(tmp_path):
    cache = tmp_path / "xla"
    argv = [sys.executable, "-m", "jaxplace.cli.main", "warmup", "--min-nodes", "10",
            "--max-nodes", "12", "--ks", "2", "--samples", "1", "--methods", "brkga-10000"]
    env = _env(JAXPLACE_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
               XLA_FLAGS="--xla_force_host_platform_device_count=1")
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "compiled 1, cache hits 0" in r.stdout, r.stdout
    assert any(f.is_file() for f in cache.rglob("*")), r.stdout


def test_count_compiles_sees_a_new_program():
    import jax
    import jax.numpy as jnp

    from jaxplace.compile_cache import count_compiles

    @jax.jit
    def _warmup_probe(x):
        return x * 2 + 1

    with count_compiles() as counts:
        _warmup_probe(jnp.arange(3.0))
        _warmup_probe(jnp.arange(3.0))
    assert counts["_warmup_probe"] == 1 and counts.compiled(["_warmup_probe"]) == 1
