"""REGAL-like random computation graphs (Paliwal et al., ICLR 2020; docs/problem.md section 4).

Recipe, all randomness from `numpy.random.default_rng(seed)` (no global state, no
networkx randomness, so a seed gives the same graph on every platform):

1. n ~ Uniform{n_range} (default 50..200) unless given; a random model unless given.
2. An undirected graph from one classic model, implemented here in NumPy:
   - "erdos_renyi": G(n, p), p = c / n with c ~ U(2, 4) (average degree 2..4);
   - "barabasi_albert": preferential attachment, m ~ {1, 2, 3} edges per new node;
   - "watts_strogatz": ring lattice of degree 4, each edge rewired with p = 0.1;
   - "random_geometric": n points in the unit square, radius for average degree
     d ~ U(3, 4) (r = sqrt(d / (pi n)));
   - "stochastic_block": b ~ {2..5} blocks, within-block average degree ~ U(2.5, 3.5)
     and about 0.5 expected edges per node across blocks.
   Components are then chained by one edge each (between random nodes of
   consecutive components) so the graph is weakly connected.
3. Orientation by a random topological order: a random permutation pi, each edge
   goes from the endpoint earlier in pi to the later one. Node indices stay the
   model's labels (so index order is *not* a topological order).
4. Every node outputs one tensor, `size_out ~ Normal(50, 10)` clipped to >= 1.
5. work(v) = s(v) + r(v) * S, r(v) ~ Normal(0, 0.1), where s(v) is the sum of v's input
   tensor sizes (its predecessors' outputs) and its own output size, clipped below
   at WORK_FLOOR_FRACTION * mean(size_out) (= 0.5 for the default sizes).
   With `noise="local"` (default) S = s(v); with `noise="global"` S = the sum of
   all tensor sizes of the graph (the literal reading of the recipe as Archer et al. state it).

   Why "local" is the default: with the global reading r*S is about +-0.1 * 50n,
   an order of magnitude above s(v), so half the nodes are clipped to the floor and
   a few nodes carry most of the work; the simple bound is then max_v work and the
   published REGAL search ratios (1.2 at k=4 rising to 3.0 at k=64, Archer
   et al.) cannot come out. The local reading gives work of the order of tensor
   sizes as in the REGAL CostGraphDef examples. `meta["noise"]` records the choice.

The r(v) draws are kept in `node_attrs["regal_r"]` so the formula can be checked.
"""

from __future__ import annotations

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph

MODELS = ("erdos_renyi", "barabasi_albert", "watts_strogatz", "random_geometric",
          "stochastic_block")
NOISE = ("local", "global")
SIZE_MEAN = 50.0
SIZE_STD = 10.0
SIZE_MIN = 1.0
R_STD = 0.1
WORK_FLOOR_FRACTION = 0.01
N_RANGE = (50, 200)


# -- undirected models: each returns an (m, 2) int64 array of pairs u < v -----------


