"""`jaxplace warmup`: precompile the common search programs into the persistent cache.

A search compiles one program per padded class of graphs (`search_spec`: node count
in 2 sizes per doubling, degree width, k rounded up to a power of two) and block
window (a power of two derived from the graph's first solution): seconds of XLA
compile each on a CPU. Warmup walks the node-count classes up to `--max-nodes` and
every k of `--ks`, draws `--samples` REGAL-like graphs per class and k, works out the
(class, window) each would compile for (no compile needed), and runs the methods'
searches once, cut short, on one graph per distinct program, so that XLA writes them
into the persistent compilation cache (`JAXPLACE_CACHE_DIR`, default
~/.cache/jaxplace/xla). Every later process, CLI or `import jaxplace`, then reads
them from disk. A second warmup finds them there (cache hits, fast).

JAX's cache keys hash XLA_FLAGS, and the CLI sets a host device count there that a
plain `python` process does not: `--for library` (default) compiles in a child process
with the library's flags, `--for cli` in this one (for `jaxplace partition`), `--for
both` does both.

The programs cached are the search's own (each embeds the batched decoder): the
default search (on a CPU search_many's one-problem bucket program, keyed by its own
class and window; elsewhere the BRKGA and local-search chunks) and brkga-10000 (the
BRKGA chunk). Graphs other than REGAL-like ones may pick other degree widths or windows.
"""

from __future__ import annotations

import time

import jaxplace as jp
from jaxplace.compile_cache import (
    SEARCH_PROGRAMS,
    cache_path,
    count_compiles,
    enable_compile_cache,
    plain_python_env,
)
from jaxplace.errors import JaxplaceError

HELP = "precompile the common search programs into the persistent compilation cache"


def add_arguments(p) -> None:
    p.add_argument("--max-nodes", type=int, default=256,
                   help="largest graph size to prepare for (default 256)")
    p.add_argument("--min-nodes", type=int, default=50,
                   help="smallest graph size to prepare for (default 50)")
    p.add_argument("--ks", default="4,8,16", help="comma-separated k values")
    p.add_argument("--methods", default="default,brkga-10000",
                   help="comma-separated method names (jaxplace.search.named: a search "
                   "method, brkga-PxG, random-T or brkga-10000)")
    p.add_argument("--samples", type=int, default=3,
                   help="REGAL-like graphs drawn per size class and k to find the "
                   "programs they use (more: more windows covered)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample graphs")
    p.add_argument("--many", type=int, default=0, metavar="COUNT",
                   help="also the search_many programs of a batch of COUNT REGAL-like "
                   "graphs (the regal-time suite's: regal_set(COUNT, --seed), k cycling "
                   "through --ks), e.g. 30")
    p.add_argument("--max-programs", type=int, default=8,
                   help="search_many: at most this many buckets (default 8)")
    p.add_argument("--dry-run", action="store_true",
                   help="list the programs without compiling")
    p.add_argument("--for", dest="target", choices=("library", "cli", "both"),
                   default="library", help="whose XLA flags to compile under: a plain "
                   "Python process using jaxplace (default), the jaxplace CLI, or both")


def classes(min_nodes: int, max_nodes: int) -> list[tuple[int, int, int]]:
    """(lo, hi, N): node counts lo..hi share the search's padded unit count N."""
    from jaxplace.decoder.layout import coarse
    from jaxplace.search.request import SPEC_STEPS

    steps = SPEC_STEPS or 8
    out, lo = [], max(min_nodes, 2)
    while lo <= max_nodes:
        N = coarse(lo, steps)
        hi = min(N, max_nodes)
        out.append((lo, hi, N))
        lo = hi + 1
    return out


def program_key(problem):
    """(padded Spec, block window): what the search's compiled programs depend on."""
    from jaxplace.search.request import SearchRequest

    req = SearchRequest(problem, 0, 1)
    return req.spec, req.window


def default_program_key(problem):
    """What the default search's program depends on on a CPU (`jaxplace.objectives.
    throughput.bucket.program_key`); elsewhere `program_key`."""
    import jax

    if jax.default_backend() != "cpu":
        return program_key(problem)
    from jaxplace.objectives.throughput.bucket import program_key as bucket_key

    return bucket_key(problem)


def plan(args) -> list[tuple[int, int, object, object]]:
    """[(N, k, key, problem)] one problem per distinct program key."""
    import numpy as np

    from jaxplace.generators.regal import regal

    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    rng = np.random.default_rng(args.seed)
    jobs, seen = [], set()
    for lo, hi, N in classes(args.min_nodes, args.max_nodes):
        for k in ks:
            for _ in range(max(args.samples, 1)):
                g = regal(int(rng.integers(2**31)), n=int(rng.integers(lo, hi + 1)))
                p = jp.Problem(g, k)
                key = program_key(p)
                # the default search on a CPU compiles search_many's one-problem
                # bucket program, keyed by its own (spec, window)
                distinct = (key, default_program_key(p) if "default" in methods else None)
                if distinct not in seen:
                    seen.add(distinct)
                    jobs.append((N, k, key, p))
    return jobs


