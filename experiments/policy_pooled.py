"""Pool the policy bench logs of the two held-out REGAL-like sets (12 problems, seed 0;
36 problems, seed 1) and print each policy's per-problem ratio to brkga-10000 per k
(experiments/policy.md, PPO section). The logs are the stdout of
`python -m experiments.bench.policy`:

    R=runs/bench; B="python -m experiments.bench.policy --family regal"
    M=policy-greedy,policy-best100,policy+brkga-1000,policy+brkga-10000
    $B --count 12 --seed 0 --methods $M,brkga-10000 > $R/block.log  # brkga: the base
    $B --count 36 --seed 1 --methods $M,brkga-1000,brkga-10000 > $R/v1_s1.log
    $B --count 12 --seed 0 --methods $M > $R/v1_12.log
    $B --count 12 --seed 0 --methods $M --policy runs/gnn-v2-ppo/policy > $R/ppo.log
    # and ppo_s1.log (seed 1, 36), ppo85.log, ppo85_s1.log (runs/gnn-v2-ppo85),
    # ppo1k.log, ppo1k_s1.log (runs/gnn-v2-ppo-1k: the PPO run stopped at step 1000)
    # GPU-trained policies (experiments/gpu.md): regal_gpu.log, regal_gpu_s1.log, ... from
    # the same two commands with --policy runs/gpu/policy_regal_gpu (_long, _300)

Usage: python experiments/policy_pooled.py [ROOT] [NAME=LOG12,LOG36 ...]
"""

import collections
import re
import sys

import numpy as np

METHODS = ("policy-greedy", "policy-best100", "policy+brkga-1000", "policy+brkga-10000")


def parse(path):
    """[(n, k, {method: cost / L})] of a bench log."""
    out = []
    for line in open(path):
        m = re.match(r"\[\d+/\d+\] n=(\d+) k=(\d+) .*?s: (.*)", line)
        if m:
            out.append((int(m[1]), int(m[2]),
                        {a: float(b) for a, b in re.findall(r"(\S+) ([\d.]+)", m[3])}))
    return out


def geomean(v):
    return float(np.exp(np.mean(np.log(v))))


def main(root="runs/bench/", *extra):
    base = parse(root + "block.log") + parse(root + "v1_s1.log")
    pols = {"gnn-v1": ("v1_12.log", "v1_s1.log"), "ppo": ("ppo.log", "ppo_s1.log"),
            "ppo85": ("ppo85.log", "ppo85_s1.log"),
            "ppo-1k": ("ppo1k.log", "ppo1k_s1.log")}
    for item in extra:
        name, logs = item.split("=")
        pols[name] = tuple(logs.split(","))
    for name, files in pols.items():
        rows = parse(root + files[0]) + parse(root + files[1])
        print(name)
        for meth in METHODS:
            per = collections.defaultdict(list)
            for (n, k, d), (n2, k2, b) in zip(rows, base, strict=True):
                assert (n, k) == (n2, k2)
                per[k].append(d[meth] / b["brkga-10000"])
            allk = [r for v in per.values() for r in v]
            print(f"  {meth:20s}", " ".join(f"{geomean(per[k]):.4f}" for k in (4, 8, 16)),
                  f"all {geomean(allk):.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
