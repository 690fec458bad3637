"""The research benchmarks of experiments/bench/ (not in the wheel) for tests:
`lab_bench("workloads")` imports `experiments.bench.workloads` with the repository root
on sys.path; `run_lab_bench("policy", [...])` runs one as its command does
(`python -m experiments.bench.policy ...`) and returns the exit status."""

import importlib
import sys

from repo_paths import ROOT


def lab_bench(name: str):
    """The module `experiments.bench.<name>`."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"experiments.bench.{name}")


def run_lab_bench(name: str, argv: list[str]) -> int:
    """Exit status of `python -m experiments.bench.<name> *argv`, in this process."""
    command = lab_bench("command")
    return command.main(lab_bench(name), argv)
