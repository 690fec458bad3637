"""The C++ BRKGA bench peer (`jaxplace/bench/cpp/brkga.cpp`): build, write, run.

A single-core C++ BRKGA over the same decoder (Kahn with priorities + SliceGraph,
hyperedge tensors, overflow and capacity as `objectives.throughput.reference`), the yardstick of
`jaxplace bench search --suite regal-time`. It is built once with `g++ -O3` into a
cache folder (`JAXPLACE_CPP_DIR`, default ~/.cache/jaxplace/cpp), keyed by a hash of
the source, so a bench run pays the build only the first time.

    from jaxplace.bench.cpp_peer import build, run_brkga, evaluate
    exe = build()                        # raises CppUnavailable without g++
    out = run_brkga(problem, seed=0)     # PeerResult(cost, seconds, evaluations, ...)
    costs = evaluate(problem, X)         # (P,) float64 costs of priority rows X
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.problem import Problem

SOURCE = Path(__file__).resolve().parent / "cpp" / "brkga.cpp"
FLAGS = ("-O3", "-std=c++17", "-march=native")


class CppUnavailable(JaxplaceError):
    """No C++ compiler (or the build failed): the C++ peer cannot run."""


@dataclass
class PeerResult:
    """One C++ BRKGA run.

    Attributes:
        cost: best bottleneck cost found.
        seconds: wall time of the process (start to exit; the search loop itself is
            `loop_seconds`).
        evaluations: candidates decoded (elites are carried over, not re-decoded).
        loop_seconds: the search loop's own time.
        trace: (G, 3) float64 rows (evaluations, seconds, best cost) per generation.
        priorities: (n,) float32 best priority vector.
    """

    cost: float
    seconds: float
    evaluations: int
    loop_seconds: float
    trace: np.ndarray = field(repr=False)
    priorities: np.ndarray = field(repr=False)


def cache_dir() -> Path:
    path = os.environ.get("JAXPLACE_CPP_DIR")
    return Path(path) if path else Path.home() / ".cache" / "jaxplace" / "cpp"


def compiler() -> str | None:
    """The C++ compiler to use (CXX, else g++), or None when there is none."""
    return shutil.which(os.environ.get("CXX", "g++"))


def build(directory: str | os.PathLike | None = None) -> Path:
    """The compiled peer, building it on first use (g++ -O3, about 2 s).

    Raises:
        CppUnavailable: no compiler on PATH, or the build failed.
    """
    cxx = compiler()
    if cxx is None:
        raise CppUnavailable("the C++ peer needs g++ (or $CXX) on PATH; none found",
                             source="jaxplace.bench.cpp_peer")
    src = SOURCE.read_bytes()
    tag = hashlib.sha256(src + " ".join((cxx, *FLAGS)).encode()).hexdigest()[:16]
    folder = Path(directory) if directory is not None else cache_dir()
    exe = folder / f"brkga-{tag}"
    if exe.is_file():
        return exe
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".brkga-{tag}-{os.getpid()}"
    flags = list(FLAGS)
    r = subprocess.run([cxx, *flags, str(SOURCE), "-o", str(tmp)], capture_output=True,
                       text=True)
    if r.returncode != 0 and "-march=native" in flags:  # compilers without it
        flags.remove("-march=native")
        r = subprocess.run([cxx, *flags, str(SOURCE), "-o", str(tmp)],
                           capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise CppUnavailable(f"building the C++ peer failed: {tail}", source=str(SOURCE))
    os.replace(tmp, exe)
    return exe


def write_graph(problem: Problem, path: str | os.PathLike) -> None:
    """Write `problem` in the peer's text format (see brkga.cpp). Plain problems only:
    no placement units, CPU blocks or accelerator-unsupported ops."""
    g = problem.graph
    if (problem.cpus or not g.units.trivial or not bool(problem.supported.all())
            or not problem.objective_impl.supports("identical_devices")):
        raise JaxplaceError("the C++ peer handles plain throughput problems only (no CPU "
                            "blocks, colocation or unsupported ops)", field="problem")
    mem = -1.0 if problem.memory is None else float(problem.memory)
    cap = problem.capacity_limit
    lines = ["jaxplace-mtpp 1", f"{g.num_nodes} {g.num_tensors} {problem.k}",
             f"{float(problem.bandwidth)!r} {mem!r} {'inf' if np.isinf(cap) else repr(cap)}"]
    lines += [f"{float(w)!r} {float(p)!r}" for w, p in zip(g.work, g.size_param, strict=True)]
    for t in range(g.num_tensors):
        cons = g.consumers(t)
        lines.append(f"{int(g.tensor_producer[t])} {float(g.tensor_size[t])!r} {len(cons)} "
                     + " ".join(map(str, cons.tolist())))
    Path(path).write_text("\n".join(lines) + "\n")


def _run(argv: list[str]) -> str:
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        said = (r.stderr.strip().splitlines() or ["no message"])[-1]
        raise JaxplaceError(f"C++ peer failed (exit {r.returncode}): {said}",
                            source=argv[0])
    return r.stdout


def evaluate(problem: Problem, X, *, exe: Path | None = None) -> np.ndarray:
    """(P,) float64 costs of SliceGraph(Kahn(x)) for every float32 row x of X."""
    X = np.ascontiguousarray(np.asarray(X, np.float32).reshape(-1, problem.n))
    exe = exe or build()
    with tempfile.TemporaryDirectory(prefix="jaxplace-cpp-") as tmp:
        write_graph(problem, os.path.join(tmp, "graph.txt"))
        X.astype("<f4").tofile(os.path.join(tmp, "pop.bin"))
        out = _run([str(exe), os.path.join(tmp, "graph.txt"), "--eval",
                    os.path.join(tmp, "pop.bin")])
    return np.array([float(v) for v in out.split()], np.float64)


def run_brkga(problem: Problem, *, seed: int = 0, population: int = 100,
              generations: int = 100, exe: Path | None = None) -> PeerResult:
    """The C++ BRKGA (population x generations; 100 x 100 = brkga-10000) on `problem`.

    The graph file is written before the clock starts; `seconds` is the process."""
    exe = exe or build()
    with tempfile.TemporaryDirectory(prefix="jaxplace-cpp-") as tmp:
        path = os.path.join(tmp, "graph.txt")
        write_graph(problem, path)
        t0 = time.perf_counter()
        out = _run([str(exe), path, "--pop", str(population), "--gens", str(generations),
                    "--seed", str(seed), "--trace"])
        seconds = time.perf_counter() - t0
    trace, fields = [], {}
    for line in out.splitlines():
        head, _, rest = line.partition(" ")
        if head == "trace":
            trace.append([float(v) for v in rest.split()])
        else:
            fields[head] = rest
    x = np.array([float(v) for v in fields["x"].split()], np.float32)
    return PeerResult(float(fields["best"]), seconds, int(fields["evaluations"]),
                      float(fields["seconds"]), np.asarray(trace, np.float64).reshape(-1, 3),
                      x)


__all__ = ["CppUnavailable", "PeerResult", "build", "evaluate", "run_brkga", "write_graph"]
