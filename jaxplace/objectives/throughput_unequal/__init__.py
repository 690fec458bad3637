"""Pipeline throughput on a cluster of unequal devices (per-device op times and
memory, per-link bandwidth).

Stages go to distinct devices in an order searched beside the node priorities: a
candidate is (node priorities, device keys); Kahn gives the op order, the keys the
device sequence, and the slicing DP splits the order into at most k stages on a
prefix of that sequence. `model` holds the stage cost (per-device op times, transfers
over the directed links, memory), `reference` the float64 oracle (DP, decode,
`evaluate_stages`), `decoder` the batched JAX decoder, `bound` a valid lower bound,
`search` the default search, `baselines` the identical-device baselines, `brute` brute
force for tests, `objective` the `Objective` over them (for every cluster, uniform or
not). A `Problem(graph, cluster=unequal, objective="throughput")` uses it.
"""

import importlib

from jaxplace.objectives.throughput_unequal.reference import (
    StageCosts,
    decode,
    evaluate_stages,
    slice_on_devices,
)

#: name -> module that defines it, imported on first access (the decoder and the search
#: load JAX)
_LAZY = {
    "uniform_split": "jaxplace.objectives.throughput_unequal.baselines",
    "lower_bound": "jaxplace.objectives.throughput_unequal.bound",
    "speed_keys": "jaxplace.objectives.throughput_unequal.search",
    "hetero_graph": "jaxplace.objectives.throughput_unequal.decoder",
    "score_jit": "jaxplace.objectives.throughput_unequal.decoder",
}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(
            f"module 'jaxplace.objectives.throughput_unequal' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = ["StageCosts", "decode", "evaluate_stages", "slice_on_devices", *_LAZY]