def _warm(problem, method: str) -> None:
    """One search of `method` that compiles its programs and stops soon after."""
    import threading

    from jaxplace.search import search_named  # the search package loads JAX
    from jaxplace.search.deadline import THREAD_NAME

    if method == "default":  # both phases must run: stop each at its first stall
        from jaxplace.search import search

        search(problem, "default", seed=0, progress=False, brkga_patience=1, patience=1)
    else:  # the first chunk runs one step, then the time limit stops it
        search_named(problem, method, 0, time_limit=1e-9)
        # past its time limit the search answers while its compile goes on in a
        # thread (search.deadline): warming up means waiting for that compile
        for thread in threading.enumerate():
            if thread.name == THREAD_NAME:
                thread.join()


def run(args) -> int:
    import subprocess
    import sys

    if cache_path() is None and not args.dry_run:
        raise JaxplaceError("the compilation cache is off (JAXPLACE_CACHE_DIR is empty): "
                            "nothing to warm", field="JAXPLACE_CACHE_DIR")
    code = 0
    if args.target in ("library", "both") and not args.dry_run:
        print("for library processes (plain python):", flush=True)
        argv = [sys.executable, "-m", "jaxplace.cli.cmd_warmup", *_argv(args)]
        code = subprocess.run(argv, env=plain_python_env()).returncode
    if args.target in ("cli", "both") or args.dry_run:
        if args.target != "library":
            print("for the jaxplace CLI:", flush=True)
        code = code or warm(args)
    return code


def _argv(args) -> list[str]:
    out = ["--max-nodes", str(args.max_nodes), "--min-nodes", str(args.min_nodes), "--ks",
           args.ks, "--methods", args.methods, "--samples", str(args.samples), "--seed",
           str(args.seed), "--many", str(args.many), "--max-programs",
           str(args.max_programs)]
    return out


def warm(args) -> int:
    """Compile the planned programs in this process (see the module doc)."""
    path = enable_compile_cache()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    t_all = time.perf_counter()
    jobs = plan(args)
    print(f"cache: {path}; {len(jobs)} programs' worth of graphs "
          f"(planned in {time.perf_counter() - t_all:.1f} s)", flush=True)
    compiled = hits = 0
    for N, k, (spec, window), p in jobs:
        head = (f"nodes <= {N:4d} (n={p.n:3d}) k={k:3d} window={window or 'full'} "
                f"deg=({spec.D},{spec.S})")
        if args.dry_run:
            print(head, flush=True)
            continue
        t0 = time.perf_counter()
        with count_compiles() as counts:
            for m in methods:
                _warm(p, m)
        c, h = counts.compiled(SEARCH_PROGRAMS), sum(
            counts.cache_hits[x] for x in SEARCH_PROGRAMS)
        compiled, hits = compiled + c, hits + h
        print(f"{head}: {time.perf_counter() - t0:6.1f} s, compiled {c}, cache hits {h}",
              flush=True)
    if args.many > 0:
        c, h = warm_many(args)
        compiled, hits = compiled + c, hits + h
    print(f"warmup done in {time.perf_counter() - t_all:.1f} s: {compiled} programs "
          f"compiled, {hits} read from the cache ({path})")
    return 0


def warm_many(args) -> tuple[int, int]:
    """Compile (or find cached) search_many's programs for the batch of `--many`
    REGAL-like graphs: (compiled, cache hits). A batch of other graphs may merge into
    other padded shapes (`jaxplace.search.many.buckets`)."""
    from jaxplace.generators import regal_suite
    from jaxplace.search.many import bucket_summary, search_many

    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    probs = [jp.Problem(g, k) for _, g, k in regal_suite(args.many, ks, args.seed)]
    buckets = bucket_summary(probs, args.max_programs)
    for b in buckets:
        print(f"search_many bucket N={b.spec.N} K={b.spec.K} window={b.window or 'full'} "
              f"({len(b.members)} graphs)", flush=True)
    if args.dry_run:
        return 0, 0
    t0 = time.perf_counter()
    with count_compiles() as counts:  # two steps per problem compile every bucket
        search_many(probs, budget=200, polish=False, max_programs=args.max_programs)
    names = ("_many_chunk",)
    c, h = counts.compiled(names), sum(counts.cache_hits[x] for x in names)
    print(f"search_many ({args.many} graphs, {len(buckets)} buckets): "
          f"{time.perf_counter() - t0:6.1f} s, compiled {c}, cache hits {h}", flush=True)
    return c, h


if __name__ == "__main__":  # the child of `--for library`
    import argparse
    import sys

    _p = argparse.ArgumentParser(prog="python -m jaxplace.cli.cmd_warmup")
    add_arguments(_p)
    sys.exit(warm(_p.parse_args()))
