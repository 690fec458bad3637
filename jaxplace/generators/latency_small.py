"""Small seeded latency problems that MOIRAI's MILP solves exactly (to check that
the search ends within 1% of the optimum), for the latency benchmark's `--small` suite
and tests.

`random_dag(seed, n)`: n ops built with the roofline model of `generators.latency_models` (so op
times differ per device profile as for the GPT/Swin graphs): each op reads one or two
of the last `window` tensors, is a MatMul (with weights) or an elementwise op, and
writes 0.25-8 M elements (1-32 MB in fp32), so a transfer over a 4-5 GB/s link costs
about as much as an op; a graph of several parallel branches, where splitting can pay.
`random_cluster(seed, d)`: d devices of random profiles from `devices.json` with
directed random links (1-25 GB/s, 5-50 us latency). `small_problems()`: the seeded
list used by the bench (both MOIRAI testbeds and random clusters).
"""

from __future__ import annotations

import numpy as np

import jaxplace as jp
from jaxplace.cluster import load_cluster
from jaxplace.cluster.io import cluster_from_dict
from jaxplace.generators.latency_models import _Model
from jaxplace.graph import CompGraph

#: GPU profiles of devices.json drawn by `random_cluster`.
PROFILES = ("h100", "a100", "v100", "p100", "t4", "p4", "rtx2080ti", "rtx3060ti")


def random_dag(seed: int, n: int, *, window: int = 4, dtype: str = "fp32") -> CompGraph:
    """A seeded random op graph of n ops with roofline FLOPs and bytes (module doc)."""
    rng = np.random.default_rng(seed)
    m = _Model("v100", dtype)
    outs: list[int] = []
    for i in range(n):
        recent = outs[-window:]
        k = 0 if not recent or (i < 2 and rng.random() < 0.5) else int(
            rng.integers(1, min(2, len(recent)) + 1))
        ins = sorted(int(t) for t in rng.choice(recent, size=k, replace=False)) if k else []
        el = float(10 ** rng.uniform(5.4, 6.9))
        if rng.random() < 0.5:
            inner = float(10 ** rng.uniform(2.5, 3.7))
            t = m.one(f"op{i}", "MatMul", ins, [el], flops=2.0 * el * inner,
                      params=inner * 256)
        else:
            t = m.one(f"op{i}", "Add" if k == 2 else "Relu", ins, [el])
        outs.append(t)
    return m.build({"name": f"random-dag-{n}-s{seed}"})


def random_cluster(seed: int, d: int):
    """A seeded cluster of d devices with random profiles and directed links."""
    rng = np.random.default_rng(seed)
    profs = rng.choice(PROFILES, size=d, replace=True)
    bw = 10 ** rng.uniform(9.0, 10.4, (d, d))
    lat = rng.uniform(5e-6, 5e-5, (d, d))
    np.fill_diagonal(bw, 0.0)
    np.fill_diagonal(lat, 0.0)
    return cluster_from_dict({
        "name": f"random-{d}-s{seed}",
        "devices": [{"name": f"g{p}", "profile": str(pr)} for p, pr in enumerate(profs)],
        "bandwidth": bw.tolist(), "latency": lat.tolist()})


def small_problems(sizes=(8, 12, 16, 20), seeds=(0, 1), random_clusters: int = 2):
    """[(label, Problem)]: random DAGs of each size and seed on moirai_inter,
    moirai_intra and `random_clusters` random clusters of 3 devices."""
    clusters = [("moirai_inter", load_cluster("moirai_inter")),
                ("moirai_intra", load_cluster("moirai_intra"))]
    clusters += [(f"random3-s{c}", random_cluster(100 + c, 3)) for c in range(random_clusters)]
    out = []
    for n in sizes:
        for s in seeds:
            g = random_dag(1000 * n + s, n)
            for cname, c in clusters:
                out.append((f"dag{n}-s{s} {cname}",
                            jp.Problem(g, cluster=c, objective="latency")))
    return out


__all__ = ["PROFILES", "random_cluster", "random_dag", "small_problems"]
