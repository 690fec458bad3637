"""A dense stochastic-block-model DAG (issue 65's dense graph): `sizes` communities,
edge probability `p_in` inside and `p_out` across, oriented by a random order, costed
as the REGAL-like generator costs its graphs (work from the tensor sizes in and out).

    python experiments/dense_sbm.py --n 5000 -o /tmp/sbm5000.json
    jaxplace partition /tmp/sbm5000.json -k 16 --time-limit 60
"""

from __future__ import annotations

import argparse

import numpy as np

from jaxplace.formats import nodelink_data, write_json
from jaxplace.generators import weigh_dag
from jaxplace.graph import CompGraph


def sbm_dag(n: int = 5000, blocks: int = 4, p_in: float = 0.15, p_out: float = 0.005,
            seed: int = 0) -> CompGraph:
    rng = np.random.default_rng(seed)
    block = np.repeat(np.arange(blocks), -(-n // blocks))[:n]
    us, vs = [], []
    for a in range(blocks):
        ia = np.flatnonzero(block == a)
        for b in range(a, blocks):
            ib = np.flatnonzero(block == b)
            if a == b:
                iu, ju = np.triu_indices(len(ia), k=1)
                keep = rng.random(len(iu)) < p_in
                us.append(ia[iu[keep]])
                vs.append(ia[ju[keep]])
            else:
                keep = rng.random((len(ia), len(ib))) < p_out
                r, c = np.nonzero(keep)
                us.append(ia[r])
                vs.append(ib[c])
    und = np.stack([np.concatenate(us), np.concatenate(vs)], axis=1)
    edges, work, size_param, size_out, _ = weigh_dag(rng, n, und)
    return CompGraph(work, edges, size_param, size_out,
                     meta={"generator": "dense_sbm", "seed": seed, "p_in": p_in,
                           "p_out": p_out, "blocks": blocks})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--p-in", type=float, default=0.15)
    ap.add_argument("--p-out", type=float, default=0.005)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    g = sbm_dag(args.n, args.blocks, args.p_in, args.p_out, args.seed)
    write_json(args.output, nodelink_data(g))
    print(f"{args.output}: {g.num_nodes} ops, {len(g.edges)} edges")


if __name__ == "__main__":
    main()
