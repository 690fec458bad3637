"""Benchmarks behind `jaxplace bench NAME`: the ones a user runs on their own machine,
one module each.

Each module `jaxplace.bench.<name>` (an entry of `BENCHES`, the registry of
benchmarks) exposes `HELP` (one line), `add_arguments(parser)`
and `run(args) -> int`. Benchmarks print figures, side by side with a yardstick where
there is one (the C++ BRKGA peer of `cpp_peer`, built from `cpp/brkga.cpp` on the
user's machine); they never assert wall-clock limits. The research benchmarks live
outside the package, in the repository's experiments/bench/ (`MOVED`). Modules the
benchmarks share: `runs` (markdown tables), `phases` (`bench search --phases`: the cold
path, phase by phase), `search_time` (`bench search --suite regal-time`: time to
solution), `bounds_onnx` (the ONNX graphs of `bench bounds --suite onnx`).
"""

from __future__ import annotations

import importlib

from jaxplace.registry import Registry

#: the benchmarks that ship, as `jaxplace bench --help` lists them (each module loads on
#: first use: most import JAX)
BENCHES = Registry("benchmark", {name: f"jaxplace.bench.{name}"
                                 for name in ("decode", "search", "bounds", "batch", "gpu")},
                   field="NAME")

#: benchmark name -> where it went: run from a checkout of the repository
MOVED = {name: f"experiments/bench/{name}.py" for name in (
    "workloads", "frameworks", "policy", "spatial", "latency", "relax", "hetero", "scale")}

#: the C++ peer's entry points, re-exported for scripts outside the package (loaded on
#: first use: the peer's module imports numpy and the problem)
_LAZY = {"build_cpp_peer": "build", "write_cpp_graph": "write_graph",
         "run_cpp_brkga": "run_brkga", "CppUnavailable": "CppUnavailable"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'jaxplace.bench' has no attribute {name!r}")
    value = getattr(importlib.import_module("jaxplace.bench.cpp_peer"), _LAZY[name])
    globals()[name] = value
    return value


__all__ = ["BENCHES", "MOVED", *_LAZY]
