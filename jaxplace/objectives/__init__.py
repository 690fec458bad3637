"""Objectives as objects: the contract (`Objective`), the registry and the lookup, and
one package per objective (`throughput/`, `throughput_unequal/`, `latency/`,
`training/`).

    from jaxplace.objectives import objective_of
    obj = objective_of(problem)        # throughput, throughput-unequal or latency
    obj.evaluate_partition(problem, assignment).cost
    obj.lower_bound(problem)

See `base.Objective` for the contract and `registry` for adding one. `api` holds the
user API that dispatches through the objective (`jp.evaluate`, `jp.decode`,
`jp.simple_lower_bound`), `ladder` the certificate of objectives outside the throughput
ladder (a few named bounds against the partition's cost).

This face imports nothing: some modules of the objective packages sit below the
contract in the import layers (the throughput cost model, the latency model), and
importing them runs this file first; the names below load on first use.
"""

from __future__ import annotations

import importlib

_LAZY = {"ExactAnswer": "base", "Objective": "base", "OBJECTIVES": "registry",
         "objective_of": "registry",
         "objectives": "registry", "problem_objectives": "registry",
         "register": "registry", "unregister": "registry"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ExactAnswer", "OBJECTIVES", "Objective", "objective_of", "objectives",
           "problem_objectives", "register", "unregister"]
