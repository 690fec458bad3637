"""Warm forward time of the shipped policies (gnn-v1, gnn-v2) on six held-out graphs.

    python experiments/policy_forward_time.py
"""

import time

import numpy as np

from jaxplace.bench.policy import held_out_problems
from jaxplace.policy.inference import load_policy, node_distribution

probs = held_out_problems(6, 0, regal_fraction=1.0)
for name in ("policies/gnn-v1", "policies/gnn-v2"):
    pol = load_policy(name)
    for p in probs:  # compile every padded shape first
        node_distribution(pol, p)
    times = []
    for _ in range(5):
        for p in probs:
            t0 = time.perf_counter()
            np.asarray(node_distribution(pol, p)["mean"])
            times.append(time.perf_counter() - t0)
    print(f"{name}: warm node_distribution median {np.median(times):.4f} s, "
          f"n = {[p.n for p in probs]}")
