"""`python -m experiments.bench.latency`: one inference's makespan on MOIRAI's two testbeds.

For GPT- and Swin-like op graphs (`jaxplace.generators.latency_models`, 1,000-2,000 ops) on the
clusters `moirai_inter` and `moirai_intra` (MOIRAI, Zhang et al. 2023, Table III),
prints the makespan of the fastest single device, the EFT greedy (HEFT upward ranks,
our m-SCT stand-in), the best contiguous pipeline and the default search (with
`--time-limit` seconds), the lower bound max(critical path, work / devices), and the
search's speedup over each baseline; then the batched scheduler's throughput
(candidates/s at n ~ 1,000 ops, 4 devices, float32, compile excluded).

MOIRAI's reported speedups of its MILP (Sec. IV-B, original graphs): up to 1.77x /
1.7x over m-SCT, 1.33x / 1.35x over GETF, 2.98x / 4.12x over Placeto (inter / intra).
"""

from __future__ import annotations

import os
import time

import numpy as np

HELP = "latency (makespan) of one inference on MOIRAI's testbeds; scheduler throughput"

MOIRAI = {"m-SCT": (1.77, 1.7), "GETF": (1.33, 1.35), "Placeto": (2.98, 4.12)}


def add_arguments(p) -> None:
    p.add_argument("--models", default="gpt3-330m,swin-1.8b,gpt3-13b",
                   help="comma-separated names of jaxplace.generators.latency_models.MODELS")
    p.add_argument("--sizes", default="",
                   help="comma-separated op counts: GPT-like graphs of about that many "
                        "ops (gpt_like(layers, 1024, 16), ~50 ops a layer) added to "
                        "--models, e.g. --sizes 5000,20000")
    p.add_argument("--clusters", default="moirai_inter,moirai_intra")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds for the default search per instance")
    p.add_argument("--budget", type=int, default=None, help="search evaluations")
    p.add_argument("--pop", type=int, default=256,
                   help="candidates per call in the throughput measurement")
    p.add_argument("--repeat", type=int, default=3, help="timed calls (throughput)")
    p.add_argument("--no-search", action="store_true", help="baselines only")
    p.add_argument("--throughput-only", action="store_true",
                   help="only the scheduler throughput")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--small", action="store_true",
                   help="instead: search against MOIRAI's MILP optimum on small random "
                        "DAGs (generators.latency_small) on both testbeds and random clusters")
    p.add_argument("--small-sizes", default="8,12,16,20",
                   help="op counts of the --small graphs")
    p.add_argument("--small-seeds", default="0,1", help="graph seeds of --small")
    p.add_argument("--refine-seconds", type=float, default=5.0,
                   help="--small: seconds of the search's final device/order local "
                        "search (latency.refine; 0: off, the search before it)")
    p.add_argument("--milp-limit", type=float, default=60.0,
                   help="seconds for solve_moirai per --small instance (threads=1)")


def _ms(x: float) -> str:
    return f"{x * 1e3:.4g}" if np.isfinite(x) else "inf (no fit)"


def _speed(base: float, ours: float) -> str:
    if not np.isfinite(ours):
        return "-"
    return f"{base / ours:.3f}x" if np.isfinite(base) else "(baseline infeasible)"


def sized_models(sizes) -> dict:
    """{name: builder} of GPT-like graphs (hidden 1024, 16 heads) with the layer count
    that gives about each requested number of ops."""
    from jaxplace.generators import gpt_like

    if not sizes:
        return {}
    one, two = gpt_like(1, 1024, 16).num_nodes, gpt_like(2, 1024, 16).num_nodes
    per, base = two - one, one - (two - one)
    out = {}
    for n in sizes:
        layers = max(1, round((n - base) / per))
        out[f"gpt-like-{layers}L"] = (lambda L=layers: gpt_like(L, 1024, 16))
    return out


def run_instances(args) -> list[list[str]]:
    import jaxplace as jp
    from jaxplace.cluster import load_cluster
    from jaxplace.generators import LATENCY_MODELS as MODELS
    from jaxplace.objectives.latency import BASELINES, lower_bound, validate_schedule

    rows = []
    models = {m.strip(): MODELS[m.strip()] for m in args.models.split(",") if m.strip()}
    models.update(sized_models(_ints(args.sizes)))
    for name, make in models.items():
        g = make()
        for cname in [c.strip() for c in args.clusters.split(",") if c.strip()]:
            pr = jp.Problem(g, cluster=load_cluster(cname), objective="latency")
            inst = pr.instance
            spans = {}
            for b, fn in BASELINES.items():
                s = fn(inst)
                if np.isfinite(s.makespan):
                    validate_schedule(inst, s)
                spans[b] = s.makespan
            ours, secs, evals = float("nan"), 0.0, 0
            if not args.no_search:
                r = jp.search(pr, time_limit=args.time_limit, budget=args.budget,
                              seed=args.seed, progress=False)
                validate_schedule(inst, r.schedule)
                ours, secs, evals = r.cost, r.wall_time, r.evaluations
            lb = lower_bound(inst)
            row = [name, str(g.num_nodes), cname, _ms(lb), _ms(spans["single"]),
                   _ms(spans["eft"]), _ms(spans["pipeline"]), _ms(ours),
                   _speed(spans["single"], ours), _speed(spans["eft"], ours),
                   _speed(spans["pipeline"], ours), f"{secs:.0f}", str(evals)]
            print(" | ".join(row), flush=True)
            rows.append(row)
    return rows


