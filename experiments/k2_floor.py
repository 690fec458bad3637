"""How far below C++ brkga-10000 any plan can go at k = 2: the certified floor.

At two stages the default search reads 0.984-0.988x the C++ peer at every budget
(engine.md, budgets per k). This proves where the floor is: each graph's lower bound
(`jp.certify` on the default search's partition, the ladder the CLI picks, under a
time limit for the whole call) bounds the cost of every plan, so LB / C++ is the
lowest cost / C++ any search can reach on that graph; its geometric mean over the
graphs is the best suite ratio possible.

    JAXPLACE_CPP_DIR=/tmp/jp_cpp python experiments/k2_floor.py --seeds 100,101,102 \\
        --count 5 --k 2 --time-limit 60

Graphs: regal_set(count, seed) (the REGAL-like family of budgets_per_k.py, its tuning
seeds by default); the peer through its public command (`cpp_costs` there); the
search: `search_many` at the default budget, search seed = graph seed.
"""

from __future__ import annotations

import argparse
import time

import jaxplace as jp
from budgets_per_k import cpp_costs, gm
from jaxplace.generators import regal_set
from jaxplace.search.many import search_many


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="100,101,102")
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    rows = []
    print("| graph | n | C++ | jaxplace / C++ | LB / C++ (floor) | jaxplace / LB | proof | s |")
    print("|---|---|---|---|---|---|---|---|")
    for seed in (int(s) for s in args.seeds.split(",")):
        cpp = cpp_costs(seed, args.count, args.k)
        problems = [jp.Problem(g, args.k) for g in regal_set(args.count, seed=seed)]
        for i, (p, r) in enumerate(zip(problems, search_many(problems, seed=seed),
                                       strict=True)):
            t0 = time.perf_counter()
            cert = jp.certify(p, r.partition, time_limit=args.time_limit)
            lb = cert.lower_bound
            rows.append((r.cost / cpp[i], lb / cpp[i], r.cost / lb))
            proof = "optimal" if cert.optimal else f"gap {cert.gap:.2%}"
            print(f"| {seed}/{i} | {p.n} | {cpp[i]:.1f} | {r.cost / cpp[i]:.4f} | "
                  f"{lb / cpp[i]:.4f} | {r.cost / lb:.4f} | {proof} | "
                  f"{time.perf_counter() - t0:.1f} |", flush=True)
    jp_c, floor, to_lb = (gm([row[j] for row in rows]) for j in range(3))
    print(f"\ngeometric mean over {len(rows)} graphs at k = {args.k}: jaxplace / C++ "
          f"{jp_c:.4f}, floor (LB / C++) {floor:.4f}, jaxplace / LB {to_lb:.4f}")


if __name__ == "__main__":
    main()
