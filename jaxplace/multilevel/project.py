"""Moving partitions between levels, and orders consistent with a partition."""

from __future__ import annotations

import numpy as np

from jaxplace.multilevel.coarsen import Level
from jaxplace.objectives.throughput.cost import quotient_order
from jaxplace.problem import Problem


def to_nodes(level: Level, assignment: np.ndarray) -> np.ndarray:
    """The block of every original node, from a block per cluster of `level`."""
    return np.asarray(assignment, np.int64)[level.node_cluster]


def to_finer(finer: Level, assignment: np.ndarray) -> np.ndarray:
    """The block of every cluster of `finer`, from a block per cluster of the next
    coarser level (exact: every block keeps the same members)."""
    return np.asarray(assignment, np.int64)[finer.parent]


def pipeline_blocks(problem: Problem, assignment: np.ndarray) -> np.ndarray:
    """The assignment relabelled so that block indices follow the quotient's
    topological order (0 first); raises on a cyclic quotient."""
    a = np.asarray(assignment, np.int64)
    rank = np.empty(problem.num_blocks, np.int64)
    rank[quotient_order(problem, a)] = np.arange(problem.num_blocks)
    return rank[a]


def consistent_order(problem: Problem, assignment: np.ndarray, base: np.ndarray
                     ) -> np.ndarray:
    """A topological order of the level's nodes that keeps every block contiguous:
    blocks in pipeline order, members in the order of `base` (a topological order)."""
    a = pipeline_blocks(problem, assignment)
    pos = np.empty(problem.n, np.int64)
    pos[base] = np.arange(problem.n)
    return np.lexsort((pos, a)).astype(np.int64)


__all__ = ["consistent_order", "pipeline_blocks", "to_finer", "to_nodes"]
