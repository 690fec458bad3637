"""Virtual devices: the pipeline schedule of a non-contiguous split.

Tarnawski et al. (NeurIPS 2020, section 5.2): a device whose node set is not contiguous
is split into pieces, each placed on a virtual sub-device, so that the pieces of all
devices can be topologically ordered; the virtual devices form a pipeline, and those
of one real device never run at the same time, so the time per sample is still the
largest device load (the split into pieces changes nothing in the cost).

`virtual_pieces` finds the fewest pieces. Pieces in pipeline order are the runs of one
device in a topological order, so the fewest pieces is the fewest device changes over
all topological orders. A run can always be extended while its device has a ready node
(moving that node forward keeps the order topological and removes no run boundary),
so only the device of each next run is a choice: breadth-first search over the
emitted sets (ideals) reached after each run, deduplicated, gives the minimum. The
search keeps at most `max_states` ideals per run; when it had to drop some, the count
is an upper bound and `VirtualPieces.minimal` is False.

Contiguity is taken on `units.ordering_edges` (forward edges of training graphs, as
`objectives.throughput.cost.quotient_order`); a node off those edges (a backward node) joins the
piece of the first forward node of its colour class on the same device, else the first
piece of its device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.objectives.throughput.cost import check_assignment, evaluate_partition
from jaxplace.problem import Problem
from jaxplace.units import ordering_edges

#: Ideals kept per run by the breadth-first search (beyond: a heuristic upper bound).
DEFAULT_MAX_STATES = 256


@dataclass(frozen=True, eq=False)
class VirtualPieces:
    """The virtual devices of a split, in pipeline order.

    Attributes:
        piece_of: (n,) int64 piece of every node; pieces numbered 0.. in pipeline order.
        device: (P,) int64 block (device) of every piece.
        order: (n,) int64 nodes piece by piece (topological on the ordering edges).
        minimal: True when P is proven the fewest pieces of any valid schedule.
    """

    piece_of: np.ndarray
    device: np.ndarray
    order: np.ndarray
    minimal: bool

    @property
    def num_pieces(self) -> int:
        return len(self.device)

    @property
    def cuts(self) -> tuple[int, ...]:
        """Positions in `order` where pieces 1, 2, ... start."""
        sizes = np.bincount(self.piece_of, minlength=self.num_pieces)
        return tuple(int(c) for c in np.cumsum(sizes)[:-1])

    def per_device(self, num_blocks: int) -> np.ndarray:
        """(num_blocks,) int64 number of pieces of every block."""
        return np.bincount(self.device, minlength=num_blocks).astype(np.int64)

    def renumbered(self, new_block: np.ndarray) -> VirtualPieces:
        """The same pieces with block b renamed new_block[b]."""
        return VirtualPieces(self.piece_of, np.asarray(new_block)[self.device], self.order,
                             self.minimal)

    def to_dict(self, problem: Problem, stage_ids: dict[int, int] | None = None) -> dict:
        """JSON-ready: per piece its block (renamed by `stage_ids`) and node ids."""
        ids = problem.graph.node_ids
        out = []
        for p, piece in enumerate(np.split(self.order, list(self.cuts))):
            b = int(self.device[p])
            out.append({"piece": p, "block": stage_ids.get(b, b) if stage_ids else b,
                        "nodes": [ids[v] for v in piece]})
        return {"num_pieces": self.num_pieces, "minimal": self.minimal, "pieces": out}


def _csr(src: np.ndarray, dst: np.ndarray, n: int):
    order = np.argsort(src, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return ptr, dst[order]


class _Dag:
    """The ordering DAG restricted to its nodes, with each node's block."""

    def __init__(self, problem: Problem, a: np.ndarray):
        g = problem.graph
        e = ordering_edges(g)
        n = g.num_nodes
        touched = np.zeros(n, dtype=bool)
        touched[e.ravel()] = True
        bwd = g.node_attrs.get("is_backward")
        self.free = ~touched & (np.asarray(bwd, dtype=bool) if bwd is not None
                                else np.zeros(n, dtype=bool))
        self.n, self.a = n, a
        self.succ_ptr, self.succ_idx = _csr(e[:, 0], e[:, 1], n)
        self.indeg = np.bincount(e[:, 1], minlength=n).astype(np.int64)
        self.src, self.dst = e[:, 0], e[:, 1]
        self.total = int((~self.free).sum())

    def run(self, emitted: np.ndarray, d: int) -> list[int]:
        """Emit ready nodes of block d until none is left (mutates `emitted`)."""
        left = self.indeg - np.bincount(self.dst[emitted[self.src]], minlength=self.n)
        stack = np.flatnonzero((left == 0) & ~emitted & ~self.free & (self.a == d)).tolist()
        out = []
        while stack:
            v = stack.pop()
            emitted[v] = True
            out.append(v)
            for w in self.succ_idx[self.succ_ptr[v]:self.succ_ptr[v + 1]].tolist():
                left[w] -= 1
                if left[w] == 0 and self.a[w] == d and not emitted[w]:
                    stack.append(w)
        return out

    def ready_blocks(self, emitted: np.ndarray) -> np.ndarray:
        left = self.indeg - np.bincount(self.dst[emitted[self.src]], minlength=self.n)
        return np.unique(self.a[(left == 0) & ~emitted & ~self.free])