def throughput(args) -> tuple[int, float, float, float]:
    """(n, candidates per wall second, per CPU second, compile seconds) of the float32
    scheduler at n ~ 1,000, d = 4. The CPU-second rate (process time, all threads)
    is the figure to compare on a shared machine, where the wall rate follows the
    load of other processes."""
    import jax.numpy as jnp

    from jaxplace.cluster import load_cluster
    from jaxplace.generators import gpt_like
    from jaxplace.objectives.latency import instance_from, latency_graph, score_jit

    g = gpt_like(20, 1024, 16)
    inst = instance_from(g, load_cluster("moirai_inter"))
    spec, dg = latency_graph(inst)
    X = jnp.asarray(np.random.default_rng(args.seed).random((args.pop, spec.N)), jnp.float32)
    t0 = time.perf_counter()
    score_jit(spec, dg, X).block_until_ready()
    compile_s = time.perf_counter() - t0
    best, cpu = np.inf, np.inf
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        score_jit(spec, dg, X).block_until_ready()
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return g.num_nodes, args.pop / best, args.pop / cpu, compile_s


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(",") if t.strip())


def run_small(args) -> list[list[str]]:
    """Rows of search / MILP optimum on `jaxplace.generators.latency_small.small_problems`; the
    ratio is taken only where the MILP proved optimality."""
    import jaxplace as jp
    from jaxplace.generators import small_problems
    from jaxplace.objectives.latency import eft_greedy, solve_moirai, validate_schedule

    rows, ratios = [], []
    for label, pr in small_problems(_ints(args.small_sizes), _ints(args.small_seeds)):
        inst = pr.instance
        m = solve_moirai(inst, time_limit=args.milp_limit, threads=1)
        r = jp.search(pr, time_limit=args.time_limit, budget=args.budget, seed=args.seed,
                      progress=False, refine_seconds=args.refine_seconds)
        validate_schedule(inst, r.schedule)
        exact = m.status == "Optimal"
        ratio = r.cost / m.makespan
        before = r.info.get("unrefined_cost", r.cost) / m.makespan
        if exact:
            ratios.append((before, ratio))
        devs = len(set(m.schedule.device.tolist())) if m.schedule is not None else 0
        row = [label, str(inst.n), _ms(eft_greedy(inst).makespan), _ms(m.makespan),
               _ms(m.bound), m.status, f"{m.time:.1f}", str(devs), _ms(r.cost),
               f"{before:.4f}" if exact else f"({before:.4f})",
               f"{ratio:.4f}" if exact else f"({ratio:.4f})",
               "refine" if r.info.get("refined") else r.info.get("baseline", "search"),
               f"{r.wall_time:.1f}"]
        print(" | ".join(row), flush=True)
        rows.append(row)
    for j, what in enumerate(("without refine", "default search")):
        if not ratios:
            break
        a = np.asarray(ratios)[:, j]
        print(f"\n{what}: search / optimum on {len(a)} instances solved exactly: geometric "
              f"mean {np.exp(np.log(a).mean()):.4f}, max {a.max():.4f}, within 1%: "
              f"{int((a <= 1.01).sum())}/{len(a)}, equal (1e-6): {int((a <= 1 + 1e-6).sum())}")
    return rows


def run(args) -> int:
    from experiments.bench.tables import markdown_table as _table

    if args.small:
        head = ["instance", "ops", "EFT ms", "MILP ms", "MILP bound ms", "status",
                "MILP s", "devices used", "search ms", "without refine / opt", "search / opt",
                "answer from",
                "search s"]
        print(_table(head, run_small(args)))
        return 0
    head = ["model", "ops", "cluster", "lower bound ms", "single ms", "EFT ms",
            "pipeline ms", "search ms", "vs single", "vs EFT", "vs pipeline", "search s",
            "evaluations"]
    if not args.throughput_only:
        rows = run_instances(args)
        print(_table(head, rows))
    print("\nMOIRAI (MILP) reported, original graphs, inter / intra: "
          + "; ".join(f"{k} {a}x / {b}x" for k, (a, b) in MOIRAI.items()))
    n, rate, cpu_rate, comp = throughput(args)
    print(f"\nscheduler throughput: n={n} ops, 4 devices, float32, {args.pop} candidates "
          f"per call: {rate:.0f} candidates/s wall, {cpu_rate:.0f} per CPU second (best of "
          f"{args.repeat}; compile {comp:.1f} s; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
