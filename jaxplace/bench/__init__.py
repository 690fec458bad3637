"""Benchmarks behind `jaxplace bench NAME`: one module per benchmark.

Each module `jaxplace.bench.<name>` exposes `HELP` (one line), `add_arguments(parser)`
and `run(args) -> int`. Benchmarks print figures, side by side with a yardstick where
there is one; they never assert wall-clock limits.
"""

BENCHES = ("decode", "search", "bounds", "workloads", "frameworks", "policy", "spatial",
           "latency", "relax", "hetero", "scale", "batch", "gpu")
