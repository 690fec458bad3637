"""jaxplace: partition computation graphs into pipeline stages, fast and certified.

    import jaxplace as jp
    problem = jp.load_problem("model.json", k=8)
    result = jp.search(problem)
    cert = jp.certify(problem, result.partition)

The names below are the user API; everything else lives in the subpackages
(`jp.decoder`, `jp.search`, `jp.bounds`, `jp.reference`, `jp.generators`,
`jp.importers`, `jp.formats`, `jp.policy`). Heavy dependencies (JAX, evosax, HiGHS,
flax) load on first use, so `import jaxplace` is fast.

Subpackages imported by name, not reached as `jp.<name>`: `exact` (the DP over ideals,
BB&R), `multilevel` (search for graphs of thousands of ops), `pipeline` (runnable
pipelines, training schedules), `export` (stage plans in the frameworks' own forms),
`torch` (PyTorch models planned and run), `calibrate` (measured device profiles),
`bench` (`jaxplace bench`), `cli` (the `jaxplace` command). Top-level modules: `graph`,
`problem`, `partition` (`CompGraph`, `Problem`, `Partition`), `errors`
(`JaxplaceError`), `registry` (things chosen by name), `units` (placement units),
`orders` (zero-shot topological orders), `analysis` (graph statistics for `jaxplace
info`), `testing` (`check_objective`, the conformance check), `highs` (every MIP and
LP), `jsonio` (JSON read, atomic write), `cmdline` (what every command line shares),
`progress` (progress bars), `compile_cache` (XLA's persistent cache), `code_maps` (a
long process kept under the memory-mapping limit).
"""

from __future__ import annotations

import importlib
import os
import sys


def _quiet_startup_interrupt(signum, frame):  # pragma: no cover (timing-dependent)
    os.write(2, b"jaxplace: interrupted while starting up (loading its modules): no "
             b"result yet, nothing written\n")
    os._exit(130)


# The command line (`python -m jaxplace`, the `jaxplace` script) must exit 130 without
# a traceback on a Ctrl-C that arrives while Python is still importing; `cli.main`
# gives SIGINT back to Python's own handler as soon as the imports are done. Library
# imports (any other argv[0]) are left alone.
if os.path.basename(sys.argv[0] if sys.argv else "") in ("-m", "jaxplace"):
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _quiet_startup_interrupt)

from jaxplace.errors import JaxplaceError  # noqa: E402
from jaxplace.graph import CompGraph  # noqa: E402
from jaxplace.problem import Problem  # noqa: E402

__version__ = "0.1.0"

#: name -> module that defines it (imported on first access)
_LAZY = {
    "load_problem": "jaxplace.formats",
    "load_graph": "jaxplace.formats",
    "save_result": "jaxplace.formats",
    "certify": "jaxplace.bounds",
    "evaluate": "jaxplace.objectives.api",
    "decode": "jaxplace.objectives.api",
    "Evaluator": "jaxplace.decoder",
    "evaluate_partition": "jaxplace.objectives.throughput.cost",
    "simple_lower_bound": "jaxplace.objectives.api",
    "from_jax": "jaxplace.importers",
    "from_onnx": "jaxplace.importers",
    "load_cluster": "jaxplace.cluster",
    "search_many": "jaxplace.search.many",
    "plot": "jaxplace.view",
}
_SUBPACKAGES = ("bounds", "cluster", "decoder", "formats", "generators", "importers",
                "llm", "objectives",
                "partition", "policy", "relax", "search", "spatial", "view")
#: short names for an objective's modules that users reach as `jp.<name>`
_OBJECTIVE_MODULES = {"cost": "jaxplace.objectives.throughput.cost",
                      "reference": "jaxplace.objectives.throughput.reference",
                      "latency": "jaxplace.objectives.latency"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"jaxplace.{name}")
    elif name in _OBJECTIVE_MODULES:
        value = importlib.import_module(_OBJECTIVE_MODULES[name])
    else:
        raise AttributeError(f"module 'jaxplace' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBPACKAGES) | set(_OBJECTIVE_MODULES))


__all__ = [
    "CompGraph",
    "Evaluator",
    "JaxplaceError",
    "Problem",
    "certify",
    "decode",
    "evaluate",
    "evaluate_partition",
    "from_jax",
    "from_onnx",
    "load_cluster",
    "load_graph",
    "load_problem",
    "plot",
    "save_result",
    "search",
    "search_many",
    "simple_lower_bound",
]
