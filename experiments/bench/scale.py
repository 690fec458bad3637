"""`python -m experiments.bench.scale`: the multilevel search on graphs of 2,000 to 20,000 ops.

For every (family, n, k): a REGAL-like (`jaxplace.generators.regal`, seed fixed) or
GPT-like (`jaxplace.generators.gpt_like(layers, 1024, 16)`, 50 ops a layer) graph,
searched by method "multilevel" with `--time-limit` seconds in a fresh worker process
(`python -m experiments.bench.scale --worker ...`, so its peak resident memory is its
own), then the C++ BRKGA peer (`jaxplace.bench.cpp_peer`'s program, population 100)
given the same wall time in the same run: it runs with line-buffered output and is
stopped when the time is up; its cost is the best of its last finished generation
(none when not even its first population was decoded in time).

Columns: the DFS first solution's cost, the simple lower bound, the multilevel cost
and its ratios to both, the wall time, the worker's peak resident memory, the
coarsest level's flat-search evaluations per second and each level's refinement
evaluations per second (candidate moves scored plus DP slicings), and the peer.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time

HELP = "multilevel search on 2,000 to 20,000 ops against the C++ BRKGA peer"
SIZES = (2000, 5000, 20000)
KS = (8, 16, 32)
FAMILIES = ("regal", "gpt")
REGAL_SEED = 1


def add_arguments(p) -> None:
    p.add_argument("--sizes", default=",".join(map(str, SIZES)),
                   help="comma-separated op counts (default %(default)s)")
    p.add_argument("--k", default=",".join(map(str, KS)),
                   help="comma-separated block counts (default %(default)s)")
    p.add_argument("--families", default=",".join(FAMILIES),
                   help="regal and/or gpt (default %(default)s)")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds per search, and the peer's wall (default %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    p.add_argument("--no-peer", action="store_true", help="skip the C++ peer")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)


def make_problem(family: str, n: int, k: int):
    """The bench's problem for (family, n, k)."""
    import jaxplace as jp

    if family == "regal":
        from jaxplace.generators import generate

        return jp.Problem(generate("regal", seed=REGAL_SEED, n=n), k=k)
    if family == "gpt":
        from jaxplace.generators import gpt_like

        return jp.Problem(gpt_like(max(1, round((n - 13) / 50)), 1024, 16), k=k)
    from jaxplace.errors import JaxplaceError

    raise JaxplaceError(f"unknown family {family!r}; choose regal or gpt",
                        field="families")


def _worker(spec: str) -> None:
    import resource

    import jaxplace as jp

    case = json.loads(spec)
    p = make_problem(case["family"], case["n"], case["k"])
    t0 = time.perf_counter()
    r = jp.search(p, "multilevel", seed=case["seed"], time_limit=case["time_limit"],
                  progress=False)
    wall = time.perf_counter() - t0
    info = r.info
    levels = {}  # by level index, 0 the finest (sizes vary a little between cycles)
    for row in info["per_level"]:
        d = levels.setdefault(row["level"], [0, 0.0])
        d[0] += row["evaluations"]
        d[1] += row["seconds"]
    coarse = info.get("coarse")
    out = {"n": p.n, "cost": r.cost, "first": info["first_cost"],
           "lb": float(jp.simple_lower_bound(p)), "wall": wall,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           "cycles": info["cycles"], "levels": info["levels"],
           "level_rates": {str(s): e / max(sec, 1e-9) for s, (e, sec) in levels.items()},
           "coarse_rate": (coarse["evaluations"] / max(coarse["seconds"], 1e-9)
                           if coarse else None),
           "coarse_evals": coarse["evaluations"] if coarse else 0,
           "evaluations": r.evaluations}
    print("RESULT " + json.dumps(out), flush=True)


def _run_case(case: dict) -> dict:
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "experiments.bench.scale", "--worker",
                        json.dumps(case)], capture_output=True, text=True, env=env)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
    from jaxplace.errors import JaxplaceError

    raise JaxplaceError(f"worker failed (exit {r.returncode}): {tail}", field="scale")


