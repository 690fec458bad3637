"""What branch, bound and remember (`bbr`) reads: the instance as bits, the per-T data
and the slack of every comparison with a guess T.

A block counts as fitting T when it costs at most T (1 + RTOL) + ATOL, so float
rounding never refutes a real partition of cost T (a refuted T is then a lower bound
with margin). `model.build_model` and `model.tdata` fill the two records below.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jaxplace.bounds.station import StationData

RTOL = 1e-9
ATOL = 1e-12


@dataclass(frozen=True, eq=False)
class Model:
    """The atoms renumbered topologically (A atoms, G tensor groups).

    - `atom_of`: (n,) int64 new atom number of every node.
    - `pred`: per atom, bitset of its predecessor atoms; `succ`: per atom, list of
      successor atoms.
    - `work`, `cpu`, `param`: per atom floats; `bad`: per atom, holds a node
      unsupported on accelerators; `easy`: min(work if supported, cpu if CPUs).
    - `groups`: per atom, the tensor groups touching it; `gsize`: per group size / B;
      `gcount`: per group, atoms touched; `gmask`: per group, bitset of its atoms.
    - `K`, `C`: accelerators and CPUs usable (at most A each).
    - `cap`: the hard capacity (inf: none); `memory`: overflow budget (None: none);
      `bandwidth`.
    - `full`: bitset of all atoms; `bad_mask`: bitset of atoms with unsupported nodes.
    - `station`: the station windows' T-free data, or None where they do not apply
      (CPU blocks, CPU-only ops, very large graphs).
    - `cross`: the forced crossings' T-free data (`cross.CrossData`), or None
      where they do not apply (CPU blocks, no tensors).
    """

    atom_of: np.ndarray
    pred: list
    succ: list
    work: list
    cpu: list
    param: list
    bad: list
    easy: list
    groups: list
    gsize: list
    gcount: list
    gmask: list
    K: int
    C: int
    cap: float
    memory: float | None
    bandwidth: float
    full: int
    bad_mask: int
    station: StationData | None
    cross: object = None

    @property
    def num_atoms(self) -> int:
        return len(self.work)

    @property
    def typed(self) -> bool:
        """CPU blocks may be used (then transfers are not paid by CPU blocks and the
        windows, LB2/LB3 and the transfer term of LB1 are left out)."""
        return self.C > 0


@dataclass(frozen=True, eq=False)
class TData:
    """What a check at guess T reads besides the model.

    - `T`: the guess; `Tc`: T (1 + RTOL) + ATOL, what a block may cost.
    - `allowed`: per block index d, bitset of the atoms whose window admits d (None:
      no windows); `required`: per d, bitset of the atoms whose latest block is <= d.
    - `refuted`: the windows alone are empty somewhere (no partition of cost <= T).
    - `half`: bitset of atoms with work > Tc / 2 (LB2); `third`, `twothird`: work >
      Tc / 3, > 2 Tc / 3 (LB3).
    - `forced`: per tensor group, no block of cost <= T holds all its atoms; `qsize`:
      per group, what the blocks touching it pay at least in all when none of its
      atoms is placed (`cross`; all False / 0 where the crossings do not apply).
    """

    T: float
    Tc: float
    allowed: list | None
    required: list | None
    refuted: bool
    half: int
    third: int
    twothird: int
    forced: list
    qsize: list
