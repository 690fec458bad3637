"""Computation graphs: ops with costs, tensors as hyperedges (one producer, its consumers).

The cost model is MTPP (Archer et al., ICML 2024):
every op `v` has `work[v]`, `size_param[v]` (resident parameter bytes) and
`size_out[v]`. A tensor is one producer and the set of its consumers; it is paid at
most once leaving a block and at most once entering each block. Most graphs have one
tensor per producing op (its `size_out`); imported models may have several tensors
per op (multi-output ops), which the hyperedge arrays express directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.units import build_units, unique_pairs

# Node attributes with a meaning in jaxplace; anything else on a networkx node is kept
# in `node_attrs` only when it is numeric and present on every node.
_CORE_ATTRS = ("work", "size_param", "size_out", "name", "op_type", "tensors")


#: Node attributes that are flags (NeurIPS 2020 `isSupportedOnFpga`, `isBackwardNode`).
_FLAG_ATTRS = ("supported_on_accel", "is_backward")


def _not_numeric(key: str):
    raise JaxplaceError("must be numbers", field=key)


def _first_bad(a: np.ndarray, ok) -> int | None:
    """The first node whose value is not a finite number passing `ok`, else None."""
    if a.dtype.kind not in "biuf":
        return 0
    x = a.astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~np.isfinite(x) | ~ok(x))
    return int(bad[0]) if len(bad) else None


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _csr(rows: np.ndarray, cols: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pointers and indices of the pairs (rows[i], cols[i]), sorted by (row, col)."""
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=ptr[1:])
    return _readonly(ptr), _readonly(cols[order].astype(np.int64))


