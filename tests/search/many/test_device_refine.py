"""Device refinement (jaxplace/search/many/_device_refine.py): the blocks it reads equal
the host traceback, every move is a topological order that Kahn reproduces from its
priorities, a refined cost never exceeds the start and equals the float64 reference
of the returned priorities, the same on 1 and 4 host devices, deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from random_problems import cpu_block_problem, random_problem
from repo_paths import ROOT

import jaxplace as jp
from jaxplace.decoder import FLOAT32_RTOL, device_graph
from jaxplace.decoder.partitions import decode_chunk, traceback
from jaxplace.search.many._device_refine import blocks, closure, moves, node_priorities, refine


def _order(problem, x):
    return np.asarray(jp.reference.kahn(problem.graph, x))


def test_blocks_equal_the_host_traceback():
    rng = np.random.default_rng(0)
    for k in (1, 2, 3, 5):
        problem = random_problem(rng, 20, k=k, multi=True)
        spec, g = device_graph(problem)
        x = rng.random(problem.n).astype(np.float32)
        Xp = np.zeros((1, spec.width), np.float32)
        Xp[0, :problem.n] = x
        order, _, ch = (np.asarray(a) for a in decode_chunk(spec, g, Xp, use_keys=False))
        part = traceback(problem, order[0, :problem.n].astype(np.int64), ch[0])
        start, end = (np.asarray(a) for a in jax.jit(
            lambda o: blocks(spec, g, o))(jnp.asarray(order[0])))
        cuts = [0] + list(part.cuts) + [problem.n]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if a < b:
                assert np.all(start[a:b] == a) and np.all(end[a:b] == b - 1), (k, cuts)


def test_moves_are_topological_orders_kahn_reproduces():
    rng = np.random.default_rng(1)
    for problem in (random_problem(rng, 18, k=3, multi=True),
                    cpu_block_problem(rng, 16, training=True, cpus=0, colors=2, k=3,
                                      unsupported=0.0)):
        spec, g = device_graph(problem)
        units = problem.graph.units
        x = rng.random(problem.n).astype(np.float32)
        Xp = np.zeros((1, spec.width), np.float32)
        Xp[0, :problem.n] = x
        order = jnp.asarray(np.asarray(decode_chunk(spec, g, Xp, use_keys=False,
                                                    orders_only=True))[0])

        @jax.jit
        def all_moves(order):
            U, valid = moves(spec, g, order, closure(spec, g, order))
            return node_priorities(spec, g, U), valid, U

        X, valid, U = (np.asarray(a) for a in all_moves(order))
        U_n = units.num_units
        assert valid.any()
        for row in np.flatnonzero(valid):
            want = np.argsort(-U[row, :U_n], kind="stable")  # the encoded unit order
            got = np.asarray(decode_chunk(spec, g, X[row:row + 1], use_keys=False,
                                          orders_only=True))[0, :U_n]
            assert np.array_equal(got, want)
            # topological in the node graph: the reference's Kahn of the node
            # priorities visits the same units in the same order
            ref = _order(problem, X[row, :problem.n])
            seen = [int(units.unit_of[v]) for v in ref]
            firsts = list(dict.fromkeys(seen))
            assert firsts == list(want)


def _problems(rng):
    return [random_problem(rng, 30, k=3, multi=True, params=True, memory=True),
            random_problem(rng, 25, k=4),
            random_problem(rng, 28, k=2, params=True, capacity=True),
            cpu_block_problem(rng, 24, training=True, cpus=0, colors=3, k=3,
                              unsupported=0.0)]


def test_refine_never_worsens_and_matches_reference():
    rng = np.random.default_rng(2)
    probs = _problems(rng)
    X = [rng.random(p.n).astype(np.float32) for p in probs]
    Xr, Fr, applied = refine(probs, X, steps=6)
    improved = 0
    for p, x0, x, f in zip(probs, X, Xr, Fr, strict=True):
        a = jp.reference.evaluate_reference(p, x0[None])[0]
        b = jp.reference.evaluate_reference(p, x[:p.n][None])[0]
        assert b <= a * (1 + FLOAT32_RTOL)
        assert np.isclose(f, b, rtol=FLOAT32_RTOL) or (np.isinf(f) and np.isinf(b))
        improved += b < a * (1 - 1e-6)
    assert improved >= 1 and applied.sum() >= improved
    again = refine(probs, X, steps=6)
    assert all(np.array_equal(u, v) for u, v in zip((Xr, Fr, applied), again, strict=True))


_DEVICES = """
import json, sys
import numpy as np
sys.path.insert(0, "tests")
from random_problems import random_problem
import jax
from jaxplace.search._islands import device_mesh
from jaxplace.search.many._device_refine import refine
rng = np.random.default_rng(3)
probs = [random_problem(rng, 24, k=int(k)) for k in (2, 3, 4, 3)]
X = [rng.random(p.n).astype(np.float32) for p in probs]
mesh, _ = device_mesh(None, len(probs))
Xr, Fr, ap = refine(probs, X, steps=4, mesh=mesh)
print(json.dumps(dict(devices=jax.device_count(), X=Xr.tolist(), F=Fr.tolist(),
                      applied=ap.tolist())))