def run_peer(problem, seconds: float, seed: int = 0) -> dict:
    """The C++ BRKGA (population 100) stopped after `seconds` of wall time:
    {cost, evaluations, seconds} of its last finished generation (cost None when no
    generation finished)."""
    import shutil

    from jaxplace.bench import build_cpp_peer as build
    from jaxplace.bench import write_cpp_graph as write_graph

    exe = build()
    with tempfile.TemporaryDirectory(prefix="jaxplace-scale-") as tmp:
        path = os.path.join(tmp, "graph.txt")
        write_graph(problem, path)
        argv = [str(exe), path, "--pop", "100", "--gens", "1000000000", "--seed",
                str(seed), "--trace"]
        if shutil.which("stdbuf"):
            argv = ["stdbuf", "-oL", *argv]
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
        last, buf, fd = None, b"", proc.stdout.fileno()
        try:
            while True:
                left = seconds - (time.perf_counter() - t0)
                if left <= 0:
                    break
                ready, _, _ = select.select([fd], [], [], min(left, 0.2))
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line.startswith(b"trace "):
                        ev, sec, best = line.split()[1:4]
                        if float(sec) <= seconds:
                            last = (int(ev), float(sec), float(best))
        finally:
            proc.kill()
            proc.wait()
    if last is None:
        return {"cost": None, "evaluations": 0, "seconds": seconds}
    return {"cost": last[2], "evaluations": last[0], "seconds": last[1]}


def _fmt(v, spec=".4g"):
    return "-" if v is None else format(v, spec)


def run(args) -> int:
    if args.worker is not None:
        _worker(args.worker)
        return 0
    sizes = [int(s) for s in str(args.sizes).split(",") if s]
    ks = [int(s) for s in str(args.k).split(",") if s]
    fams = [s.strip() for s in str(args.families).split(",") if s.strip()]
    from jaxplace.errors import JaxplaceError

    bad = [f for f in fams if f not in FAMILIES]
    if bad or not fams:
        raise JaxplaceError(f"unknown family {bad[0] if bad else ''!r}; choose from "
                            f"{', '.join(FAMILIES)}", field="families")
    if not sizes or min(sizes) < 2:
        raise JaxplaceError("give op counts of at least 2", field="sizes")
    if not ks or min(ks) < 1:
        raise JaxplaceError("give block counts of at least 1", field="k")
    head = ("family", "n", "k", "dfs", "lb", "multilevel", "/dfs", "/lb", "wall_s",
            "rss_MB", "levels", "coarse_ev/s", "refine_ev/s by level (L0 finest)", "peer",
            "peer_ev", "ml/peer")
    print(" | ".join(head))
    print("(levels: the first V-cycle's level sizes; coarse_ev/s 0: the coarse search "
          "was abandoned past its time share; peer '-': no generation finished)")
    for fam in fams:
        for n in sizes:
            for k in ks:
                case = {"family": fam, "n": n, "k": k, "seed": args.seed,
                        "time_limit": args.time_limit}
                res = _run_case(case)
                peer = {"cost": None, "evaluations": 0}
                if not args.no_peer:
                    peer = run_peer(make_problem(fam, n, k), res["wall"], args.seed)
                rates = " ".join(f"L{s}:{v:.0f}" for s, v in
                                 sorted(res["level_rates"].items(), key=lambda x: int(x[0])))
                ratio = None if peer["cost"] is None else res["cost"] / peer["cost"]
                row = (fam, str(res["n"]), str(k), _fmt(res["first"], ".6g"),
                       _fmt(res["lb"], ".6g"), _fmt(res["cost"], ".6g"),
                       _fmt(res["cost"] / res["first"], ".4f"),
                       _fmt(res["cost"] / res["lb"], ".4f"), _fmt(res["wall"], ".1f"),
                       _fmt(res["rss_mb"], ".0f"),
                       ">".join(map(str, res["levels"])), _fmt(res["coarse_rate"], ".0f"),
                       rates,
                       _fmt(peer["cost"], ".6g"), str(peer["evaluations"]),
                       _fmt(ratio, ".4f"))
                print(" | ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
