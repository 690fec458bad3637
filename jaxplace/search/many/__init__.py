"""`search_many(problems)`: many throughput problems in few compiled programs (see
`api` for the whole story).

Modules, lowest first: `buckets` (size classes and padded shapes), `program` (the
compiled step of a bucket), `run` (one bucket's host loop, streaming, MIP polish),
the executors (a private pool of host threads; `ray_tasks` on Ray), `api` (validation,
the exact first step, `search_many` / `iter_search_many`); `islands_mode`
(`mode="islands"`: island BRKGA sized to the device) and `islands_method` (the same
for one problem, as the search method "islands").
"""

from jaxplace.search.many.api import (
    CHUNK_STEPS,
    MANY_POLISH_MAX_TIME,
    METHOD,
    POPULATION,
    ManySettings,
    Prepared,
    bucket_summary,
    iter_search_many,
    policy_distribution,
    prepare,
    search_many,
    seed_result,
)
from jaxplace.search.many.buckets import MAX_PROGRAMS

__all__ = ["CHUNK_STEPS", "MANY_POLISH_MAX_TIME", "MAX_PROGRAMS", "METHOD", "POPULATION",
           "ManySettings", "Prepared", "bucket_summary", "iter_search_many",
           "policy_distribution", "prepare", "search_many", "seed_result"]
