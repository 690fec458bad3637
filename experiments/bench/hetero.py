"""`python -m experiments.bench.hetero`: pipeline throughput on MOIRAI's unequal testbeds.

For GPT- and Swin-like op graphs (`jaxplace.generators.latency_models`, ~1,100-1,200 ops) on
`moirai_inter` and `moirai_intra` (MOIRAI, Zhang et al. 2023, Table III), k = 4
stages, prints the bottleneck (time per sample) of:

- the valid lower bound of `objectives.throughput_unequal.bound` (compute only, fractional);
- "uniform naive": the identical-device model's search with every device taken as
  the slowest (its times, slowest link, smallest memory), stage s on device s;
- "uniform best order": that split on the best ordered choice of devices;
- "DFS fastest": the DFS order sliced on the devices fastest first;
- the default search (node priorities and device order together);

then the batched decoder's throughput (candidates/s, float32, compile excluded) at
n ~ 200 and ~ 1,000 ops with 4 devices.
"""

from __future__ import annotations

import os
import time

import numpy as np

HELP = "throughput (bottleneck) on MOIRAI's unequal testbeds; hetero decoder speed"


def add_arguments(p) -> None:
    p.add_argument("--models", default="gpt3-330m,swin-1.8b",
                   help="comma-separated names of jaxplace.generators.latency_models.MODELS")
    p.add_argument("--clusters", default="moirai_inter,moirai_intra")
    p.add_argument("-k", type=int, default=None, help="stages (default: every device)")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds for the default search per instance")
    p.add_argument("--uniform-time", type=float, default=30.0,
                   help="seconds for the identical-device baseline's search")
    p.add_argument("--budget", type=int, default=None, help="search evaluations")
    p.add_argument("--pop", type=int, default=128,
                   help="candidates per call in the throughput measurement")
    p.add_argument("--repeat", type=int, default=3, help="timed calls (throughput)")
    p.add_argument("--throughput-only", action="store_true")
    p.add_argument("--seed", type=int, default=0)


def _ms(x: float) -> str:
    return f"{x * 1e3:.4g}" if np.isfinite(x) else "inf (no fit)"


def _x(a: float, b: float) -> str:
    return f"{a / b:.3f}x" if np.isfinite(a) and np.isfinite(b) and b > 0 else "-"


def run_instances(args) -> list[list[str]]:
    import jaxplace as jp
    from jaxplace.generators import LATENCY_MODELS as MODELS
    from jaxplace.objectives.throughput_unequal import (
        decode,
        evaluate_stages,
        lower_bound,
        speed_keys,
        uniform_split,
    )
    from jaxplace.orders import dfs_order, order_to_priorities

    rows = []
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        g = MODELS[name]()
        for cname in [c.strip() for c in args.clusters.split(",") if c.strip()]:
            pr = jp.Problem(g, k=args.k, cluster=jp.load_cluster(cname),
                            objective="throughput")
            inst = pr.pipeline_instance
            lb = lower_bound(inst, pr.k)
            uni = uniform_split(pr, time_limit=args.uniform_time, seed=args.seed)
            x = np.concatenate([order_to_priorities(dfs_order(g)), speed_keys(inst)])
            dfs = decode(inst, x, pr.k).cost
            r = jp.search(pr, time_limit=args.time_limit, budget=args.budget,
                          seed=args.seed, progress=False)
            check = evaluate_stages(inst, r.partition.assignment, r.partition.devices)
            assert abs(check.bottleneck - r.cost) <= 1e-9 * r.cost, (check.bottleneck, r.cost)
            devs = "".join(inst.device_names[p] for p in r.partition.devices)
            row = [name, str(g.num_nodes), cname, str(pr.k), _ms(lb), _ms(uni.naive),
                   _ms(uni.best_order), _ms(dfs), _ms(r.cost), devs, _x(r.cost, lb),
                   _x(uni.naive, r.cost), _x(uni.best_order, r.cost),
                   f"{r.wall_time:.0f}", str(r.evaluations)]
            print(" | ".join(row), flush=True)
            rows.append(row)
    return rows


def throughput(args, layers: int) -> tuple[int, float, float, float]:
    """(n, candidates per wall second, per CPU second, compile seconds) of the float32
    decoder on a GPT-like graph on moirai_inter (4 devices, 4 stages)."""
    import jax.numpy as jnp

    from jaxplace.cluster import load_cluster
    from jaxplace.generators import gpt_like
    from jaxplace.objectives.latency import instance_from
    from jaxplace.objectives.throughput_unequal import hetero_graph, score_jit

    g = gpt_like(layers, 1024, 16)
    inst = instance_from(g, load_cluster("moirai_inter"))
    spec, dg = hetero_graph(inst, 4)
    X = jnp.asarray(np.random.default_rng(args.seed).random((args.pop, spec.width)),
                    jnp.float32)
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


def run(args) -> int:
    import jax

    from experiments.bench.tables import markdown_table as _table

    head = ["model", "ops", "cluster", "k", "lower bound ms", "uniform naive ms",
            "uniform best order ms", "DFS fastest ms", "search ms", "stage devices",
            "search / LB", "naive / search", "best order / search", "search s",
            "evaluations"]
    if not args.throughput_only:
        rows = run_instances(args)
        print(_table(head, rows))
    backend = jax.default_backend()
    for layers in (4, 20):
        n, rate, cpu_rate, comp = throughput(args, layers)
        print(f"decoder throughput ({backend}): n={n} ops, 4 devices, float32, {args.pop} "
              f"candidates per call: {rate:.0f} candidates/s wall, {cpu_rate:.0f} per CPU "
              f"second (best of {args.repeat}; compile {comp:.1f} s; load average "
              f"{os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
