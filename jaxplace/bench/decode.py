"""`jaxplace bench decode`: population decoding throughput, against the C++ yardstick.

Builds the yardstick's seeded random DAG and float32 population (running
the C++ yardstick's yardstick.py into a temporary folder when --yardstick is given, else
generating the same DAG in-process), scores it with `jaxplace.decoder.evaluate`, and
prints candidates per second, compile time, peak memory and, with the yardstick, the
speed ratio and the maximum relative cost difference.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.graph import CompGraph
from jaxplace.problem import Problem

HELP = "decoder throughput (candidates/s), compile time, memory; vs the C++ yardstick"


def add_arguments(p) -> None:
    p.add_argument("--n", type=int, default=200, help="nodes of the random DAG")
    p.add_argument("--k", type=int, default=16, help="blocks")
    p.add_argument("--pop", type=int, default=2000, help="population size")
    p.add_argument("--p", type=float, default=0.03, help="edge probability")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=3, help="timed repetitions (best kept)")
    p.add_argument("--yardstick", default=None,
                   help="folder holding yardstick.py")
    p.add_argument("--precision", choices=("float32", "float64"), default="float32")
    p.add_argument("--impl", choices=("lanes", "simple", "fused", "sparse"), default=None,
                   help="decoder implementation (default: the library default; fused and "
                   "sparse run in Pallas's interpret mode off GPUs: small --pop only)")
    p.add_argument("--work", action="store_true",
                   help="also print the element operations per candidate of the fused "
                   "and sparse kernels, counted from their loop structure")
    p.add_argument("--chunk-size", type=int, default=None)


def random_dag(n: int, p: float, seed: int):
    """The yardstick's random DAG (same recipe, same seed -> same graph)."""
    rng = random.Random(seed)
    nodes = [dict(id=v, work=rng.uniform(0.1, 10.0), size_param=0.0,
                  size_out=rng.uniform(0.1, 5.0)) for v in range(n)]
    order = list(range(n))
    rng.shuffle(order)
    edges = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n)
             if rng.random() < p]
    return nodes, edges


def kernel_work(problem) -> dict:
    """Element operations per candidate of the fused and sparse kernels on `problem`'s
    power-of-two shape (`sparse_fused.work_per_candidate`, its mean successors and
    member tensors per unit)."""
    from jaxplace.decoder.fused import fused_spec
    from jaxplace.decoder.layout import graph_structure, problem_spec
    from jaxplace.decoder.sparse_fused import work_per_candidate

    st = graph_structure(problem.graph)
    spec = fused_spec(problem_spec(problem, st))
    U = st["U"]
    return work_per_candidate(spec, U, succ=len(st["succ_idx"]) / U,
                              slots=len(st["slot_idx"]) / U)


def work_line(problem) -> str:
    w = kernel_work(problem)
    return (f"element ops per candidate: fused {w['fused']:,.0f}, sparse {w['sparse']:,.0f} "
            f"({w['fused'] / w['sparse']:.1f}x fewer), sparse indexed "
            f"{w['sparse_indexed']:,.0f} ({w['fused'] / w['sparse_indexed']:.1f}x fewer)")


def _graph_from_nodes(nodes, edges):
    import networkx as nx

    G = nx.DiGraph()
    for d in nodes:
        G.add_node(d["id"], **{k: v for k, v in d.items() if k != "id"})
    G.add_edges_from(edges)
    return CompGraph.from_networkx(G)


def _run_yardstick(a, out: str):
    """Run yardstick.py; returns (graph, pop, costs, list of its candidates/s)."""
    import networkx as nx

    script = os.path.join(a.yardstick, "yardstick.py")
    if not os.path.isfile(script):
        raise JaxplaceError("no yardstick.py in this folder", source=a.yardstick,
                            field="--yardstick")
    r = _tool([sys.executable, script, "--n", str(a.n), "--p", str(a.p), "--k", str(a.k),
               "--pop", str(a.pop), "--seed", str(a.seed), "--out", out], script)
    rates = [_rate(r.stdout + r.stderr, script)]
    for _ in range(max(a.repeat - 1, 0)):  # re-time the compiled refslice
        refslice = os.path.join(out, "refslice")
        rr = _tool([refslice, os.path.join(out, "graph.txt"), os.path.join(out, "pop.bin"),
                    str(a.k)], refslice)
        rates.append(_rate(rr.stderr, refslice))
    with open(os.path.join(out, "graph.json")) as f:
        G = nx.node_link_graph(json.load(f), edges="edges")
    graph = CompGraph.from_networkx(G)
    return graph, np.load(os.path.join(out, "pop.npy")), np.load(
        os.path.join(out, "costs.npy")), rates