"""


@pytest.mark.heavy
def test_same_on_one_and_four_host_devices():
    out = []
    for count in (1, 4):
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=f"--xla_force_host_platform_device_count={count}")
        r = subprocess.run([sys.executable, "-c", _DEVICES], env=env, capture_output=True,
                           text=True, timeout=900,
                           cwd=ROOT)
        assert r.returncode == 0, r.stderr
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert out[0]["devices"] == 1 and out[1]["devices"] == 4
    assert out[0]["X"] == out[1]["X"] and out[0]["F"] == out[1]["F"]
    assert out[0]["applied"] == out[1]["applied"]


@pytest.mark.heavy
def test_islands_mode_refinement_never_worsens_its_answer():
    """search_many(mode="islands") with the refinement on: the same island search (same
    seed, same program), then each best refined: never a worse cost, the float64
    reference confirms it, info says what the refinement did."""
    from jaxplace.search.many import search_many

    rng = np.random.default_rng(4)
    probs = [random_problem(rng, n, p=0.15, k=k) for n, k in ((22, 3), (26, 4))]
    kw = dict(mode="islands", budget=32 * 5, exact=False, polish=False, seed=1,
              islands=2, population=16, migrate_every=2, max_programs=1)
    off = search_many(probs, refine_steps=0, **kw)
    on = search_many(probs, refine_steps=4, **kw)
    for p, a, b in zip(probs, off, on, strict=True):
        assert "refine" not in a.info and b.info["refine"]["steps"] == 4
        assert b.cost <= a.cost
        got = jp.evaluate_partition(p, b.partition.assignment).bottleneck
        assert b.cost == pytest.approx(got, rel=1e-12)


@pytest.mark.heavy
def test_a_failing_refinement_leaves_the_island_answers(monkeypatch):
    """An optional step: if it fails (e.g. a device compiler refusing its program),
    the island answers stand, each result says so, one warning."""
    from jaxplace.search.many import islands_mode, search_many

    def boom(group, results, steps):
        raise RuntimeError("refused")

    monkeypatch.setattr(islands_mode, "refine_results", boom)
    rng = np.random.default_rng(4)
    probs = [random_problem(rng, n, p=0.15, k=k) for n, k in ((22, 3), (26, 4))]
    kw = dict(mode="islands", budget=32 * 5, exact=False, polish=False, seed=1,
              islands=2, population=16, migrate_every=2, max_programs=1)
    off = search_many(probs, refine_steps=0, **kw)
    with pytest.warns(RuntimeWarning, match="device refinement failed"):
        on = search_many(probs, refine_steps=4, **kw)
    for a, b in zip(off, on, strict=True):
        assert b.cost == a.cost and "refused" in b.info["refine"]["error"]
