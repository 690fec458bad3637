"""Pipeline stages of a layer chain on a cluster of unequal devices, exactly.

Stage s runs on device `order[s]` (distinct devices): its time is the roofline time of
its layers on that device's profile, plus the activation entering it over the link
from the previous stage's device and the one leaving it over the link to the next
(each direction's bandwidth and latency from the cluster file; in training the
gradient crosses back, so twice), the same stage cost as
`jaxplace.objectives.throughput.cost` with per-device speeds and per-link bandwidths.
Memory: a stage's resident bytes plus its largest working set must fit
`memory_fraction` of its device's memory. The objective
is the bottleneck stage time (the pipeline's throughput).

For one device order, a dynamic program over (stage, prefix of items) is exhaustive
over contiguous splits (for a chain every valid partition is contiguous). Orders are
enumerated over device classes (same profile and memory): every distinct sequence of
classes is tried, with the devices of a class taken in index order. This is exact
over all orders when the devices of a class have the same links (true of the shipped
clusters within a server); with more than `MAX_ORDERS` class sequences it refuses.
The DP runs on all orders at once (numpy, one array row per order).

Not an objective: it is an exact DP over a layer chain (a model config's layers, not a
`Problem`'s op graph) and device orders on an unequal cluster, a side path behind
`jaxplace partition config.json --cluster` (`cli.partition_cluster`; rows and the
certificate in `cluster_result`). The objective for a general op graph on such a
cluster is `objectives.throughput_unequal` (searched, with lower bounds); this DP
answers the chain case exactly under its own layer-level cost model (roofline layers,
activations over links, the training workload's memory), which no `Problem` carries.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from jaxplace.cluster import Cluster
from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.importers.builder import US
from jaxplace.llm.graph import _config, _workload, layer_graph
from jaxplace.llm.hetero import _item_arrays

#: Most device-class sequences the exact search tries.
MAX_ORDERS = 50_000


@dataclass(frozen=True)
class ClusterPlan:
    """The best split of a layer chain over a cluster.

    Attributes:
        assignment: (n,) stage of every node of the layer graph, 0.. in pipeline order.
        devices: device index of each stage (into `cluster.devices`).
        bottleneck: the largest stage time, microseconds.
        stage_times: (stages,) microseconds, transfers included.
        stage_memory: (stages,) bytes resident plus the stage's largest working set.
        orders_tried: device-class sequences the search compared.
    """

    assignment: np.ndarray
    devices: tuple[int, ...]
    bottleneck: float
    stage_times: np.ndarray
    stage_memory: np.ndarray
    orders_tried: int


@dataclass(frozen=True)
class _Chain:
    item: np.ndarray  # (n,) item of each node
    work: np.ndarray  # (d, m) microseconds of each item on each device
    mem: np.ndarray  # (m,) resident bytes
    ws: np.ndarray  # (m,) working set bytes
    out: np.ndarray  # (m,) bytes crossing to the next item (both directions counted)
    caps: np.ndarray  # (d,) bytes a stage may fill on each device


def chain_arrays(config, cluster: Cluster, workload=None, *, source: str | None = None,
                 **options) -> tuple[_Chain, CompGraph]:
    """Per-device item costs of a config's layer chain (one layer graph per profile)."""
    cfg, _ = _config(config, source)
    wl = _workload(cfg, workload, options, source or cfg.name)
    graphs = {}
    for dev in cluster.devices:
        key = _profile_key(dev.profile)
        if key not in graphs:
            graphs[key] = layer_graph(cfg, wl, device=dev.profile, source=source)
    first = graphs[_profile_key(cluster.devices[0].profile)]
    item, _, mem, ws, out_us = _item_arrays(first)
    prof = cluster.devices[0].profile
    out_bytes = out_us / US * prof.link_bw  # the graph's link times back to bytes
    work = np.stack([_item_arrays(graphs[_profile_key(d.profile)])[1]
                     for d in cluster.devices])
    caps = cluster.memory * wl.memory_fraction
    return _Chain(item, work, mem, ws, out_bytes, caps), first


def _profile_key(profile) -> tuple:
    """A hashable identity of a profile (its name and any overridden rates)."""
    return profile.name, tuple(sorted(profile.overrides.items())), profile.mem_bw, \
        tuple(sorted(profile.matrix.items()))


