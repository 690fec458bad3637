"""Orphan backward units in the DP over ideals: a per-piece relaxation and its repair.

In jaxplace's model (`jaxplace.units`) contiguity is
taken on the forward graph and a backward node goes with the forward nodes of its colour
class. A backward unit without any forward node (an *orphan*: bert_l-3_training's
AccumulateGrad nodes, which have no colour class, and its loss nodes) has no ordering
edge, so any device may hold it. Its atom is isolated in the atom DAG and doubles the
number of ideals: bert_l-3_training has 1,428 forward ideals and 14 orphans, 1,428 x
2^14 ideals in all. Tarnawski et al.'s code (NeurIPS 2020; `createArtificialForwardNodes`
in msr-fiddle/dnn-partitioning) gives each orphan an artificial forward mirror ordered
like a mirror image of its backward edges (2,774 ideals once the cycles this creates are
merged), which restricts the splits: its optimum bounds ours from above only.

Here the DP runs over the forward atoms' ideals (Tarnawski et al.'s "DP over the forward
part"), each orphan handled by a relaxation: an accelerator piece S takes whichever
subset O of the orphans minimizes its own cost f(S + O), orphans not in O counted as
placed elsewhere, independently of the other pieces (a CPU piece takes none: that only
lowers its cost). Every real split is one such choice per piece (with its orphans
partitioned), so the DP's value is a lower bound on OPT. The cost splits over the
components of orphans that share tensors: f(S + O) = f'(S) + sum_c D_c(S & N_c, O & c),
where f' counts the tensors that touch no orphan and N_c are the forward atoms that
share a tensor with component c, so min_O is a table over the subsets of N_c per
component (orphan parameters are ignored: a relaxation of the capacity too).

Repair: the pieces of the DP's solution with the orphans each piece chose; an orphan
chosen by no piece or by several goes, greedily, wherever the split's bottleneck grows
least. When the repaired split costs the DP's value it is optimal; otherwise the DP's
value is a lower bound and the split an upper bound (`solve_ideals` then falls back to
the full DP when it is small enough).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.exact.atoms import Atoms
from jaxplace.objectives.throughput.cost import evaluate_partition
from jaxplace.problem import Problem

#: Components whose table would need more than 2^MAX_TABLE_BITS entries (forward
#: neighbours + orphans) are dropped from the relaxation (still a valid lower bound).
MAX_TABLE_BITS = 20
#: Passes of single-orphan moves in `repair`.
MAX_REPAIR_PASSES = 4


@dataclass(frozen=True, eq=False)
class Component:
    """Orphans sharing tensors, and the table of the relaxation.

    - `members`: (c,) int64 original atom ids of its orphans.
    - `nbrs`: (b,) int64 forward atom ids (in `OrphanSplit.forward`) sharing a tensor.
    - `table`: (2^b,) float64 min over O of the extra cost of a piece whose forward
      atoms meet `nbrs` in the bit set s: work(O) + the tensors of the component crossing.
    - `choice`: (2^b,) int64 the minimizing O as a bit set over `members`.
    """

    members: np.ndarray
    nbrs: np.ndarray
    table: np.ndarray
    choice: np.ndarray


@dataclass(frozen=True, eq=False)
class OrphanSplit:
    """The forward atoms and the orphan components of a problem's atoms.

    - `forward`: the Atoms without the orphans and without the tensor groups touching
      them; its `atom_of` is -1 on orphan nodes.
    - `fwd_index`: (A,) int64 new id of each original atom, -1 for orphans.
    - `orphans`: (m,) int64 original atom ids of the orphans.
    - `components`: one `Component` per group of orphans sharing tensors.
    - `atom_of`: (n,) int64 original atom of every node.
    - `orphan_bad`: (m,) int64 nodes of each orphan unsupported on accelerators.
    """

    forward: Atoms
    fwd_index: np.ndarray
    orphans: np.ndarray
    components: tuple[Component, ...]
    atom_of: np.ndarray
    orphan_bad: np.ndarray

    @property
    def bad_orphans(self) -> int:
        """Orphans holding a node unsupported on accelerators (they need a CPU)."""
        return int((self.orphan_bad > 0).sum())


def orphan_atoms(problem: Problem, atoms: Atoms) -> np.ndarray:
    """(A,) bool: the atoms holding only backward nodes."""
    bwd = problem.graph.node_attrs.get("is_backward")
    has_fwd = np.zeros(atoms.num_atoms, dtype=bool)
    if bwd is None:
        return has_fwd
    has_fwd[atoms.atom_of[~np.asarray(bwd, dtype=bool)]] = True
    return ~has_fwd


def _find(parent: dict, x: int) -> int:
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _bits(values: np.ndarray, positions) -> np.ndarray:
    """Number of set bits of `values` among `positions`."""
    out = np.zeros(values.shape, dtype=np.int64)
    for p in positions:
        out += (values >> p) & 1
    return out


def _component(atoms: Atoms, members: list[int], groups: list[int], fwd_index, orphan,
               max_bits: int) -> Component:
    """Build the table of one component (see `Component`)."""
    members_a = np.asarray(sorted(members), dtype=np.int64)
    pos = {int(a): i for i, a in enumerate(members_a)}
    nb = sorted({int(fwd_index[a]) for gi in groups for a in atoms.tensor_ends[gi]
                 if not orphan[a]})
    nbrs = np.asarray(nb, dtype=np.int64)
    b, c = len(nbrs), len(members_a)
    if b + c > max_bits:
        return Component(members_a, np.zeros(0, dtype=np.int64), np.zeros(1),
                         np.zeros(1, dtype=np.int64))
    npos = {a: i for i, a in enumerate(nb)}
    S = np.arange(1 << b, dtype=np.int64)[:, None]
    O = np.arange(1 << c, dtype=np.int64)[None, :]
    work = np.where(atoms.bad[members_a] > 0, np.inf, atoms.work[members_a])
    cost = np.zeros((1, 1 << c))
    for i, w in enumerate(work):
        cost = cost + np.where((O >> i) & 1, w, 0.0)
    cost = np.broadcast_to(cost, (1 << b, 1 << c)).copy()
    for gi in groups:
        ends = atoms.tensor_ends[gi]
        fpos = [npos[int(fwd_index[a])] for a in ends if not orphan[a]]
        opos = [pos[int(a)] for a in ends if orphan[a]]
        cnt = _bits(S, fpos) + _bits(O, opos)
        cost += atoms.tensor_size[gi] * ((cnt > 0) & (cnt < len(ends)))
    choice = cost.argmin(axis=1)
    table = cost[np.arange(1 << b), choice]
    return Component(members_a, nbrs, table, choice.astype(np.int64))


def split_orphans(problem: Problem, atoms: Atoms,
                  max_bits: int = MAX_TABLE_BITS) -> OrphanSplit | None:
    """The forward atoms and orphan components of `atoms`; None without orphans (or
    without forward atoms)."""
    orphan = orphan_atoms(problem, atoms)
    if not orphan.any() or orphan.all():
        return None
    A = atoms.num_atoms
    fwd = ~orphan
    fwd_index = np.full(A, -1, dtype=np.int64)
    fwd_index[fwd] = np.arange(int(fwd.sum()))
    orphans = np.flatnonzero(orphan)
    parent = {int(o): int(o) for o in orphans}
    touching: list[tuple[int, list[int]]] = []
    plain_ends, plain_size = [], []
    for gi, ends in enumerate(atoms.tensor_ends):
        mine = [int(a) for a in ends if orphan[a]]
        if not mine:
            plain_ends.append(fwd_index[ends])
            plain_size.append(atoms.tensor_size[gi])
            continue
        touching.append((gi, mine))
        for a in mine[1:]:
            ra, rb = _find(parent, a), _find(parent, mine[0])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    comp_members: dict[int, list[int]] = {}
    for o in orphans.tolist():
        comp_members.setdefault(_find(parent, o), []).append(o)
    comp_groups: dict[int, list[int]] = {r: [] for r in comp_members}
    for gi, mine in touching:
        comp_groups[_find(parent, mine[0])].append(gi)
    comps = tuple(_component(atoms, comp_members[r], comp_groups[r], fwd_index, orphan,
                             max_bits) for r in sorted(comp_members))
    old = np.flatnonzero(fwd)
    ptr = np.zeros(len(old) + 1, dtype=np.int64)
    preds = [fwd_index[atoms.preds(a)] for a in old]
    np.cumsum([len(p) for p in preds], out=ptr[1:])
    pred_idx = np.concatenate(preds) if preds else np.zeros(0, dtype=np.int64)
    forward = Atoms(fwd_index[atoms.atom_of], ptr, pred_idx.astype(np.int64),
                    atoms.work[fwd], atoms.cpu[fwd], atoms.param[fwd], atoms.bad[fwd],
                    tuple(plain_ends), np.asarray(plain_size, dtype=np.float64))
    return OrphanSplit(forward, fwd_index, orphans, comps, atoms.atom_of,
                       atoms.bad[orphans])


class OrphanTables:
    """The relaxation's extra piece cost, per ideal of the forward lattice.

    `codes`: (components, N) int64, the bit set of each component's forward neighbours
    in ideal j (bit i: `Component.nbrs[i]`); a piece J \\ I meets them in
    codes[j] & ~codes[i].
    """

    def __init__(self, split: OrphanSplit, member_t: np.ndarray):
        self.split = split
        N = member_t.shape[1]
        self.comps = [c for c in split.components if len(c.nbrs)]
        self.codes = np.zeros((len(self.comps), N), dtype=np.int64)
        for ci, c in enumerate(self.comps):
            for i, a in enumerate(c.nbrs.tolist()):
                self.codes[ci] |= member_t[a].astype(np.int64) << i

    def extra(self, j: int, idx: np.ndarray) -> np.ndarray:
        """(B,) extra cost of the accelerator pieces J \\ I for I in idx."""
        out = np.zeros(len(idx))
        for ci, c in enumerate(self.comps):
            code = self.codes[ci]
            out += c.table[code[j] & ~code[idx]]
        return out

    def chosen(self, i: int, j: int) -> list[int]:
        """Original atom ids of the orphans the accelerator piece J \\ I takes."""
        out = []
        for ci, c in enumerate(self.comps):
            s = int(self.codes[ci, j] & ~self.codes[ci, i])
            bits = int(c.choice[s])
            out += [int(a) for k, a in enumerate(c.members.tolist()) if bits >> k & 1]
        return out


def _votes(tabs: OrphanTables, pieces, member_t: np.ndarray, k: int):
    """(atom_block (A,) int64 with the forward atoms' blocks and -1 on orphans, and
    orphan -> the accelerator blocks whose piece chose it)."""
    split = tabs.split
    block_f = np.zeros(split.forward.num_atoms, dtype=np.int64)
    votes: dict[int, list[int]] = {int(o): [] for o in split.orphans}
    n_acc = n_cpu = 0
    for i, j, on_cpu in pieces:
        piece = np.flatnonzero(member_t[:, j] & ~member_t[:, i])
        if on_cpu:
            block_f[piece], n_cpu = k + n_cpu, n_cpu + 1
        else:
            block_f[piece] = n_acc
            for o in tabs.chosen(i, j):
                votes[o].append(n_acc)
            n_acc += 1
    atom_block = np.full(len(split.fwd_index), -1, dtype=np.int64)
    fwd = split.fwd_index >= 0
    atom_block[fwd] = block_f[split.fwd_index[fwd]]
    return atom_block, votes


def _local_search(problem: Problem, atom_of: np.ndarray, atom_block: np.ndarray,
                  order: list[int], again: list[int]) -> None:
    """Move one orphan at a time (over `order`, then `again` while it helps) to the
    block that lowers the block costs sorted in decreasing order, lexicographically:
    the bottleneck first, then the runners-up (which gets the search off plateaus)."""
    bad = np.bincount(atom_of, weights=~problem.supported, minlength=len(atom_block)) > 0

    def score():
        return tuple(np.sort(evaluate_partition(problem, atom_block[atom_of]).total)[::-1])

    current = score()
    for _ in range(MAX_REPAIR_PASSES):
        before = current
        for o in order:
            where = atom_block[o]
            for b in range(problem.k if bad[o] and problem.cpus else 0, problem.num_blocks):
                if b != atom_block[o]:
                    atom_block[o], old = b, atom_block[o]
                    sc = score()
                    if sc < current:
                        current, where = sc, b
                    atom_block[o] = old
            atom_block[o] = where
        if current == before:
            break
        order = again


def repair(problem: Problem, tabs: OrphanTables, pieces, member_t: np.ndarray,
           k: int) -> np.ndarray:
    """(n,) assignment from the relaxed DP's pieces: `pieces` is a list of (i, j,
    on_cpu) in pipeline order; orphans chosen by one accelerator piece go there, the
    others start on their first chooser (else the first CPU when they need one, else
    the last accelerator), then single-orphan moves, heaviest first (`_local_search`)."""
    split = tabs.split
    atom_block, votes = _votes(tabs, pieces, member_t, k)
    bad = np.bincount(split.atom_of, weights=~problem.supported, minlength=len(atom_block))
    work = np.bincount(split.atom_of, weights=problem.graph.work, minlength=len(atom_block))
    undecided = []
    for o, v in votes.items():
        if len(v) == 1:
            atom_block[o] = v[0]
        else:
            undecided.append(o)
            atom_block[o] = problem.k if bad[o] and problem.cpus else (
                v[0] if v else problem.k - 1)
    heavy_first = sorted(votes, key=lambda o: -work[o])
    _local_search(problem, split.atom_of, atom_block,
                  sorted(undecided, key=lambda o: -work[o]) + heavy_first, heavy_first)
    return atom_block[split.atom_of]
