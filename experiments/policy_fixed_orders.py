"""Fixed orders (node index, DFS, ASAP, ALAP) against gnn-v2's greedy order and
random-100 on the DNN-like problems of the 84 mixed held-out problems where the
methods do not all tie (experiments/policy_ties.md).

    python experiments/policy_fixed_orders.py
"""

import os
import sys

import numpy as np

from jaxplace.bench.policy import held_out_problems
from jaxplace.cost import simple_lower_bound
from jaxplace.policy.features import _structure
from jaxplace.reference import decode_reference
from jaxplace.search.baselines import dfs_order, order_to_priorities

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from policy_greedy_std import SETS, TIED  # noqa: E402
from policy_pooled import parse  # noqa: E402


def _order_cost(p, order):
    return decode_reference(p, order_to_priorities(order)).cost / simple_lower_bound(p)


def main():
    print("family n k | cost / random-100: greedy, index, DFS, ASAP, ALAP, brkga-10000")
    for spec in SETS:
        count, seed, log = spec.split(":", 2)
        for p, (_, k, r) in zip(held_out_problems(int(count), int(seed)), parse(log), strict=True):
            if p.graph.meta.get("generator") == "regal" or len({r[m] for m in TIED}) == 1:
                continue
            s = _structure(p.graph)
            orders = (np.arange(p.n), dfs_order(p.graph), s["asap"],
                      np.argsort(s["alap_pos"], kind="stable"))
            r100 = r["random-100"]
            cells = [r["policy-greedy"] / r100, *(_order_cost(p, o) / r100 for o in orders),
                     r["brkga-10000"] / r100]
            print(p.graph.meta.get("generator"), p.n, k, " ".join(f"{c:.4f}" for c in cells))


if __name__ == "__main__":
    main()
