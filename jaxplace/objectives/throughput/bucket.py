"""`throughput_search` on a CPU through `search_many`'s compiled program.

The default search's two phases (BRKGA, its first population and mutants drawn from
the shipped policy at k >= 8; then `ShiftSearch` from the better of BRKGA's best and
the best heuristic order) are what one problem of a `search_many` bucket runs, in one
compiled program per size class (`jaxplace.search.many.buckets`: the padded `Spec`
and the problem's own block window). Running a single graph as a one-problem bucket
(`jaxplace.search.many.run.BucketRun`) instead of the driver's two phase programs
(BRKGA chunk, local-search chunk, each per class and window) compiles one program
per class instead of two, shares it with `search_many` (its CPU default advances one
problem per program call, the same program), and gives `jp.search(p, seed=s)` the
search of `search_many([p], seed=s)`.

Kept from the driver's path: the planner (its facts and exact step run before), the
budget, the stop at the lower bound, the user's time limit (counted from the
search's start, compile included; the chunk that would cross it is shortened from
the measured step time), the cancel event and Ctrl-C (the best so far, marked
interrupted), the progress bar and the observer (after every chunk; phases
"brkga" or "policy+brkga", then "local"), the MIP polish at k <= 4 (node count; under
a time limit also at most the default search's POLISH_MAX_TIME seconds), and the
result's info keys (`brkga_best`, `local_best`, `brkga_evaluations`, `policy`,
`polish`, `stopped`). Same seed, no time limit: the same answer.

`old_path_reason` says when the driver's path runs instead (`SEARCH_PATH`, options
only it knows, user seeds, another population, accelerators).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from jaxplace.progress import bar
from jaxplace.search.request import SearchRequest

#: jp.search's flat throughput search on CPUs: "bucket" (this module) or "driver"
#: (the phase programs of `throughput_search`, also where `old_path_reason` says so).
SEARCH_PATH = "bucket"
#: Options of the default search this path honours (the others need the driver's).
OPTIONS = frozenset({"search_only", "exact", "polish", "use_policy", "brkga_patience",
                     "patience", "brkga_share"})


def old_path_reason(req: SearchRequest) -> str | None:
    """Why `req` needs the driver's path (None: this one runs it)."""
    import jax

    from jaxplace.objectives.throughput.search import POPULATION, SEED_BRKGA_MIN_NODES

    if SEARCH_PATH != "bucket":
        return f"SEARCH_PATH = {SEARCH_PATH!r}"
    if jax.default_backend() != "cpu":
        return "not a CPU"
    extra = sorted(set(req.options) - OPTIONS)
    if extra:
        return f"option(s) {', '.join(extra)}"
    if req.seeds is not None:
        return "user seeds"
    if req.population_size not in (None, POPULATION):
        return "population_size"
    if not req.windowed:
        return "windowed=False"
    if req.problem.n >= SEED_BRKGA_MIN_NODES:
        return "seeded BRKGA (large graph)"
    if req.budget < 3 * POPULATION:  # the driver's path shrinks the population
        return "budget below 3 populations"
    if req.stop.target is not None and req.stop.target != req.lower_bound * (1 + 1e-6):
        return "a target other than the lower bound"
    return None


#: DP table rows of a one-problem bucket at k > 4 (k = 5..16 share one class): at
#: k = 8 the search steps cost 30-40% more CPU at 16 rows, while a program costs
#: about ten CPU seconds of XLA, and per graph the k = 8 and k = 16 searches of equal
#: N and window then share one (regal-time suite: 18 -> 15 programs). search_many
#: keeps k's own power of two: its buckets are bounded (MAX_PROGRAMS) and it weighs
#: merges by padded work.
K_ROWS_FLOOR = 16


def solo_bucket(cls: tuple):
    """The one-problem bucket of jp.search for a problem of `problem_class` `cls`."""
    from dataclasses import replace

    from jaxplace.search.many.buckets import plan_buckets

    b = plan_buckets([cls])[0]
    if b.spec.K <= 4:
        return b
    return replace(b, spec=replace(b.spec, K=min(max(b.spec.K, K_ROWS_FLOOR), b.spec.N)))


def program_key(problem) -> tuple:
    """(padded Spec, block window): what this path's compiled program for `problem`
    depends on (`jaxplace warmup` plans one search per distinct key)."""
    from jaxplace.search.many.api import prepare

    b = solo_bucket(prepare(problem, 0, coupled=False).cls)
    return b.spec, b.window