def _tool(argv: list[str], name: str) -> subprocess.CompletedProcess:
    """Run a yardstick program; when it fails, a one-line JaxplaceError quoting the
    last line of its own error output instead of a traceback."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True)
    except OSError as exc:
        raise JaxplaceError(f"cannot run: {exc.strerror}", source=name) from None
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr or r.stdout).splitlines() if ln.strip()]
        said = lines[-1] if lines else "no error message"
        raise JaxplaceError(f"yardstick failed (exit {r.returncode}): {said}", source=name)
    return r


def _rate(text: str, name: str) -> float:
    m = re.search(r"([0-9.]+) per second", text)
    if not m:
        tail = text.strip().splitlines()[-1:] or ["no output"]
        raise JaxplaceError(f"cannot read the yardstick's rate from its output: {tail[0]}",
                            source=name)
    return float(m.group(1))


def _device_memory() -> str:
    import jax

    stats = jax.devices()[0].memory_stats()
    if not stats:
        return "not reported by this backend"
    peak = stats.get("peak_bytes_in_use")
    return f"{peak / 2**20:.1f} MiB peak" if peak is not None else str(stats)


def run(a) -> int:
    import jax

    from jaxplace.decoder import Evaluator

    ys_rates, ys_costs = None, None
    with tempfile.TemporaryDirectory() as tmp:
        if a.yardstick:
            graph, pop, ys_costs, ys_rates = _run_yardstick(a, tmp)
        else:
            graph = _graph_from_nodes(*random_dag(a.n, a.p, a.seed))
            pop = np.random.default_rng(a.seed).random((a.pop, a.n), dtype=np.float32)
    problem = Problem(graph, a.k)
    kw = dict(precision=a.precision, chunk_size=a.chunk_size)
    if a.impl:
        kw["impl"] = a.impl
    # an adaptive window: from the second call on, blocks are limited to the length
    # that the first call's costs allow (exact; see jaxplace.decoder.window)
    evaluate_fn = Evaluator(problem, window="auto", **kw)
    print(f"graph: n={graph.num_nodes} m={graph.num_edges} k={a.k} pop={a.pop} "
          f"precision={a.precision} devices={len(jax.devices())} "
          f"({jax.devices()[0].platform}) impl={evaluate_fn.impl}")
    if a.work:
        print(work_line(problem))
    t0 = time.perf_counter()
    costs = evaluate_fn(pop)
    first = time.perf_counter() - t0
    # the second call picks its block window from the first call's costs: compile
    # that one too before timing
    t0 = time.perf_counter()
    costs = evaluate_fn(pop)
    first += time.perf_counter() - t0
    if a.impl in (None, "lanes"):
        from jaxplace.decoder import block_bound, block_bounds

        spec = evaluate_fn.spec
        L = evaluate_fn.window.choose(block_bounds(problem), spec)
        print(f"window: {'full' if L is None else L} of {spec.N} units "
              f"(bound {block_bound(problem, L):.4g})")
    times = []
    for _ in range(max(a.repeat, 1)):
        t0 = time.perf_counter()
        costs = evaluate_fn(pop)
        times.append(time.perf_counter() - t0)
    best = min(times)
    rate = a.pop / best
    print(f"jaxplace: {rate:.1f} candidates/s (best of {len(times)}: {best:.4f} s; "
          f"all: {', '.join(f'{t:.3f}' for t in times)})")
    print(f"compile time: {max(first - 2 * best, 0.0):.2f} s (first two calls "
          f"{first:.2f} s)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak host RSS: {rss:.1f} MiB; device memory: {_device_memory()}")
    if ys_rates is not None:
        ys = max(ys_rates)
        print(f"yardstick (C++, 1 core): {ys:.1f} candidates/s (best of {len(ys_rates)}: "
              f"{', '.join(f'{r:.0f}' for r in ys_rates)})")
        print(f"speed ratio jaxplace/yardstick: {rate / ys:.2f}x")
        fin = np.isfinite(ys_costs)
        rel = np.abs(costs[fin] - ys_costs[fin]) / np.maximum(np.abs(ys_costs[fin]), 1e-300)
        same_inf = np.array_equal(np.isinf(costs), np.isinf(ys_costs))
        print(f"max relative cost difference: {rel.max(initial=0.0):.3g} "
              f"(infinities agree: {same_inf})")
    return 0
