"""Does a second process really read search_many's programs from the persistent
cache (issue 51 item 2)? Run twice with the same fresh JAXPLACE_CACHE_DIR:

    D=$(mktemp -d); for i in 1 2; do JAXPLACE_CACHE_DIR=$D python \
        experiments/engine_cache_probe.py; done
"""
import sys
import time

t0 = time.perf_counter()
import jaxplace as jp  # noqa: E402
from jaxplace.bench.compiles import count_compiles  # noqa: E402
from jaxplace.generators import regal  # noqa: E402
from jaxplace.search.many import search_many  # noqa: E402

sys.path.insert(0, "tests")
probs = [jp.Problem(regal(s, n=60), k) for s, k in ((1, 4), (2, 8))]
t1 = time.perf_counter()
with count_compiles() as counts:
    rs = search_many(probs, budget=1200, exact=False, polish=False)
t2 = time.perf_counter()
print(f"import {t1 - t0:.1f} s, search_many {t2 - t1:.1f} s, _many_chunk built "
      f"{counts['_many_chunk']}, cache hits {counts.cache_hits['_many_chunk']}, "
      f"costs {[round(r.cost, 6) for r in rs]}")
