"""Planned pipeline splits of torch models vs the even split of layers, and measured
vs predicted stage times of 2-process runs. Prints the markdown tables of
experiments/torch_pipeline.md.

    nice python experiments/torch_pipeline.py plan      # H100 roofline, published sizes
    nice python experiments/torch_pipeline.py measure   # 2 local processes, smaller sizes
    nice python experiments/torch_pipeline.py accept    # published sizes: pipeline() takes
                                                        # the splits; 2-process outputs
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


def accept_table(ks=(2, 4, 8)) -> None:
    """pipeline() accepts every planned split of the published-size models (stage count
    and parameter bytes per stage as planned); GPT-2 small and ResNet-50 run on 2
    processes (GPT-2 at 2 x 128 tokens, ResNet-50 at 2 images; microbatches of 1)."""
    import copy

    from torch.distributed.pipelining import pipeline

    print("| model | k | stages pipeline() made | parameter bytes per stage as planned | "
          "2-process max rel. error | run s |")
    print("|---|---|---|---|---|---|")
    for name, m, args in full_models():
        short = name.split(" (")[0]
        if short.startswith("GPT-2"):
            args = (args[0][:, :128],)
        for k in ks:
            plan = plan_pipeline(m, tuple(a[:1] for a in args), k=k)
            pipe = pipeline(copy.deepcopy(m), mb_args=tuple(a[:1] for a in args),
                            split_spec=plan.split_spec)
            held = [sum(t.numel() * t.element_size() for n, t in
                        (*pipe.get_stage_module(s).named_parameters(),
                         *pipe.get_stage_module(s).named_buffers())
                        if not n.endswith("num_batches_tracked"))
                    for s in range(pipe.num_stages)]
            same = bool(np.array_equal(held, plan.param_bytes))
            err, dt = "-", "-"
            if k == 2 and short in ("GPT-2 small", "ResNet-50"):
                batch = tuple(torch.randint(0, 50257, (2, *a.shape[1:]))
                              if a.dtype == torch.int64 else torch.randn(2, *a.shape[1:])
                              for a in args)
                t = time.perf_counter()
                run = run_pipeline(plan, m, batch, n_microbatches=2, timeout=900)
                dt = f"{time.perf_counter() - t:.0f}"
                with torch.no_grad():
                    ref = m(*batch)
                err = f"{float((run.outputs - ref).abs().max() / ref.abs().max()):.1e}"
            print(f"| {short} | {k} | {pipe.num_stages} (planned {plan.num_stages}) | "
                  f"{same} | {err} | {dt} |")
            sys.stdout.flush()


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "plan"
    if mode == "plan":
        plan_table()
    elif mode == "measure":
        measure_table()
    elif mode == "accept":
        accept_table()
    else:
        sys.exit("usage: torch_pipeline.py plan|measure|accept")
    print(f"\n({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{' '.join(f'{x:.2f}' for x in np.round(__import__('os').getloadavg(), 2))})")
