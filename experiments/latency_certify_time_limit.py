"""Does `certify` of a latency problem keep its time limit? (issue 50)

GPT-like graph of 413 ops (`gpt_like(8, 1024, 16)`) on the moirai_inter cluster,
bounds simple + milp, time_limit 5 s, the partition given (EFT seed, as the CLI gives
its search result). "unbounded build": the MILP's model build ignores the deadline
(as before the fix); "deadline": the build stops at it (the closed-form bound then).

    nice python experiments/latency_certify_time_limit.py
"""

import time
import warnings

warnings.filterwarnings("ignore")

import jaxplace as jp  # noqa: E402
from jaxplace.cluster import load_cluster  # noqa: E402
from jaxplace.latency import milp  # noqa: E402
from jaxplace.latency.models import gpt_like  # noqa: E402

p = jp.Problem(gpt_like(8, 1024, 16), cluster=load_cluster("moirai_inter"),
               objective="latency")
start = p.objective_impl.start_partition(p)
checked = milp._check_deadline
for label, check in (("unbounded build", lambda deadline: None), ("deadline", checked)):
    milp._check_deadline = check
    t = time.perf_counter()
    cert = jp.certify(p, start, methods=("simple", "milp"), time_limit=5.0)
    print(f"{label}: n={p.n} wall {time.perf_counter() - t:.1f} s, bound "
          f"{cert.lower_bound * 1e3:.4g} ms, makespan {cert.upper_bound * 1e3:.4g} ms, "
          + ", ".join(f"{r.name} {r.time:.1f} s ({r.status})" for r in cert.results),
          flush=True)
milp._check_deadline = checked
