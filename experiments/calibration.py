"""Leave-one-model-out calibration figures (experiments/calibration.md).

    python experiments/calibration.py [--out DIR] [--steps 3] [--no-step]

1. microbenchmarks of this machine (one thread; gloo link between 2 processes);
2. the built-in GPT-like, CNN and MLP models, each planned at k = 2, 3, 4, their
   stages' forward and backward timed (thread CPU time, best of 7);
3. per held-out model: the profile fitted on the two others; the median error of its
   stages' predicted fwd + bwd before calibration (nominal `cpu` profile), with the
   microbenchmarks alone, after (rates from the microbenchmarks, overheads fitted),
   and with every rate fitted to the stages (no microbenchmarks);
4. per held-out model: a real 2-process training run (gloo, GPipe, 4 microbatches,
   SGD; wall clock) of its plan at k = 2, its step time against the prediction of the
   nominal and the fitted profile, its stages' measured fwd + bwd against predicted,
   and a Chrome trace of the predicted and measured step (--out).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def _fmt(x: float) -> str:
    return f"{x:.1%}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="folder for traces and the JSON figures")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--no-step", action="store_true", help="skip the training runs")
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--clock", default="cpu", choices=("cpu", "wall"),
                    help="how stages are timed for the fit (cpu: thread CPU time)")
    a = ap.parse_args()

    import torch

    from jaxplace.calibrate import (
        builtin_models,
        leave_one_out,
        measure_models,
        measure_step,
        predict_step,
        run_microbenchmarks,
    )
    from jaxplace.importers import get_device
    from jaxplace.torch import plan_pipeline
    from jaxplace.view import save_trace

    t0 = time.time()
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    figures: dict = {"cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0))}
    micro = run_microbenchmarks()
    figures["micro"] = {k: v for k, v in micro.to_dict().items() if k != "raw"}
    print("## microbenchmarks (one thread)\n")
    print(f"matrix {micro.matrix_flops / 1e9:.4g} GFLOP/s, vector {micro.vector_flops / 1e9:.4g}"
          f" GFLOP/s, weight streaming {micro.mem_bw / 1e9:.4g} GB/s (plain add "
          f"{micro.raw['add_bw'] / 1e9:.4g} GB/s), launch {micro.launch_s * 1e6:.3g} us, "
          f"backward launch {micro.backward_launch_s * 1e6:.3g} us, link "
          f"{micro.link_bw / 1e9:.4g} GB/s + {micro.link_latency_s * 1e6:.3g} us "
          f"({time.time() - t0:.0f} s)\n", flush=True)

    models = builtin_models()
    measured = measure_models(models, ks=(2, 3, 4), device="cpu", clock=a.clock)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; stages timed "
          f"on the {a.clock} clock")
    print(f"measured {sum(len(s.fwd) for m in measured.values() for s in m.samples)} stages "
          f"of {len(measured)} models ({time.time() - t0:.0f} s)\n", flush=True)
    loo = leave_one_out(measured, "cpu", micro=micro)
    free = leave_one_out(measured, "cpu")
    print("## leave one model out: stages' fwd + bwd, median |predicted - measured| / "
          "measured\n")
    print("| held out | stages | before (nominal cpu) | microbenchmarks alone | after "
          "(fitted overheads) | every rate fitted to stages |")
    print("|---|---|---|---|---|---|")
    figures["loo"] = {}
    for h, f in zip(loo, free, strict=True):
        print(f"| {h.model} | {len(h.measured)} | {_fmt(h.error_before)} | "
              f"{_fmt(h.error_micro)} | {_fmt(h.error_after)} | {_fmt(f.error_after)} |")
        figures["loo"][h.model] = {"before": h.error_before, "micro": h.error_micro,
                                   "after": h.error_after, "all_free": f.error_after,
                                   "fitted": h.profile.calibration["fitted"]}
    print(flush=True)
    if a.no_step:
        _dump(a.out, figures)
        return

    print(f"## step time, held-out model, k = 2, GPipe, {a.microbatches} microbatches, "
          "SGD, 2 gloo processes (wall clock)\n")
    print("| held out | measured step | predicted before | error | predicted after | "
          "error | stages' fwd+bwd error in the run (after) |")
    print("|---|---|---|---|---|---|---|")
    figures["step"] = {}
    nominal = get_device("cpu")
    for h in loo:
        module, args = models[h.model]()
        plan = plan_pipeline(module, args, k=2, device=h.profile, train=True,
                             schedule="gpipe", n_microbatches=a.microbatches,
                             optimizer="sgd")
        after = predict_step(plan, module, args, h.profile)
        before = predict_step(plan, module, args, nominal)
        batch = tuple(torch.cat([x] * a.microbatches) for x in args)
        run = measure_step(plan, module, batch, steps=a.steps)
        figures.setdefault("load", []).append(os.getloadavg()[0])
        stage_meas = np.asarray(run.stage_times).sum(axis=1)
        stage_err = float(np.median(np.abs(after.fwd + after.bwd - stage_meas) / stage_meas))
        eb = abs(before.step_time - run.step_time) / run.step_time
        ea = abs(after.step_time - run.step_time) / run.step_time
        print(f"| {h.model} | {run.step_time * 1e3:.4g} ms | {before.step_time * 1e3:.4g} ms | "
              f"{_fmt(eb)} | {after.step_time * 1e3:.4g} ms | {_fmt(ea)} | "
              f"{_fmt(stage_err)} |", flush=True)
        figures["step"][h.model] = {
            "measured": run.step_time, "steps": list(map(float, run.step_times)),
            "before": before.step_time, "after": after.step_time,
            "stage_measured": stage_meas.tolist(),
            "stage_predicted": (after.fwd + after.bwd).tolist(),
            "split": list(plan.stage_starts)}
        if a.out:
            save_trace(os.path.join(a.out, f"trace_{h.model}.json"), after.timeline,
                       run.events)
    print(f"\n(total {time.time() - t0:.0f} s)")
    _dump(a.out, figures)


def _dump(out, figures) -> None:
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "calibration.json"), "w") as f:
            json.dump(figures, f, indent=1, default=float)


if __name__ == "__main__":
    main()
