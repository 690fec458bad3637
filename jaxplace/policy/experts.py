"""Search solutions of a training pool, for training a policy on them (expert iteration).

For every problem of a recipe's generated pool (`problem_set(seed, pool, data)`, in
order), one `jp.search` run (by default "policy+brkga" with 1,000 evaluations and the
shipped policy) gives priorities and their cost. `train` with `TrainConfig.expert`
starts its self-imitation memory from these instead of from nothing, so the
imitation term pulls the policy towards solutions a search found, and sampled ones
replace them only when better.

    python -m jaxplace.policy.experts training/policy_regal.json --out runs/experts.npz

The file holds `x` (pool, max n) float32 priorities (0 past each problem's n), `cost`
(pool,) float64, `n` (pool,) int64 and `done` (pool,) bool; `--part I/J` computes
every J-th problem from the I-th (for parallel processes) and `--merge` joins such
parts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import jaxplace as jp
from jaxplace.errors import JaxplaceError
from jaxplace.policy._solutions import read_solutions


def search_solutions(problems, method: str = "policy+brkga", budget: int = 1000,
                     seed: int = 0, indices=None, log=None) -> dict:
    """{"x", "cost", "n", "done"} for `problems` (those of `indices` only, if given)."""
    width = max(p.n for p in problems)
    out = {"x": np.zeros((len(problems), width), np.float32),
           "cost": np.full(len(problems), np.inf), "n": np.array([p.n for p in problems]),
           "done": np.zeros(len(problems), bool)}
    todo = range(len(problems)) if indices is None else indices
    t0 = time.perf_counter()
    for j, i in enumerate(todo):
        r = jp.search(problems[i], method, budget=budget, seed=seed + i, progress=False)
        out["x"][i, :problems[i].n] = r.priorities
        out["cost"][i], out["done"][i] = r.cost, True
        if log is not None and (j + 1) % 50 == 0:
            print(f"{j + 1} problems, {time.perf_counter() - t0:.0f} s", file=log, flush=True)
    return out


def merge(parts) -> dict:
    """One solution set from parts that each computed some problems."""
    out = {k: np.array(v) for k, v in parts[0].items()}
    for p in parts[1:]:
        d = np.asarray(p["done"], bool)
        out["x"][d], out["cost"][d] = p["x"][d], p["cost"][d]
        out["done"] |= d
    return out


def main(argv=None) -> int:
    from jaxplace.policy.data import TRAIN_STREAM, problem_set
    from jaxplace.policy.train import load_config

    p = argparse.ArgumentParser(prog="python -m jaxplace.policy.experts",
                                description="search solutions of a recipe's training pool")
    p.add_argument("config", help="training recipe (its seed, pool and data are used)")
    p.add_argument("--out", required=True, help="output .npz")
    p.add_argument("--method", default="policy+brkga")
    p.add_argument("--budget", type=int, default=1000)
    p.add_argument("--part", default=None, help="I/J: problems I, I+J, I+2J, ...")
    p.add_argument("--merge", nargs="+", default=None, help="join these part files")
    args = p.parse_args(argv)
    try:
        if args.merge:
            out = merge([read_solutions(f) for f in args.merge])
        else:
            cfg = load_config(args.config)
            problems = problem_set(cfg.seed, cfg.pool, cfg.data, TRAIN_STREAM)
            idx = None
            if args.part:
                try:
                    i, j = (int(s) for s in args.part.split("/"))
                    if not 0 <= i < j:
                        raise ValueError
                except ValueError:
                    raise JaxplaceError(f"must be I/J with 0 <= I < J, got {args.part!r}",
                                        field="part") from None
                idx = range(i, len(problems), j)
            out = search_solutions(problems, args.method, args.budget, cfg.seed, idx,
                                   log=sys.stderr)
        tmp = Path(args.out).with_suffix(".tmp.npz")
        np.savez(tmp, **out)
        tmp.replace(args.out)  # nothing half-written
    except JaxplaceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
