"""Throughput on identical accelerators: the objective (`objective.THROUGHPUT`), its
cost model (`cost`: `evaluate_partition`, `PartitionCost`), its NumPy float64 oracle
(`reference`: Kahn + the slicing DP), its stage table (`report`), and the search code
only it uses (`search`: its default search and `balanced_cut`; `bucket`; `polish`: the
MIP polish), kept next to it rather than in `jaxplace.search`.

This face imports nothing: its modules sit in different import layers (the cost model,
oracle and stage table low, since the decoder, bounds and exact methods evaluate
partitions with them; the search pieces below `jaxplace.search.many`, which reuses
them; the objective above everything it dispatches to), so the objective's names load
by string on first use.
"""

from __future__ import annotations

import importlib

_LAZY = {"THROUGHPUT": "objective", "Throughput": "objective",
         "EXACT_MAX_IDEALS": "objective"}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EXACT_MAX_IDEALS", "THROUGHPUT", "Throughput"]