def _pairs(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    a, b = np.minimum(u, v), np.maximum(u, v)
    keep = a != b
    e = np.stack([a[keep], b[keep]], axis=1).astype(np.int64)
    return np.unique(e, axis=0) if len(e) else e.reshape(0, 2)


def _erdos_renyi(rng: np.random.Generator, n: int) -> np.ndarray:
    p = rng.uniform(2.0, 4.0) / n
    iu, ju = np.triu_indices(n, k=1)
    keep = rng.random(len(iu)) < p
    return _pairs(iu[keep], ju[keep])


def _barabasi_albert(rng: np.random.Generator, n: int) -> np.ndarray:
    m = int(rng.integers(1, 4))
    # Start from a star on m + 1 nodes, then attach each new node to m distinct
    # existing nodes chosen with probability proportional to degree.
    edges = [(0, j) for j in range(1, m + 1)]
    ends = [x for e in edges for x in e]  # each node repeated deg times
    for v in range(m + 1, n):
        targets: set[int] = set()
        while len(targets) < m:
            targets.add(ends[int(rng.integers(len(ends)))])
        for t in sorted(targets):
            edges.append((t, v))
            ends.extend((t, v))
    e = np.asarray(edges, dtype=np.int64)
    return _pairs(e[:, 0], e[:, 1])


def _watts_strogatz(rng: np.random.Generator, n: int, k: int = 4, p: float = 0.1):
    adj = {v: set() for v in range(n)}
    ring = [(u, (u + j) % n) for j in range(1, k // 2 + 1) for u in range(n)]
    for u, v in ring:
        adj[u].add(v)
        adj[v].add(u)
    for u, v in ring:  # rewire (u, v) to (u, w) with probability p
        if rng.random() < p:
            w = int(rng.integers(n))
            if w == u or w in adj[u]:
                continue
            adj[u].discard(v)
            adj[v].discard(u)
            adj[u].add(w)
            adj[w].add(u)
    e = np.asarray([(u, v) for u in range(n) for v in adj[u] if u < v], dtype=np.int64)
    return _pairs(e[:, 0], e[:, 1])


def _random_geometric(rng: np.random.Generator, n: int) -> np.ndarray:
    radius = np.sqrt(rng.uniform(3.0, 4.0) / (np.pi * n))
    pts = rng.random((n, 2))
    iu, ju = np.triu_indices(n, k=1)
    d2 = ((pts[iu] - pts[ju]) ** 2).sum(axis=1)
    keep = d2 <= radius * radius
    return _pairs(iu[keep], ju[keep])


def _stochastic_block(rng: np.random.Generator, n: int) -> np.ndarray:
    b = int(rng.integers(2, 6))
    block = np.sort(rng.integers(b, size=n))
    sizes = np.bincount(block, minlength=b)
    deg_in = rng.uniform(2.5, 3.5)
    iu, ju = np.triu_indices(n, k=1)
    same = block[iu] == block[ju]
    p_in = np.minimum(1.0, deg_in / np.maximum(sizes[block[iu]] - 1, 1))
    p_out = 0.5 / n
    keep = rng.random(len(iu)) < np.where(same, p_in, p_out)
    return _pairs(iu[keep], ju[keep])


_MODEL_FNS = {
    "erdos_renyi": _erdos_renyi,
    "barabasi_albert": _barabasi_albert,
    "watts_strogatz": _watts_strogatz,
    "random_geometric": _random_geometric,
    "stochastic_block": _stochastic_block,
}


def _connect(rng: np.random.Generator, n: int, e: np.ndarray) -> np.ndarray:
    """Chain the connected components by one random edge each (union-find)."""
    parent = np.arange(n)

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v in e:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
    roots = np.asarray([find(v) for v in range(n)])
    comps = [np.flatnonzero(roots == r) for r in np.unique(roots)]
    if len(comps) == 1:
        return e
    extra = []
    for a, b in zip(comps[:-1], comps[1:], strict=True):
        extra.append((int(a[rng.integers(len(a))]), int(b[rng.integers(len(b))])))
    x = np.asarray(extra, dtype=np.int64)
    return _pairs(np.concatenate([e[:, 0], x[:, 0]]), np.concatenate([e[:, 1], x[:, 1]]))


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JaxplaceError(f"must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


def regal(seed: int = 0, n: int | None = None, model: str | None = None, *,
          n_range: tuple[int, int] = N_RANGE, noise: str = "local",
          param_mean: float = 0.0) -> CompGraph:
    """A REGAL-like random DAG (see the module docstring for the recipe).

    Args:
        seed: non-negative integer; the same seed gives the same graph.
        n: number of nodes (>= 2); drawn uniformly from `n_range` when None.
        model: one of MODELS; drawn uniformly when None.
        n_range: inclusive (lo, hi) range for n when it is drawn.
        noise: "local" (r scales the node's own tensor sizes) or "global" (r scales
            the sum of all tensor sizes).
        param_mean: when > 0, size_param ~ Normal(param_mean, param_mean / 5) clipped
            at 0; else all zero.

    Returns:
        A CompGraph with names "v0".., op_type "regal", meta {generator, seed, model,
        noise}, and node_attrs["regal_r"] (the r(v) draws).
    """
    seed = _check_seed(seed)
    if model is not None and model not in _MODEL_FNS:
        raise JaxplaceError(f"unknown model {model!r}; expected one of {', '.join(MODELS)}",
                            field="model")
    if noise not in NOISE:
        raise JaxplaceError(f"unknown noise {noise!r}; expected 'local' or 'global'",
                            field="noise")
    lo, hi = (int(x) for x in n_range)
    if not 2 <= lo <= hi:
        raise JaxplaceError(f"must satisfy 2 <= lo <= hi, got {tuple(n_range)}",
                            field="n_range")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))
                          or n < 2):
        raise JaxplaceError(f"must be an integer >= 2, got {n!r}", field="n")
    if not np.isfinite(param_mean) or param_mean < 0:
        raise JaxplaceError(f"must be >= 0, got {param_mean!r}", field="param_mean")

    rng = np.random.default_rng(seed)
    n = int(rng.integers(lo, hi + 1)) if n is None else int(n)
    model = MODELS[int(rng.integers(len(MODELS)))] if model is None else model
    und = _connect(rng, n, _MODEL_FNS[model](rng, n))
    edges, work, size_param, size_out, r = weigh_dag(rng, n, und, noise=noise,
                                                     param_mean=param_mean)
    return CompGraph(work, edges, size_param, size_out,
                     names=[f"v{i}" for i in range(n)], op_types=["regal"] * n,
                     node_attrs={"regal_r": r},
                     meta={"generator": "regal", "seed": seed, "model": model,
                           "noise": noise})


def weigh_dag(rng: np.random.Generator, n: int, undirected: np.ndarray, *,
              noise: str = "local", param_mean: float = 0.0):
    """REGAL's orientation and weights for an undirected edge list on n nodes: the edges
    follow a random order of the nodes (so the graph is a DAG), tensor sizes
    ~ Normal(SIZE_MEAN, SIZE_STD) clipped at SIZE_MIN, work = s + r * scale (s: the node's
    own and incoming tensor sizes; r ~ Normal(0, R_STD)). Draws from `rng` in that order,
    as `regal` does, so any edge model (a denser one than MODELS, say) gets REGAL's
    weights. Returns (edges, work, size_param, size_out, r)."""
    und = np.asarray(undirected, dtype=np.int64).reshape(-1, 2)
    pos = np.empty(n, dtype=np.int64)
    pos[rng.permutation(n)] = np.arange(n)  # pos[v] = v's place in the random order
    forward = pos[und[:, 0]] < pos[und[:, 1]]
    edges = np.where(forward[:, None], und, und[:, ::-1])

    size_out = np.maximum(rng.normal(SIZE_MEAN, SIZE_STD, size=n), SIZE_MIN)
    r = rng.normal(0.0, R_STD, size=n)
    s = size_out + np.bincount(edges[:, 1], weights=size_out[edges[:, 0]], minlength=n)
    scale = s if noise == "local" else np.full(n, size_out.sum())
    work = np.maximum(s + r * scale, WORK_FLOOR_FRACTION * size_out.mean())
    if param_mean > 0:
        size_param = np.maximum(rng.normal(param_mean, param_mean / 5, size=n), 0.0)
    else:
        size_param = np.zeros(n)
    return edges, work, size_param, size_out, r


def derive_seed(seed: int, i: int) -> int:
    """A 32-bit seed for item `i` of a seeded set, independent across items."""
    return int(np.random.SeedSequence([_check_seed(seed), int(i)]).generate_state(1)[0])


def regal_set(count: int, seed: int = 0, n_range: tuple[int, int] = N_RANGE,
              **kwargs) -> list[CompGraph]:
    """`count` REGAL-like graphs; graph i is `regal(derive_seed(seed, i), n_range=...)`.

    Extra keyword arguments (model, noise, param_mean) go to `regal`.
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise JaxplaceError(f"must be a non-negative integer, got {count!r}", field="count")
    return [regal(derive_seed(seed, i), n_range=n_range, **kwargs) for i in range(count)]


def regal_suite(count: int, ks, seed: int = 0) -> list[tuple[int, CompGraph, int]]:
    """[(i, graph, k)]: `regal_set(count, seed)` with graph i split in
    k = ks[i % len(ks)] stages; the regal-time suite of the batch and search benchmarks
    and of `jaxplace warmup --many` (`ks` (4, 8, 16) and count 30 there)."""
    ks = [int(k) for k in ks]
    if not ks:
        raise JaxplaceError("give at least one k", field="ks")
    return [(i, g, ks[i % len(ks)]) for i, g in enumerate(regal_set(count, seed=seed))]
