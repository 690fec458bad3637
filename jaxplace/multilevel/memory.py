"""Refusing a graph too large for the machine's memory, before any work."""

from __future__ import annotations

import os

from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

#: Bytes per op, per tensor use (consumer entry) and per DP table cell of the
#: multilevel path, and its fixed part (JAX and the coarse search), fitted to the
#: peak resident memory measured at 2,000 to 20,000 ops (a safe over-estimate).
BYTES_PER_OP = 12_000
BYTES_PER_USE = 2_000
BYTES_PER_CELL = 24
FIXED_BYTES = 1_500 * 2**20


def estimated_bytes(problem: Problem) -> int:
    """Peak memory the multilevel search needs for `problem` (an over-estimate)."""
    g = problem.graph
    uses = len(g.tensor_consumers) + g.num_edges
    cells = (problem.k + 1) * (g.num_nodes + 1)
    return int(FIXED_BYTES + BYTES_PER_OP * g.num_nodes + BYTES_PER_USE * uses
               + BYTES_PER_CELL * cells)


def available_bytes() -> int:
    """Memory the machine can still give (MemAvailable, else the physical total)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(problem: Problem, available: int | None = None) -> int:
    """Raise a one-line JaxplaceError when `problem` would need more memory than the
    machine has (`available` bytes, default: what it has now); else return the
    estimate in bytes."""
    need = estimated_bytes(problem)
    have = available_bytes() if available is None else int(available)
    if need > have:
        g = problem.graph
        raise JaxplaceError(
            f"{g.num_nodes} ops with {len(g.tensor_consumers)} tensor uses at k = "
            f"{problem.k} need about {need / 2**30:.1f} GiB of memory; the machine has "
            f"{have / 2**30:.1f} GiB available", field="graph")
    return need


__all__ = ["available_bytes", "check_memory", "estimated_bytes"]