def _search(dag: _Dag, max_states: int):
    """(list of (block, nodes) runs, minimal) by breadth-first search over ideals."""
    start = np.zeros(dag.n, dtype=bool)
    layer = [(start, -1, [])]  # (emitted, last block, runs so far)
    seen = {start.tobytes()}
    exact = True
    while True:
        nxt = []
        for emitted, last, runs in layer:
            for d in dag.ready_blocks(emitted).tolist():
                if d == last:
                    continue
                e = emitted.copy()
                nodes = dag.run(e, d)
                key = e.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                item = (e, d, [*runs, (d, nodes)])
                if int(e.sum()) == dag.total:
                    return item[2], exact
                nxt.append(item)
        if not nxt:  # nothing to emit at all (no forward node)
            return [], exact
        if len(nxt) > max_states:
            exact = False
            nxt.sort(key=lambda it: -int(it[0].sum()))
            nxt = nxt[:max_states]
        layer = nxt


def virtual_pieces(problem: Problem, assignment, *,
                   max_states: int = DEFAULT_MAX_STATES) -> VirtualPieces:
    """The fewest virtual pieces of a split (see the module doc).

    Args:
        problem: the instance.
        assignment: (n,) block of every node (any split, contiguous or not).
        max_states: ideals kept per run by the search.
    """
    a = check_assignment(problem, assignment)
    dag = _Dag(problem, a)
    runs, minimal = _search(dag, max(1, int(max_states)))
    piece_of = np.full(dag.n, -1, dtype=np.int64)
    members = [list(nodes) for _, nodes in runs]
    device = [d for d, _ in runs]
    for p, nodes in enumerate(members):
        piece_of[nodes] = p
    _place_free(problem, a, piece_of, members, device)
    order = np.asarray([v for nodes in members for v in nodes], dtype=np.int64)
    return VirtualPieces(piece_of, np.asarray(device, dtype=np.int64), order, minimal)


def pipeline_cost(problem: Problem, assignment, pieces: VirtualPieces):
    """`evaluate_partition(contiguous=False)` of the split, its `block_order` the blocks
    in order of their first piece (unused blocks last), so that `stage_ids` numbers
    them as the pipeline runs."""
    from dataclasses import replace

    cost = evaluate_partition(problem, assignment, contiguous=False)
    seen = list(dict.fromkeys(int(d) for d in pieces.device))
    order = seen + [b for b in range(problem.num_blocks) if b not in seen]
    return replace(cost, block_order=np.asarray(order, dtype=np.int64))


def _place_free(problem: Problem, a: np.ndarray, piece_of: np.ndarray,
                members: list[list[int]], device: list[int]) -> None:
    """Put the nodes off the ordering edges into a piece of their block (in place)."""
    color = problem.graph.node_attrs.get("color_class")
    first_piece = {}
    for p, d in enumerate(device):
        first_piece.setdefault(d, p)
    class_piece = {}
    if color is not None:
        for v in np.flatnonzero(piece_of >= 0):
            if color[v] >= 0:
                class_piece.setdefault((int(color[v]), int(a[v])), int(piece_of[v]))
    for v in np.flatnonzero(piece_of < 0).tolist():
        d = int(a[v])
        p = class_piece.get((int(color[v]), d), -1) if color is not None and \
            color[v] >= 0 else -1
        if p < 0:
            p = first_piece.get(d, -1)
        if p < 0:  # the block holds no forward node: a piece of its own, last
            p = len(device)
            device.append(d)
            members.append([])
            first_piece[d] = p
        piece_of[v] = p
        members[p].append(v)


__all__ = ["DEFAULT_MAX_STATES", "VirtualPieces", "pipeline_cost", "virtual_pieces"]
