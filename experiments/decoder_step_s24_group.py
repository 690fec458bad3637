"""search_many with one problem per program call (unbatched step) against the whole
bucket in one call (vmapped): the results must be identical (decoder_step_s24.md).

    JAXPLACE_CACHE_DIR= nice python experiments/decoder_step_s24_group.py
"""
import hashlib

import numpy as np

import jaxplace as jp
from jaxplace.bench.search_time import instances
from jaxplace.search.many import bucket_summary, search_many


def main():
    probs = [jp.Problem(g, k) for i, g, k in instances(30, [4, 8, 16], 0)
             if i in (8, 11, 17, 26)]  # one bucket: N = 128, K = 16, window 32
    print([(b.spec.N, b.spec.K, b.spec.D, b.window, b.members)
           for b in bucket_summary(probs)])
    out = {}
    for group in (1, 4):
        rs = search_many(probs, seed=0, budget=800, polish=False, group=group)
        out[group] = [(r.cost, r.evaluations,
                       hashlib.sha1(np.asarray(r.priorities).tobytes()).hexdigest()[:12])
                      for r in rs]
        print("group", group, out[group], flush=True)
    print("group 1 == group 4:", out[1] == out[4])


if __name__ == "__main__":
    main()
