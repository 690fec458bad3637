"""Training pipelines planned by jaxplace and measured: for one model, the planned
split's measured step time against the even layer split's and the other split
candidates', the predicted per-stage memory against each rank's measured peak, and a
memory limit that rules out the time-optimal split.

    nice python experiments/training_pipelines.py gpt|cnn|mlp [--k 2] [--m 4]

Costs are profiled on this host (plan_pipeline(profile=True): every segment's forward
and backward, one thread), the schedule is 1F1B, the optimizer Adam; every candidate
runs warm-up + 8 measured steps over k gloo processes (one thread each); step times are
reported as the median and the minimum (on a shared, loaded host the minimum is the
step least disturbed by other processes). Candidates: the plan, the even split of the
repeated layers, the split that balances parameters (DeepSpeed's partition_method="parameters"), and the plan's cut
moved one boundary either way (k = 2). `--only limit` runs only the memory-limit
part: a limit 3% under the time-optimal split's busiest stage, the split planned
again on the same costs with that limit, and run."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch
from torch import nn

import jaxplace as jp

from jaxplace.torch import GPT2, ResNet, UnequalMLP, plan_pipeline, run_pipeline


def lm_loss(out, tgt):
    return nn.functional.cross_entropy(out.flatten(0, 1), tgt.flatten())


def cls_loss(out, tgt):
    return nn.functional.cross_entropy(out, tgt)


def model(name: str):
    torch.manual_seed(0)
    if name == "gpt":  # heavy embedding and LM head: vocabulary 4096 at width 128
        m = GPT2(vocab=4096, ctx=64, d=128, layers=6, heads=4)
        x, y = torch.randint(0, 4096, (8, 64)), torch.randint(0, 4096, (8, 64))
        return m, x, y, lm_loss
    if name == "cnn":
        m = ResNet(blocks=(1, 1, 1, 1), width=16, classes=10)
        return m, torch.randn(8, 3, 64, 64), torch.randint(0, 10, (8,)), cls_loss
    if name == "mlp":  # one oversized layer: 256 -> 4096 -> 256
        m = UnequalMLP(widths=(256, 256, 256, 4096, 256, 256, 256, 256, 10))
        return m, torch.randn(64, 256), torch.randint(0, 10, (64,)), cls_loss
    raise SystemExit(f"unknown model {name!r}: gpt, cnn or mlp")


def parameter_split(plan) -> list[str]:
    """The single cut (k = 2) that best balances parameter bytes."""
    g = plan.problem.graph
    pre = np.cumsum(g.size_param)
    i = int(np.argmin(np.abs(pre[:-1] - pre[-1] / 2))) + 1
    return ["", plan.segment_starts[i]]


def candidates(plan, k: int) -> dict[str, list[str]]:
    out = {"planned": list(plan.stage_starts)}
    if plan.even is not None:
        out["even layers"] = [plan.segment_starts[i] for i in plan.even.starts]
    if k == 2:
        out["parameters"] = parameter_split(plan)
        cut = plan.stage_segments[1]
        for d in (-1, 1):
            j = cut + d
            if 0 < j < len(plan.segment_starts):
                out[f"cut {d:+d}"] = ["", plan.segment_starts[j]]
    seen, uniq = set(), {}
    for name, starts in out.items():
        if tuple(starts) not in seen:
            seen.add(tuple(starts))
            uniq[name] = starts
    return uniq


def measure(plan, starts, m, x, y, loss, steps):
    """Run the split whose stages begin at `starts` (FQNs) as a plan."""
    from dataclasses import replace

    from torch.distributed.pipelining import SplitPoint

    cost = plan.cost_of(starts)
    p = replace(plan, split_spec={f: SplitPoint.BEGINNING for f in starts[1:]},
                stage_starts=tuple(starts), stage_memory=cost.memory)
    t0 = time.perf_counter()
    run = run_pipeline(p, m, (x,), target=y, loss_fn=loss, train=True, steps=steps,
                       warmup=1, timeout=280)
    return cost, run, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None, help="comma-separated candidate names")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=9, help="profile runs per segment")
    ap.add_argument("--no-limit", action="store_true", help="skip the memory-limit run")
    a = ap.parse_args(argv)
    m, x, y, loss = model(a.model)
    mb = x.shape[0] // a.m
    t0 = time.perf_counter()
    plan = plan_pipeline(m, (x[:mb],), a.k, train=True, schedule="1f1b", n_microbatches=a.m,
                         profile=True, loss_fn=loss, target=y[:mb], device="cpu",
                         repeats=a.repeats)
    print(f"# {a.model}: k={a.k} m={a.m} 1f1b adam, planned in "
          f"{time.perf_counter() - t0:.1f} s, {len(plan.segment_starts)} segments")
    print(plan.summary())
    rows = []
    for name, starts in candidates(plan, a.k).items():
        if a.only and name not in a.only.split(","):
            continue
        cost, run, wall = measure(plan, starts, m, x, y, loss, a.steps)
        rows.append({"candidate": name, "starts": starts,
                     "predicted_ms": cost.cost / 1e3, "measured_ms": run.step_time * 1e3,
                     "min_ms": float(run.step_times.min()) * 1e3,
                     "steps_ms": [round(t * 1e3, 2) for t in run.step_times],
                     "pred_mem_mib": [round(v / 2**20, 3) for v in cost.memory],
                     "peak_mem_mib": [round(v / 2**20, 3) for v in run.peak_memory],
                     "stage_fwd_bwd_ms": np.round(run.stage_times * 1e3, 3).tolist(),
                     "wall_s": round(wall, 1)})
        r = rows[-1]
        print(f"{name:<12} {' | '.join(s or '(start)' for s in starts):<40} predicted "
              f"{r['predicted_ms']:8.2f} ms measured median {r['measured_ms']:8.2f} min "
              f"{r['min_ms']:8.2f} ms  memory pred {r['pred_mem_mib']} MiB peak "
              f"{r['peak_mem_mib']} MiB", flush=True)
    if rows and rows[0]["candidate"] == "planned":
        best = min(r["measured_ms"] for r in rows)
        planned = rows[0]["measured_ms"]
        even = next((r["measured_ms"] for r in rows if r["candidate"] == "even layers"),
                    None)
        print(f"median: planned / best measured = {planned / best:.3f}"
              + (f", planned / even = {planned / even:.3f}" if even else ""))
        best = min(r["min_ms"] for r in rows)
        planned = rows[0]["min_ms"]
        even = next((r["min_ms"] for r in rows if r["candidate"] == "even layers"), None)
        print(f"min: planned / best measured = {planned / best:.3f}"
              + (f", planned / even = {planned / even:.3f}" if even else ""))
        for r in rows:
            print(f"  {r['candidate']:<12} measured stage fwd/bwd ms {r['stage_fwd_bwd_ms']}")
    print(f"  plan's profiled stage fwd/bwd ms "
          f"{np.round(np.c_[plan.stage_fwd, plan.stage_bwd] * 1e3, 3).tolist()}")
    if a.no_limit or (a.only and "limit" not in a.only.split(",")):
        _save(a.json, rows)
        return
    # a memory limit below the time-optimal split's busiest stage, planned on the same
    # profiled costs (a second profile on a loaded host would differ)
    limit = 0.97 * float(plan.stage_memory.max())
    p2 = jp.Problem(plan.problem.graph, plan.problem.k, objective="training",
                    capacity=limit)
    found = jp.search(p2, progress=False)
    cost = p2.objective_impl.evaluate_partition(p2, found.partition)
    if not np.isfinite(cost.cost):
        print(f"memory limit {limit / 2**20:.3f} MiB: no split fits ({cost.why})")
    else:
        starts = [plan.segment_starts[i] for i in cost.starts]
        _, run, _ = measure(plan, starts, m, x, y, loss, a.steps)
        print(f"memory limit {limit / 2**20:.3f} MiB: split "
              f"{' | '.join(s or '(start)' for s in starts)}, predicted "
              f"{[round(v / 2**20, 3) for v in cost.memory]} MiB, measured peak "
              f"{[round(v / 2**20, 3) for v in run.peak_memory]} MiB, step median "
              f"{run.step_time * 1e3:.2f} min {run.step_times.min() * 1e3:.2f} ms, "
              f"predicted {cost.cost / 1e3:.2f} ms (time-optimal split predicted "
              f"{plan.step_time * 1e3:.2f} ms)")
        rows.append({"candidate": "memory limit", "limit_mib": limit / 2**20,
                     "starts": starts, "predicted_ms": cost.cost / 1e3,
                     "pred_mem_mib": [v / 2**20 for v in cost.memory],
                     "peak_mem_mib": [v / 2**20 for v in run.peak_memory],
                     "measured_ms": run.step_time * 1e3,
                     "min_ms": float(run.step_times.min()) * 1e3})
    _save(a.json, rows)


def _save(path, rows):
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