def bucket_search(req: SearchRequest):
    """The default search of `req.problem` as a one-problem bucket (module doc)."""
    from jaxplace.objectives.throughput.polish import POLISH_MAX_TIME
    from jaxplace.search.many.api import ManySettings, prepare
    from jaxplace.search.many.run import BucketRun
    from jaxplace.search.request import finish
    from jaxplace.search.result import History

    problem, opt = req.problem, req.options
    # a policy is loaded per search: its checked weights only, a file read (no model
    # is built, `jaxplace.policy.Policy`), and its forward pass compiles nothing
    prep = prepare(problem, 0, opt.get("use_policy"))
    coupled = prep.dist is not None
    limit = req.stop.time_limit
    settings = ManySettings(
        seed=req.seed, budget=req.budget, polish=opt.get("polish"),
        brkga_share=opt.get("brkga_share", ManySettings.brkga_share),
        brkga_patience=opt.get("brkga_patience"), patience=opt.get("patience"),
        polish_max_time=None if limit is None else POLISH_MAX_TIME)
    cancel = threading.Event()  # ours: Ctrl-C sets it, never the user's event
    run = BucketRun([prep], solo_bucket(prep.cls), settings, cancel)
    brkga_name = "policy+brkga" if coupled else "brkga"
    info: dict = {}
    if coupled:
        from jaxplace.policy import default_policy_name

        info["policy"] = default_policy_name(problem)
    with bar(req.budget, "default", enabled=req.progress) as pb:
        run.on_chunk = _reporter(req, pb, brkga_name, cancel)
        try:
            run.compile()  # the first zero-step call: XLA compiles (uninterruptible)
        except KeyboardInterrupt:
            return finish(req, "default", prep.x_seed, 0, History.empty(), True,
                          info={**info, "start": "heuristic", "found_by": "heuristic"})
        left = None if limit is None else max(limit - (time.perf_counter() - req.start),
                                              1e-9)
        (_, res), = run.results(left)
    state = run.state
    info.update(res.info)
    if state is not None:
        fit = np.asarray(state.fit)[0]
        local_start = int(np.asarray(state.local_start)[0])
        info["brkga_best"] = float(np.min(fit))
        info["brkga_evaluations"] = local_start or int(np.asarray(state.evals)[0])
        info["local_best"] = [float(np.asarray(state.best_f)[0])] if local_start else []
    polished = info.get("polish", {}).get("decoded") is not None and \
        info["polish"]["decoded"] <= res.cost
    if info.get("start") == "heuristic" and not polished:
        info["found_by"] = "heuristic"
    e, t, b = run.hist[0]
    shift = run.start - req.start  # the bucket's clock starts after its compile
    history = History(np.asarray(e, np.int64), np.asarray(t, np.float64) + shift,
                      np.asarray(b, np.float64))
    if res.evaluations > (e[-1] if e else 0):  # the polish's re-decode
        history = history.concat(History(
            np.array([res.evaluations], np.int64),
            np.array([time.perf_counter() - req.start]), np.array([res.cost])))
    return finish(req, "default", res.priorities, res.evaluations, history,
                  res.interrupted, info=info)


def _reporter(req: SearchRequest, pb, brkga_name: str, cancel: threading.Event):
    """The bucket's per-chunk hook: the progress bar, the observer, the user's cancel
    event (copied into the bucket's own, which the bucket checks between chunks)."""
    from jaxplace.search.many.program import LOCAL
    from jaxplace.search.stop import Progress

    n, lb = req.problem.n, req.lower_bound
    seen = [0]

    def report(state) -> None:
        evals = int(np.asarray(state.evals)[0])
        best = float(np.asarray(state.best_f)[0])
        local = int(np.asarray(state.local_start)[0]) > 0 or \
            int(np.asarray(state.phase)[0]) == LOCAL
        pb.update(evals - seen[0])
        seen[0] = evals
        pb.set_postfix_str(f"best={best:.6g} ratio={best / lb:.4f}" if lb else
                           f"best={best:.6g}", refresh=False)
        if req.observer is not None:
            x = np.asarray(state.best_x)[0, :n].astype(np.float32)
            req.observer(Progress(evals, best, x, time.perf_counter() - req.start,
                                  "local" if local else brkga_name))
        if req.stop.cancelled():
            cancel.set()

    return report


__all__ = ["K_ROWS_FLOOR", "OPTIONS", "SEARCH_PATH", "bucket_search", "old_path_reason",
           "program_key", "solo_bucket"]