class CompGraph:
    """An immutable, array-backed computation DAG.

    Node index `i` is the i-th node of the source graph. Arrays (all read-only):

    - `work`, `size_param`, `size_out`: (n,) float64 per-node costs.
    - `edges`: (m, 2) int64 unique (producer, consumer) pairs, sorted.
    - `succ_ptr`/`succ_idx`, `pred_ptr`/`pred_idx`: CSR adjacency of `edges`.
    - Tensors (hyperedges), T of them: `tensor_producer` (T,) int64, `tensor_size`
      (T,) float64, and CSR `tensor_ptr` (T+1,) / `tensor_consumers` (sum,) int64.
    - `in_ptr`/`in_tensors`: CSR of the tensors each node consumes (sorted).

    Optional metadata: `names` and `op_types` (tuples of str or None), `node_ids`
    (the source graph's node labels), `node_attrs` (name -> (n,) array, e.g. the
    NeurIPS 2020 `cpu_latency`), and `meta` (graph-level attributes).

    Args:
        work: (n,) non-negative compute time per op.
        edges: (m, 2) producer -> consumer pairs; duplicates collapse.
        size_param: (n,) parameter bytes per op (default 0).
        size_out: (n,) output tensor size per op (default 0; with `tensors`, the sum of
            the op's tensor sizes).
        tensors: optional list of (producer, size, consumers) triples for ops with
            several outputs; by default each op with consumers has one tensor of size
            `size_out` consumed by all its successors.
    """

    def __init__(
        self,
        work: Sequence[float] | np.ndarray,
        edges: Sequence[tuple[int, int]] | np.ndarray = (),
        size_param: Sequence[float] | np.ndarray | None = None,
        size_out: Sequence[float] | np.ndarray | None = None,
        *,
        tensors: Sequence[tuple[int, float, Sequence[int]]] | None = None,
        names: Sequence[str] | None = None,
        op_types: Sequence[str] | None = None,
        node_ids: Sequence[Any] | None = None,
        node_attrs: Mapping[str, np.ndarray] | None = None,
        meta: Mapping[str, Any] | None = None,
    ):
        work_a = np.asarray(work, dtype=np.float64).reshape(-1)
        n = work_a.shape[0]
        if n == 0:
            raise JaxplaceError("graph has no nodes", field="nodes")
        self.num_nodes = n
        self.names = None if names is None else tuple(str(s) for s in names)
        self.op_types = None if op_types is None else tuple(str(s) for s in op_types)
        self.node_ids = tuple(range(n)) if node_ids is None else tuple(node_ids)
        for label, seq in (("names", self.names), ("op_types", self.op_types),
                           ("node_ids", self.node_ids)):
            if seq is not None and len(seq) != n:
                raise JaxplaceError(f"has {len(seq)} entries for {n} nodes", field=label)

        self.work = self._weights(work_a, "work")
        self.size_param = self._weights(
            np.zeros(n) if size_param is None else size_param, "size_param")

        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2) if len(edges) else np.zeros(
            (0, 2), dtype=np.int64)
        if tensors is not None:
            t_edges = [(int(p), int(c)) for p, _, cs in tensors for c in cs]
            e = np.concatenate([e, np.asarray(t_edges, dtype=np.int64).reshape(-1, 2)])
        self._check_edges(e)
        e = unique_pairs(e[:, 0], e[:, 1]) if len(e) else e
        self.edges = _readonly(e)
        self.num_edges = len(e)
        self.succ_ptr, self.succ_idx = _csr(e[:, 0], e[:, 1], n)
        self.pred_ptr, self.pred_idx = _csr(e[:, 1], e[:, 0], n)
        self.topo_order = self._toposort()

        if tensors is None:
            self.size_out = self._weights(
                np.zeros(n) if size_out is None else size_out, "size_out")
            producers = np.flatnonzero(np.diff(self.succ_ptr) > 0)
            self._default_tensors = True
            t_prod = producers
            t_size = self.size_out[producers]
            t_ptr = np.concatenate([[0], np.cumsum(np.diff(self.succ_ptr)[producers])])
            t_cons = np.concatenate(
                [self.succ_idx[self.succ_ptr[u]:self.succ_ptr[u + 1]] for u in producers]
            ) if len(producers) else np.zeros(0, dtype=np.int64)
        else:
            self._default_tensors = False
            t_prod, t_size, t_ptr, t_cons = self._tensor_arrays(tensors)
            sums = np.bincount(t_prod, weights=t_size, minlength=n)
            self.size_out = self._weights(sums if size_out is None else size_out, "size_out")
        self.tensor_producer = _readonly(np.asarray(t_prod, dtype=np.int64))
        self.tensor_size = _readonly(np.asarray(t_size, dtype=np.float64))
        self.tensor_ptr = _readonly(np.asarray(t_ptr, dtype=np.int64))
        self.tensor_consumers = _readonly(np.asarray(t_cons, dtype=np.int64))
        self.num_tensors = len(self.tensor_producer)
        t_of_entry = np.repeat(np.arange(self.num_tensors), np.diff(self.tensor_ptr))
        self.in_ptr, self.in_tensors = _csr(self.tensor_consumers, t_of_entry, n)

        self.node_attrs = {}
        for key, arr in (node_attrs or {}).items():
            a = np.asarray(arr)
            if a.shape != (n,):
                raise JaxplaceError(f"has shape {a.shape}, expected ({n},)", field=key)
            self.node_attrs[key] = _readonly(self._known_attr(key, a))
        self.meta = dict(meta or {})

    # -- construction helpers -------------------------------------------------------

    def _weights(self, values, field: str) -> np.ndarray:
        a = np.asarray(values, dtype=np.float64).reshape(-1)
        if a.shape != (self.num_nodes,):
            raise JaxplaceError(f"has {a.shape[0]} entries for {self.num_nodes} nodes",
                                field=field)
        bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
        if len(bad):
            i = int(bad[0])
            what = "NaN" if np.isnan(a[i]) else "infinite" if np.isinf(a[i]) else "negative"
            raise JaxplaceError(f"{what} value {float(a[i])} at node {self.label(i)}",
                                field=field)
        return _readonly(a)

    def _known_attr(self, key: str, a: np.ndarray) -> np.ndarray:
        """A node attribute with a meaning in jaxplace, checked (else cast silently:
        NaN to True or to a huge class id); other attributes as given."""
        if key == "cpu_latency":
            return self._weights(a if a.dtype.kind in "biuf" else _not_numeric(key), key)
        if key in _FLAG_ATTRS:
            bad = _first_bad(a, lambda x: (x == 0) | (x == 1))
            if bad is not None:
                raise JaxplaceError(f"must be 0/1 or true/false, got {a[bad].item()!r} at "
                                    f"node {self.label(bad)}", field=key)
            return a.astype(bool)
        if key == "color_class":
            bad = _first_bad(a, lambda x: x == np.round(x))
            if bad is not None:
                raise JaxplaceError(f"must be an integer class id (negative: none), got "
                                    f"{a[bad].item()!r} at node {self.label(bad)}",
                                    field=key)
            return a.astype(np.int64)
        return a

    def _check_edges(self, e: np.ndarray) -> None:
        n = self.num_nodes
        out = np.flatnonzero((e < 0).any(axis=1) | (e >= n).any(axis=1))
        if len(out):
            u, v = e[out[0]]
            raise JaxplaceError(f"edge ({u}, {v}) names a node outside 0..{n - 1}",
                                field="edges")
        loops = np.flatnonzero(e[:, 0] == e[:, 1])
        if len(loops):
            raise JaxplaceError(f"self-loop on node {self.label(int(e[loops[0], 0]))}",
                                field="edges")

    def _toposort(self) -> np.ndarray:
        """Kahn order by smallest index; on a cycle, raise naming a node on it."""
        import heapq

        indeg = np.diff(self.pred_ptr).copy()
        heap = [int(v) for v in np.flatnonzero(indeg == 0)]
        heapq.heapify(heap)
        order = []
        while heap:
            u = heapq.heappop(heap)
            order.append(u)
            for w in self.succ_idx[self.succ_ptr[u]:self.succ_ptr[u + 1]]:
                indeg[w] -= 1
                if indeg[w] == 0:
                    heapq.heappush(heap, int(w))
        if len(order) < self.num_nodes:
            # Every leftover node has a leftover predecessor; walking back must repeat.
            left = indeg > 0
            v = int(np.flatnonzero(left)[0])
            seen = set()
            while v not in seen:
                seen.add(v)
                preds = self.pred_idx[self.pred_ptr[v]:self.pred_ptr[v + 1]]
                v = int(next(p for p in preds if left[p]))
            raise JaxplaceError(f"graph has a cycle through node {self.label(v)}",
                                field="edges")
        return _readonly(np.asarray(order, dtype=np.int64))

    def _tensor_arrays(self, tensors):
        prods, sizes, ptr, cons = [], [], [0], []
        for t, (p, s, cs) in enumerate(tensors):
            s = float(s)
            if not np.isfinite(s) or s < 0:
                raise JaxplaceError(f"tensor {t} of node {self.label(int(p))} has size {s!r}",
                                    field="tensors")
            cs = sorted({int(c) for c in cs})
            prods.append(int(p))
            sizes.append(s)
            cons.extend(cs)
            ptr.append(len(cons))
        return (np.asarray(prods, dtype=np.int64), np.asarray(sizes, dtype=np.float64),
                np.asarray(ptr, dtype=np.int64), np.asarray(cons, dtype=np.int64))

    # -- queries ---------------------------------------------------------------------

    def label(self, i: int) -> str:
        """A readable name for node `i`: its name, else its source id, quoted."""
        if self.names is not None and 0 <= i < len(self.names):
            return repr(self.names[i])
        if 0 <= i < len(self.node_ids):
            return repr(self.node_ids[i])
        return str(i)

    def successors(self, v: int) -> np.ndarray:
        return self.succ_idx[self.succ_ptr[v]:self.succ_ptr[v + 1]]

    def predecessors(self, v: int) -> np.ndarray:
        return self.pred_idx[self.pred_ptr[v]:self.pred_ptr[v + 1]]

    def consumers(self, t: int) -> np.ndarray:
        return self.tensor_consumers[self.tensor_ptr[t]:self.tensor_ptr[t + 1]]

    def consumed_tensors(self, v: int) -> np.ndarray:
        return self.in_tensors[self.in_ptr[v]:self.in_ptr[v + 1]]

    @cached_property
    def units(self):
        """Placement units (`jaxplace.units.Units`): colocation classes contracted and
        training graphs ordered by their forward part; one unit per node otherwise."""
        return build_units(self)

    @property
    def has_default_tensors(self) -> bool:
        """True when every op has one output tensor consumed by all its successors."""
        return self._default_tensors

    def __repr__(self) -> str:
        return (f"CompGraph(n={self.num_nodes}, m={self.num_edges}, "
                f"tensors={self.num_tensors}, work={self.work.sum():.6g})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CompGraph):
            return NotImplemented
        same = (self.num_nodes == other.num_nodes and self.node_ids == other.node_ids
                and self.names == other.names and self.op_types == other.op_types
                and self.meta == other.meta
                and self.node_attrs.keys() == other.node_attrs.keys())
        arrays = ("work", "size_param", "size_out", "edges", "tensor_producer",
                  "tensor_size", "tensor_ptr", "tensor_consumers")
        return same and all(np.array_equal(getattr(self, a), getattr(other, a))
                            for a in arrays) and all(
            np.array_equal(self.node_attrs[k], other.node_attrs[k]) for k in self.node_attrs)

    __hash__ = object.__hash__

    # -- networkx --------------------------------------------------------------------

    @classmethod
    def from_networkx(cls, G, *, source: str | None = None) -> CompGraph:
        """Build from a networkx DiGraph with node attributes `work` (required),
        `size_param`, `size_out` (default 0), optional `name`, `op_type`, `tensors`
        (a list of {"size", "consumers"} for multi-output ops), and any numeric
        attribute present on every node (kept in `node_attrs`). Graph attributes go
        to `meta`."""
        if not G.is_directed():
            raise JaxplaceError("graph is undirected; a computation graph needs directed "
                                "edges", source=source)
        ids = list(G.nodes)
        index = {v: i for i, v in enumerate(ids)}
        data = [G.nodes[v] for v in ids]

        def column(field, default=None):
            vals = []
            for v, d in zip(ids, data, strict=True):
                if field not in d or d[field] is None:
                    if default is None:
                        raise JaxplaceError(f"node {v!r} has no '{field}'", source=source,
                                            field=field)
                    vals.append(default)
                else:
                    x = d[field]
                    if isinstance(x, bool) or not isinstance(x, (int, float, np.number)):
                        raise JaxplaceError(f"node {v!r} has non-numeric value {x!r}",
                                            source=source, field=field)
                    vals.append(float(x))
            return np.asarray(vals, dtype=np.float64)

        def optional_str(field):
            if not any(field in d for d in data):
                return None
            return [str(d.get(field, "")) for d in data]

        tensors = None
        if any("tensors" in d for d in data):
            tensors = []
            for v, d in zip(ids, data, strict=True):
                for t in d.get("tensors", []):
                    try:
                        tensors.append((index[v], float(t["size"]),
                                        [index[c] for c in t["consumers"]]))
                    except (KeyError, TypeError) as exc:
                        raise JaxplaceError(f"node {v!r} has a malformed tensor {t!r}",
                                            source=source, field="tensors") from exc
        extra = {}
        for key in set().union(*(d.keys() for d in data)) - set(_CORE_ATTRS):
            vals = [d.get(key) for d in data]
            if all(isinstance(x, (bool, int, float, np.number)) for x in vals):
                extra[key] = np.asarray(vals)
        edges = [(index[u], index[v]) for u, v in G.edges()]
        keep_out = tensors is None or all("size_out" in d for d in data)
        try:
            return cls(column("work"), edges, column("size_param", 0.0),
                       column("size_out", 0.0) if keep_out else None,
                       tensors=tensors, names=optional_str("name"),
                       op_types=optional_str("op_type"), node_ids=ids, node_attrs=extra,
                       meta=dict(G.graph))
        except JaxplaceError as exc:
            raise (exc.with_source(source) if source else exc) from None

    def to_networkx(self):
        """A networkx DiGraph that `from_networkx` turns back into an equal graph."""
        import networkx as nx

        G = nx.DiGraph(**self.meta)
        ids = self.node_ids
        for i in range(self.num_nodes):
            d = {"work": float(self.work[i]), "size_param": float(self.size_param[i]),
                 "size_out": float(self.size_out[i])}
            if self.names is not None:
                d["name"] = self.names[i]
            if self.op_types is not None:
                d["op_type"] = self.op_types[i]
            for key, arr in self.node_attrs.items():
                d[key] = arr[i].item()
            G.add_node(ids[i], **d)
        if not self._default_tensors:
            for t in range(self.num_tensors):
                p = int(self.tensor_producer[t])
                G.nodes[ids[p]].setdefault("tensors", []).append(
                    {"size": float(self.tensor_size[t]),
                     "consumers": [ids[c] for c in self.consumers(t)]})
            for i in range(self.num_nodes):
                G.nodes[ids[i]].setdefault("tensors", [])
        G.add_edges_from((ids[u], ids[v]) for u, v in self.edges)
        return G