def _class_orders(cluster: Cluster, k: int) -> np.ndarray:
    """(O, k) device indices: every distinct sequence of k device classes."""
    keys = [(_profile_key(d.profile), d.memory) for d in cluster.devices]
    classes: dict = {}
    for i, key in enumerate(keys):
        classes.setdefault(key, []).append(i)
    members = list(classes.values())
    left = [len(m) for m in members]
    count = _count_sequences(left, k)
    if count > MAX_ORDERS:
        raise JaxplaceError(f"{count} device orders exceed the exact search's limit of "
                            f"{MAX_ORDERS}; use fewer distinct device kinds or stages",
                            field="cluster")
    out: list[list[int]] = []
    seq: list[int] = []

    def rec():
        if len(seq) == k:
            used = Counter()
            row = []
            for c in seq:
                row.append(members[c][used[c]])
                used[c] += 1
            out.append(row)
            return
        for c in range(len(members)):
            if left[c]:
                left[c] -= 1
                seq.append(c)
                rec()
                seq.pop()
                left[c] += 1

    rec()
    return np.asarray(out, np.int64)


def _count_sequences(left: list[int], k: int) -> int:
    """Distinct length-k sequences from a multiset with these multiplicities."""
    # polynomial product of sum_j x^j / j! per class, coefficient of x^k times k!
    from math import factorial

    poly = [1.0]
    for m in left:
        term = [1.0 / factorial(j) for j in range(m + 1)]
        new = [0.0] * (len(poly) + m)
        for a, pa in enumerate(poly):
            for b, tb in enumerate(term):
                new[a + b] += pa * tb
        poly = new
    return round(poly[k] * factorial(k)) if k < len(poly) else 0


def _link_us(cluster: Cluster, nbytes: np.ndarray, src, dst, training: bool) -> np.ndarray:
    """Microseconds to move nbytes[...] over links src -> dst (arrays broadcast)."""
    lat = cluster.latency[src, dst] * (2.0 if training else 1.0)
    return (nbytes / cluster.bandwidth[src, dst] + lat) * US


def _peaks(ws: np.ndarray) -> np.ndarray:
    """(m+1, m+1): peak[i, j] = max(ws[i:j]) (0 when empty)."""
    m = len(ws)
    peak = np.zeros((m + 1, m + 1))
    for i in range(m):
        peak[i, i + 1:] = np.maximum.accumulate(ws[i:])
    return peak


def split_on_orders(chain: _Chain, cluster: Cluster, orders: np.ndarray,
                    training: bool) -> tuple[np.ndarray, np.ndarray]:
    """Best bottleneck for every device order (O,), and the cuts (O, k+1) of each."""
    orders = np.asarray(orders, np.int64)
    O, k = orders.shape
    m = chain.work.shape[1]
    if m < k:
        raise JaxplaceError(f"{m} items cannot fill {k} stages", field="k")
    pw = np.concatenate([np.zeros((chain.work.shape[0], 1)), np.cumsum(chain.work, 1)], 1)
    pm = np.concatenate([[0.0], np.cumsum(chain.mem)])
    peak = _peaks(chain.ws)
    out_prev = np.concatenate([[0.0], chain.out])  # out_prev[i]: bytes entering item i
    best = np.full((k + 1, O, m + 1), np.inf)
    arg = np.zeros((k + 1, O, m + 1), np.int64)
    best[0, :, 0] = 0.0
    rows = np.arange(O)
    for s in range(1, k + 1):
        dev = orders[:, s - 1]
        prev = orders[:, s - 2] if s > 1 else None
        nxt = orders[:, s] if s < k else None
        for j in range(s, m - (k - s) + 1):
            i = np.arange(s - 1, j)
            comp = pw[dev][:, j:j + 1] - pw[dev][:, i]
            if prev is not None:
                comp = comp + _link_us(cluster, out_prev[i][None, :], prev[:, None],
                                       dev[:, None], training)
            if nxt is not None:
                comp = comp + _link_us(cluster, chain.out[j - 1], dev, nxt, training)[:, None]
            fits = (pm[j] - pm[i] + peak[i, j])[None, :] <= chain.caps[dev][:, None]
            cand = np.where(fits, np.maximum(best[s - 1][:, i], comp), np.inf)
            c = np.argmin(cand, axis=1)
            best[s, :, j] = cand[rows, c]
            arg[s, :, j] = i[c]
    cuts = np.zeros((O, k + 1), np.int64)
    cuts[:, k] = m
    for s in range(k, 0, -1):
        cuts[:, s - 1] = arg[s, rows, cuts[:, s]]
    return best[k, :, m], cuts


