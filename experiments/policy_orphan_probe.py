"""Training graphs with and without orphan backward ops: how often 100 random unit
orders all tie, and the heuristic seeds (`seed_priorities`) against the best of 100
random orders. Transformer and resnet forward graphs, 3 seeds each, k = 3 and 8.

    python experiments/policy_orphan_probe.py
"""

import jax
import jax.numpy as jnp
import numpy as np

import jaxplace as jp
from jaxplace.generators import resnet, training_graph, transformer
from jaxplace.search.baselines import seed_priorities

print("family orphan seed n units k | seeds best, random-100 best / median, "
      "share of random at the worst cost")
for frac in (0.0, 0.05, 0.2):
    for fam in ("transformer", "resnet"):
        for s in range(3):
            f = (transformer(layers=2 + s, d_model=512, seq=512, batch=1, seed=s)
                 if fam == "transformer" else
                 resnet(stages=(1, 1 + s, 1, 1), block="basic", width=32, image=224,
                        batch=1, seed=s))
            g = training_graph(f, s, stash=0.75, orphan=frac)
            for k in (3, 8):
                p = jp.Problem(g, k)
                lb = jp.simple_lower_bound(p)
                score = jax.jit(jp.Evaluator(p).score_fn())
                R = np.random.default_rng(0).random((100, p.n))
                X = np.concatenate([seed_priorities(g), R]).astype(np.float32)
                c = np.asarray(score(jnp.asarray(X))) / lb
                seeds, rnd = c[:-100], c[-100:]
                print(f"{fam} {frac} {s} {p.n} {g.units.num_units} {k} | "
                      f"{seeds.min():.3f}, {rnd.min():.3f} / {np.median(rnd):.3f}, "
                      f"{np.mean(rnd >= rnd.max() - 1e-6):.2f}", flush=True)
