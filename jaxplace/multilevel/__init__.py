"""Multilevel search for graphs of thousands of ops (method "multilevel").

Coarsen by acyclic contractions (`coarsen`), search the coarsest level with a flat
method, project exactly (`project`), refine on every level (`refine`), with the exact
SliceGraph DP of one order pruned by the work bound (`slicing`) for first solutions
and re-slicing. `MULTILEVEL_MIN_NODES` is the size from which a planner should route
to it; `applies(problem)` says whether it models the problem (no CPU blocks, no backward
ops); `check_memory` refuses a graph the machine cannot hold, before any work.
"""

from jaxplace.multilevel.coarsen import applies
from jaxplace.multilevel.memory import check_memory, estimated_bytes
from jaxplace.multilevel.search import MULTILEVEL_MIN_NODES, multilevel_search
from jaxplace.multilevel.slicing import slice_units

__all__ = ["MULTILEVEL_MIN_NODES", "applies", "check_memory", "estimated_bytes",
           "multilevel_search", "slice_units"]
