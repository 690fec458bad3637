"""Policy routing: which shipped policy a problem gets, and the two aids the policy
search methods add on some graphs. Every such rule lives here.

The routing looks at the problem's placement units (`jaxplace.units`):

- no colocation classes (trivial units): gnn-v3 (`DEFAULT_POLICY`);
- colocation classes, no free unit: gnn-v3-train (`COLOCATION_POLICY`);
- colocation classes and a free unit: gnn-v4-train (`ORPHAN_POLICY`), and on every
  graph with a free unit "policy" anchors the means to the DFS order
  (`dfs_anchor_for`) and "policy+brkga" starts from the heuristic orders too
  (`heuristic_seeds_apply`).

Why, measured on held-out generated graphs:

- The policies. gnn-v3-train is gnn-v3 fine-tuned on training graphs (each backward
  op shares its forward op's device); it is better there, and a fine-tune that also
  served plain graphs cost them 0.25% at greedy, so plain graphs keep gnn-v3.
  gnn-v4-train is gnn-v3-train fine-tuned on training graphs with free units (units
  with no ordering edge, e.g. orphan backward ops, which Kahn's order may put
  anywhere): greedy 0.987x gnn-v3-train's cost per problem on 48 held-out orphan
  graphs, but 0.4-0.6% worse on colocated graphs without free units.
- DFS anchor ("policy"): on graphs with free units the policy's means get
  `DFS_ANCHOR` x the DFS order's rank in [-1, 1] (`dfs_ranks`); greedy 0.925x and
  best of 100 0.952x the cost per problem on 48 held-out orphan graphs. Off for
  "policy+brkga", whose first population holds the DFS order itself (the anchor was
  level there), and for a policy trained with an anchor of its own.
- Heuristic orders ("policy+brkga"): on graphs with free units the first population
  also holds the DFS / ASAP / ALAP orders over units (free units placed next to
  their tensor partner): 0.980x the cost per problem on 48 held-out orphan graphs,
  and the proven optimum on bert_l-3_training; on other graphs they made it worse.

Options override each rule: `policy=PATH`, `dfs_anchor`, `heuristic_seeds`. The
default search couples its BRKGA phase with the routed policy at k >= 8 on identical
accelerators without CPU blocks (`jaxplace.objectives.throughput.search`).
"""

from __future__ import annotations

import math

from jaxplace.errors import JaxplaceError

#: The shipped policy for graphs without colocation classes, and when no problem is given.
DEFAULT_POLICY = "gnn-v3"
#: The shipped policy for graphs with colocation classes and no free unit.
COLOCATION_POLICY = "gnn-v3-train"
#: The shipped policy for graphs with colocation classes and at least one free unit.
ORPHAN_POLICY = "gnn-v4-train"
#: Every policy the routing can select: exactly the ones shipped in the package.
SHIPPED_POLICIES = (DEFAULT_POLICY, COLOCATION_POLICY, ORPHAN_POLICY)
#: Weight of the DFS rank added to the policy's means by "policy" on graphs with free
#: units, chosen among 0 .. 2 on one set of orphan graphs and checked on fresh ones.
DFS_ANCHOR = 1.0


def default_policy_name(problem=None) -> str:
    """The shipped policy for `problem` (module table); DEFAULT_POLICY without one."""
    if problem is None or problem.graph.units.trivial:
        return DEFAULT_POLICY
    return ORPHAN_POLICY if problem.graph.units.has_free_units else COLOCATION_POLICY


def anchor_value(option, field: str = "dfs_anchor") -> float:
    """The DFS anchor given as an option (a number or its text), checked: finite, else
    JaxplaceError naming `field`."""
    try:
        a = float(option)
    except (TypeError, ValueError):
        a = math.nan
    if not math.isfinite(a):
        raise JaxplaceError(f"expected a finite number, got {option!r}", field=field)
    return a


def dfs_anchor_for(problem, option=None, coupled: bool = False,
                   built_in: float = 0.0) -> float:
    """The DFS anchor of the policy's means (`jaxplace.policy.node_distribution`):
    the option `dfs_anchor` when given, else DFS_ANCHOR for "policy" on graphs with
    free units and 0 elsewhere, for "policy+brkga" (`coupled`) and for a policy
    trained with an anchor of its own (`built_in`, its `ModelConfig.dfs_anchor`)."""
    if option is not None:
        return anchor_value(option)
    if coupled or built_in or not problem.graph.units.has_free_units:
        return 0.0
    return DFS_ANCHOR


def heuristic_seeds_apply(problem, option=None) -> bool:
    """Whether "policy+brkga" puts the heuristic orders (`seed_priorities`) in its
    first population: the option `heuristic_seeds` when given, else only on graphs
    with free units."""
    return problem.graph.units.has_free_units if option is None else bool(option)