def stage_costs(chain: _Chain, cluster: Cluster, order, cuts, training: bool):
    """(times us, memory bytes) of each stage of a split given by cuts (k+1,) and the
    device order; the plain per-stage evaluation the DP must agree with."""
    k = len(order)
    times, mems = np.zeros(k), np.zeros(k)
    for s in range(k):
        a, b, p = int(cuts[s]), int(cuts[s + 1]), int(order[s])
        t = chain.work[p, a:b].sum()
        if s > 0:
            t += float(_link_us(cluster, chain.out[a - 1], int(order[s - 1]), p, training))
        if s < k - 1:
            t += float(_link_us(cluster, chain.out[b - 1], p, int(order[s + 1]), training))
        times[s] = t
        mems[s] = chain.mem[a:b].sum() + (chain.ws[a:b].max() if b > a else 0.0)
    return times, mems


def cluster_split(config, cluster: Cluster, workload=None, *, stages: int | None = None,
                  source: str | None = None, **options) -> ClusterPlan:
    """The exact best pipeline split of a decoder config over `cluster` (module doc).

    Args:
        config: a ModelConfig, a parsed config.json dict or its path.
        cluster: the devices and links.
        workload: the run (default `Workload()`), overridden by `options`.
        stages: number of stages (default: every device of the cluster, one stage each).
        source: a name for error messages.
    """
    k = cluster.num_devices if stages is None else int(stages)
    if not 1 <= k <= cluster.num_devices:
        raise JaxplaceError(f"must be between 1 and the cluster's {cluster.num_devices} "
                            f"devices, got {k}", field="k")
    cfg, _ = _config(config, source)
    wl = _workload(cfg, workload, options, source or cfg.name)
    chain, _ = chain_arrays(cfg, cluster, wl, source=source)
    orders = _class_orders(cluster, k)
    best, cuts = split_on_orders(chain, cluster, orders, wl.training)
    o = int(np.argmin(best))
    if not np.isfinite(best[o]):
        raise JaxplaceError(f"no split of {cfg.name} into {k} stages fits the cluster's "
                            "memory", source=source or cfg.name, field="memory")
    times, mems = stage_costs(chain, cluster, orders[o], cuts[o], wl.training)
    stage_of_item = np.repeat(np.arange(k), np.diff(cuts[o]))
    return ClusterPlan(stage_of_item[chain.item], tuple(int(x) for x in orders[o]),
                       float(best[o]), times, mems, len(orders))


def evaluate_split(config, cluster: Cluster, assignment, devices=None, workload=None, *,
                   source: str | None = None, **options):
    """(stage times us, stage memory bytes, fits (stages,) bool) of a given contiguous
    split of the layer graph (`assignment`: stage per node, e.g. a baseline's), stage s
    on device `devices[s]` (default: devices 0, 1, ... in the cluster's order)."""
    cfg, _ = _config(config, source)
    wl = _workload(cfg, workload, options, source or cfg.name)
    chain, _ = chain_arrays(cfg, cluster, wl, source=source)
    stage_item = np.zeros(chain.work.shape[1], np.int64)
    stage_item[chain.item] = np.asarray(assignment, np.int64)
    if np.any(np.diff(stage_item) < 0):
        raise JaxplaceError("stages must follow the layer order", field="assignment")
    k = int(stage_item.max()) + 1
    devices = tuple(range(k)) if devices is None else tuple(int(d) for d in devices)
    if len(devices) != k or len(set(devices)) != k:
        raise JaxplaceError(f"needs {k} distinct devices, got {devices}", field="devices")
    cuts = np.searchsorted(stage_item, np.arange(k + 1), side="left")
    times, mems = stage_costs(chain, cluster, devices, cuts, wl.training)
    return times, mems, mems <= chain.caps[list(devices)]
