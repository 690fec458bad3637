"""Exact splits of whole workloads: the DP over ideals of Tarnawski et al. (NeurIPS 2020).

    from jaxplace.exact import solve_ideals
    res = solve_ideals(problem)            # pruned by the default search's cost
    res.cost, res.assignment, res.status   # the optimum over contiguous splits

As a certificate method: `jp.certify(problem, methods=("ideals",))`. Branch, bound and
remember over the same ideals (proofs where the DP has too many states) is the
subpackage `jaxplace.exact.bbr`. `pieces` holds the virtual devices of a non-contiguous
split (its pieces in pipeline order, the fewest of them).
"""

from jaxplace.exact.atoms import Atoms, build_atoms
from jaxplace.exact.bound import IdealsBound
from jaxplace.exact.dp import IdealsResult, count_problem_ideals, solve_ideals
from jaxplace.exact.lattice import DEFAULT_MAX_IDEALS, count_ideals, enumerate_ideals
from jaxplace.exact.noncontiguous import placement_units, solve_noncontiguous
from jaxplace.exact.orphans import OrphanSplit, split_orphans

__all__ = ["DEFAULT_MAX_IDEALS", "Atoms", "IdealsBound", "IdealsResult", "OrphanSplit",
           "build_atoms", "count_ideals", "count_problem_ideals", "enumerate_ideals",
           "placement_units", "solve_ideals", "solve_noncontiguous", "split_orphans"]
