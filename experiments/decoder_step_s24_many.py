"""Warm search_many on some regal-time suite graphs: costs, evaluations, priorities
(sha1) and the warm calls' wall and process CPU time (decoder_step_s24.md).

    JAXPLACE_CACHE_DIR= nice python experiments/decoder_step_s24_many.py 0,1,2,3,4,5,6,7,8 3000
    # before: the same with PYTHONPATH=<`git archive 0888e9b jaxplace` folder>, run from /tmp
"""
import hashlib
import sys
import time

import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import bucket_summary, search_many


def sha(x) -> str:
    return hashlib.sha1(np.asarray(x).tobytes()).hexdigest()[:12]


def main():
    print(jp.__file__)
    idx = [int(x) for x in sys.argv[1].split(",")]
    budget = int(sys.argv[2])
    probs = [jp.Problem(g, k) for i, g, k in instances(30, [4, 8, 16], 0) if i in idx]
    print([(b.spec.N, b.spec.K, b.spec.D, b.spec.S, b.window)
           for b in bucket_summary(probs)])
    rs = search_many(probs, seed=0, budget=budget, polish=False)
    for r in rs:
        print(repr(r.cost), r.evaluations, sha(r.priorities))
    for rep in range(2):
        t, c = time.perf_counter(), time.process_time()
        again = search_many(probs, seed=0, budget=budget, polish=False)
        load = open("/proc/loadavg").read().split()[0]
        print(f"warm {rep}: wall {time.perf_counter() - t:.2f} s, CPU "
              f"{time.process_time() - c:.2f} s, load {load}",
              [r.cost for r in again] == [r.cost for r in rs], flush=True)


if __name__ == "__main__":
    main()
