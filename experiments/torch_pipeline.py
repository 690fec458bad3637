"""Planned pipeline splits of torch models vs the even split of layers, and measured
vs predicted stage times of 2-process runs. Prints the markdown tables of
experiments/torch_pipeline.md.

    nice python experiments/torch_pipeline.py plan      # H100 roofline, published sizes
    nice python experiments/torch_pipeline.py measure   # 2 local processes, smaller sizes
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from jaxplace.importers import get_device
from jaxplace.torch import plan_pipeline, run_pipeline
from jaxplace.torch.models import GPT2, ResNet, UnequalMLP, ViT


def full_models():
    """(name, module, one microbatch) at the published sizes."""
    torch.manual_seed(0)
    return [
        ("GPT-2 small (T=1024)", GPT2(), (torch.randint(0, 50257, (1, 1024)),)),
        ("ResNet-50 (8x224x224)", ResNet(), (torch.randn(8, 3, 224, 224),)),
        ("ViT-S/16 (8x224x224)", ViT(), (torch.randn(8, 3, 224, 224),)),
        ("unequal MLP (batch 64)", UnequalMLP(), (torch.randn(64, 512),)),
    ]


def small_models():
    """(name, module, whole batch of 4) small enough to run on 2 CPU processes."""
    torch.manual_seed(0)
    return [
        ("GPT-2 d256 L6 (T=128)", GPT2(vocab=2048, ctx=128, d=256, layers=6, heads=4),
         (torch.randint(0, 2048, (4, 128)),)),
        ("ResNet-50 w16 (64x64)", ResNet(width=16, classes=100), (torch.randn(4, 3, 64, 64),)),
        ("ViT d192 L6 (64x64)", ViT(image=64, patch=8, d=192, layers=6, heads=3, classes=100),
         (torch.randn(4, 3, 64, 64),)),
        ("unequal MLP (batch 64)", UnequalMLP(), (torch.randn(64, 512),)),
    ]


def plan_table(ks=(2, 4, 8)) -> None:
    print("| model | k | stages | planned bottleneck us | max/mean | lower bound (ratio) "
          "| op-level us | even layers us | even max/mean | even / planned | plan s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, m, args in full_models():
        for k in ks:
            t = time.perf_counter()
            plan = plan_pipeline(m, args, k=k)
            dt = time.perf_counter() - t
            s, e = plan.split, plan.even
            even = (f"{e.bottleneck:.1f} | {e.balance:.3f} | {e.bottleneck / s.bottleneck:.3f}x"
                    if e is not None else "- | - | -")
            print(f"| {name} | {k} | {plan.num_stages} | {s.bottleneck:.1f} | "
                  f"{s.balance:.3f} | {s.lower_bound:.1f} ({s.bottleneck / s.lower_bound:.4f})"
                  f" | {plan.op_split.bottleneck:.1f} | {even} | {dt:.1f} |")
            for note in plan.notes:
                print(f"|  | {k} | note: {note} |||||||||")
        sys.stdout.flush()


def measure_table(k: int = 2) -> None:
    # one core of the nominal "cpu" profile: each stage process runs on one thread
    dev = get_device("cpu", peak_tflops=3.072 / 32, mem_bw_gbs=10.0)
    print("| model | stage | begins at | predicted ms | share | measured ms | share | "
          "max rel. error of outputs |")
    print("|---|---|---|---|---|---|---|---|")
    for name, m, args in small_models():
        mb = tuple(a[: a.shape[0] // 2] for a in args)
        plan = plan_pipeline(m, mb, k=k, device=dev)
        run = run_pipeline(plan, m, args, n_microbatches=2, repeats=3, timeout=600)
        with torch.no_grad():
            ref = m(*args)
        err = float((run.outputs - ref).abs().max() / ref.abs().max())
        p, q = run.predicted_us / 1e3, run.measured_ms
        for s in range(plan.num_stages):
            print(f"| {name if s == 0 else ''} | {s} | {plan.stage_starts[s] or '(start)'} | "
                  f"{p[s]:.2f} | {p[s] / p.sum():.1%} | {q[s]:.2f} | {q[s] / q.sum():.1%} | "
                  f"{err:.1e} |")
        print(f"| | max/mean | | {p.max() / p.mean():.3f} | | {q.max() / q.mean():.3f} | | |")
        sys.stdout.flush()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "plan"
    if mode == "plan":
        plan_table()
    elif mode == "measure":
        measure_table()
    else:
        sys.exit("usage: torch_pipeline.py plan|measure")
    print(f"\n({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{' '.join(f'{x:.2f}' for x in np.round(__import__('os').getloadavg(), 2))})")
