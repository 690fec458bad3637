"""Training and validation problems: REGAL-like and DNN-like generated graphs.

A problem is drawn from a seeded NumPy generator: a family (REGAL-like random DAGs,
Paliwal et al. 2020, or the transformer / resnet / inception / unet generators at
random small sizes), n in `n_range`, k in `k_range`, a bandwidth (B = 1, or
log-uniform over [1/4, 4] so the communication / compute ratio varies), and, when the
graph has parameters, sometimes a hard capacity or (REGAL-like graphs only) a memory
budget with overflow, and (with `cpu_fraction`) one CPU block as in the NeurIPS 2020
workloads: every node gets a `cpu_latency` of its work times a factor (those files use
10 and 23; here log-uniform in `cpu_factor`), and (with `colocation_fraction`) a
training graph: the forward graph plus its backward pass, each backward op colocated
with its forward op (`jaxplace.generators.training_graph`, the shape of the NeurIPS
training workloads; n_range then bounds all 2n nodes). The
training pool and the validation set come from disjoint seed streams
(`numpy.random.SeedSequence([seed, stream])`), so validation graphs are never trained
on.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.generators import inception, regal, resnet, training_graph, transformer, unet
from jaxplace.problem import Problem

TRAIN_STREAM, VALID_STREAM = 0, 1


@dataclass(frozen=True)
class DataConfig:
    """Distribution of generated problems.

    Attributes:
        n_range: inclusive node-count range.
        k_range: inclusive range of k (capped at n / 2).
        regal_fraction: probability of a REGAL-like graph (else a DNN-like family).
        memory_fraction, capacity_fraction: probabilities of an overflow budget or a
            hard capacity, among graphs with parameters.
        bandwidth_fraction: probability of a bandwidth other than 1.
        cpu_fraction: probability of one CPU block next to the k accelerators.
        cpu_factor: range of cpu_latency / work (log-uniform).
        colocation_fraction: probability of a training graph (forward plus backward
            nodes in colocation classes) instead of a plain one.
        orphan_range: range of the share of a training graph's backward ops that get
            a class of their own (`training_graph(orphan=...)`), uniform; (0, 0): none.
    """

    n_range: tuple[int, int] = (30, 200)
    k_range: tuple[int, int] = (2, 16)
    regal_fraction: float = 0.5
    memory_fraction: float = 0.2
    capacity_fraction: float = 0.2
    bandwidth_fraction: float = 0.3
    cpu_fraction: float = 0.0
    cpu_factor: tuple[float, float] = (5.0, 30.0)
    colocation_fraction: float = 0.0
    orphan_range: tuple[float, float] = (0.0, 0.0)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> DataConfig:
        d = dict(d)
        for key in ("n_range", "k_range", "cpu_factor", "orphan_range"):
            if key in d:
                d[key] = tuple(d[key])
        f = d.get("colocation_fraction", 0.0)
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= f <= 1.0:
            raise JaxplaceError(f"must be a number in [0, 1], got {f!r}",
                                field="data.colocation_fraction")
        r = d.get("orphan_range", (0.0, 0.0))
        if (len(r) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, float))
                               for x in r) or not 0.0 <= r[0] <= r[1] <= 1.0):
            raise JaxplaceError(f"must be a range 0 <= lo <= hi <= 1, got {list(r)!r}",
                                field="data.orphan_range")
        return cls(**d)


def _dnn(rng: np.random.Generator, lo: int, hi: int):
    """A DNN-like graph with lo <= n <= hi (None when this draw misses the range)."""
    fam = int(rng.integers(4))
    seed = int(rng.integers(2**31))
    choice = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    if fam == 0:
        g = transformer(layers=int(rng.integers(2, 15)), d_model=choice([256, 512, 1024]),
                        seq=choice([128, 512, 2048]), batch=choice([1, 4]), seed=seed)
    elif fam == 1:
        stages = tuple(int(x) for x in rng.integers(1, 7, size=4))
        g = resnet(stages=stages, block=choice(["basic", "bottleneck"]),
                   width=choice([32, 64]), image=choice([112, 224]),
                   batch=choice([1, 8]), seed=seed)
    elif fam == 2:
        g = inception(modules=int(rng.integers(2, 20)), width=choice([32, 64]),
                      image=choice([160, 224]), batch=choice([1, 8]), seed=seed)
    else:
        depth = int(rng.integers(2, 10))
        g = unet(depth=depth, convs=int(rng.integers(1, 9)), width=choice([16, 32, 64]),
                 image=2 ** depth * choice([4, 8]), seed=seed)
    return g if lo <= g.num_nodes <= hi else None


def sample_problem(rng: np.random.Generator, cfg: DataConfig) -> Problem:
    """One random problem of the distribution `cfg`."""
    lo, hi = cfg.n_range
    # drawn first and only when asked for, so recipes without it keep their data
    backward = cfg.colocation_fraction > 0 and rng.random() < cfg.colocation_fraction
    if backward:  # 2n nodes in all, n units
        lo, hi = max(lo // 2, 2), max(hi // 2, 2)
    g = None
    if rng.random() < cfg.regal_fraction:
        pm = 50.0 if rng.random() < 0.5 else 0.0
        g = regal(int(rng.integers(2**31)), n=int(rng.integers(lo, hi + 1)),
                  noise=["local", "global"][int(rng.integers(2))], param_mean=pm)
    while g is None:
        g = _dnn(rng, lo, hi)
    k = int(rng.integers(cfg.k_range[0], cfg.k_range[1] + 1))
    k = max(1, min(k, g.num_nodes // 2))
    if backward:
        stash = float(rng.choice([0.0, 0.75, 1.0]))
        seed, merge = int(rng.integers(2**31)), float(rng.uniform(0.0, 0.5))
        # drawn only when asked for, so recipes without orphans keep their data
        orphan = float(rng.uniform(*cfg.orphan_range)) if cfg.orphan_range[1] > 0 else 0.0
        g = training_graph(g, seed, stash=stash, merge=merge, orphan=orphan)
    B = float(np.exp(rng.uniform(np.log(0.25), np.log(4.0)))) \
        if rng.random() < cfg.bandwidth_fraction else 1.0
    total = float(g.size_param.sum())
    memory = capacity = None
    if total > 0:
        u = rng.random()
        # overflow costs param / B: only REGAL-like graphs keep params in the units of
        # time (the DNN generators count bytes), so they alone get a memory budget
        if u < cfg.memory_fraction and g.meta.get("generator") == "regal":
            memory = total / k * rng.uniform(0.3, 1.2)
        elif u < cfg.memory_fraction + cfg.capacity_fraction:
            capacity = max(float(g.size_param.max()), total / k * rng.uniform(1.2, 2.5))
    cpus = 0
    # drawn last and only when asked for, so recipes without CPU blocks keep their data
    if cfg.cpu_fraction > 0 and rng.random() < cfg.cpu_fraction:
        lo_f, hi_f = cfg.cpu_factor
        g = with_cpu_latency(g, float(np.exp(rng.uniform(np.log(lo_f), np.log(hi_f)))))
        cpus = 1
    return Problem(g, k, bandwidth=B, memory=memory, capacity=capacity, cpus=cpus)


def with_cpu_latency(g, factor: float):
    """A copy of graph g whose nodes take `factor` times their work on a CPU."""
    lat = np.asarray(g.work, np.float64) * factor
    lat.setflags(write=False)
    out = copy.copy(g)
    out.node_attrs = {**g.node_attrs, "cpu_latency": lat}
    return out


def problem_set(seed: int, count: int, cfg: DataConfig, stream: int = TRAIN_STREAM
                ) -> list[Problem]:
    """`count` problems from seed stream (seed, stream); problem i depends only on
    (seed, stream, i)."""
    out = []
    for i in range(count):
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), int(stream), i]))
        out.append(sample_problem(rng, cfg))
    return out
