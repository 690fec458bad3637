"""Seeded random problems shared by the decoder, search and refinement tests: plain and
multi-consumer graphs (`random_problem`), graphs with CPU blocks, colocation classes and
backward nodes (`cpu_block_problem`), and the cost comparison they are checked with."""

from __future__ import annotations

import numpy as np

import jaxplace as jp


def random_problem(rng: np.random.Generator, n: int, *, p: float = 0.3,
                   k: int | None = None, multi: bool = False, params: bool = False,
                   memory: bool = False, capacity: bool = False) -> jp.Problem:
    perm = rng.permutation(n)
    edges = [(int(perm[i]), int(perm[j])) for i in range(n) for j in range(i + 1, n)
             if rng.random() < p]
    work = rng.uniform(0.1, 10.0, n)
    size_param = rng.uniform(0.0, 5.0, n) if params else None
    tensors = None
    size_out = rng.uniform(0.1, 5.0, n)
    if multi:
        succ = {u: [] for u in range(n)}
        for u, v in edges:
            succ[u].append(v)
        tensors = []
        for u in range(n):
            for _ in range(int(rng.integers(0, 3))):
                cons = [v for v in succ[u] if rng.random() < 0.6]
                tensors.append((u, float(rng.uniform(0.1, 5.0)), cons))
        size_out = None
    g = jp.CompGraph(work, edges, size_param, size_out, tensors=tensors)
    total = float(g.size_param.sum())
    return jp.Problem(g, k if k is not None else int(rng.integers(1, n + 3)),
                      bandwidth=float(rng.uniform(0.5, 2.0)),
                      memory=total / 3 if memory else None,
                      capacity=total / 2 if capacity else None)


def cpu_block_problem(rng: np.random.Generator, n: int, *, training: bool, cpus: int,
                      colors: int, k: int, unsupported: float = 0.1, multi: bool = False,
                      memory: bool = False, capacity: bool = False) -> jp.Problem:
    """Colocation classes, backward nodes (their edges may point back in the forward
    order), unsupported nodes, CPU latencies (used when cpus > 0)."""
    perm = rng.permutation(n)
    edges = [(int(perm[i]), int(perm[j])) for i in range(n) for j in range(i + 1, n)
             if rng.random() < 0.2]
    attrs = {
        "cpu_latency": rng.uniform(0.5, 30.0, n),
        # with no CPU block every op must fit an accelerator (else the problem is refused)
        "supported_on_accel": (rng.random(n) >= unsupported) | (cpus == 0),
        "color_class": (np.where(rng.random(n) < 0.3, rng.integers(0, max(colors, 1), n),
                                 -1) if colors else np.full(n, -1)),
        "is_backward": rng.random(n) < 0.4 if training else np.zeros(n, dtype=bool),
    }
    tensors, size_out = None, rng.uniform(0.1, 5.0, n)
    if multi:
        tensors = [(u, float(rng.uniform(0.1, 5.0)),
                    [v for a, v in edges if a == u and rng.random() < 0.6])
                   for u in range(n) for _ in range(int(rng.integers(0, 3)))]
        size_out = None
    g = jp.CompGraph(rng.uniform(0.1, 10.0, n), edges, rng.uniform(0.0, 5.0, n), size_out,
                     tensors=tensors, node_attrs=attrs)
    total = float(g.size_param.sum())
    return jp.Problem(g, k, bandwidth=float(rng.uniform(0.5, 2.0)), cpus=cpus,
                      memory=total / 3 if memory else None,
                      capacity=total / 2 if capacity else None)


def assert_costs(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isinf(got), np.isinf(want)), (got, want)
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=0)
