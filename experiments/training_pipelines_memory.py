"""Predicted per-stage memory of the splits `training_pipelines.py` ran, under the
current memory model, next to the peaks those runs measured (the JSON files it wrote).
Memory does not depend on the profiled times, so the plan here uses derived costs.

    nice python experiments/training_pipelines_memory.py
"""

from __future__ import annotations

import json
import os

from training_pipelines import model

from jaxplace.torch import plan_pipeline

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    worst = 0.0
    for name in ("gpt", "mlp", "cnn"):
        with open(os.path.join(HERE, f"training_pipelines_{name}.json")) as f:
            rows = json.load(f)
        m, x, y, loss = model(name)
        mb = x.shape[0] // 4
        plan = plan_pipeline(m, (x[:mb],), 2, train=True, n_microbatches=4, loss_fn=loss,
                             target=y[:mb], device="cpu")
        for r in rows:
            pred = plan.cost_of(r["starts"]).memory / 2**20
            err = [p / q - 1 for p, q in zip(pred, r["peak_mem_mib"], strict=True)]
            worst = max(worst, *(abs(e) for e in err))
            print(f"{name:<4} {r['candidate']:<13} {r['starts'][1]:<22} predicted "
                  f"{' / '.join(f'{p:.2f}' for p in pred)} MiB, measured "
                  f"{' / '.join(f'{q:.2f}' for q in r['peak_mem_mib'])} MiB, error "
                  f"{' / '.join(f'{e:+.1%}' for e in err)}")
    print(f"largest error {worst:.1%}")
