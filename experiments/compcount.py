"""Programs compiled and wall time of a search method over fresh REGAL graphs.

    JAXPLACE_CACHE_DIR="" python experiments/compcount.py COUNT [METHOD] [--seed S] [--warm]

METHOD: "default" (default) or "brkga" (brkga-10000). Graph i of
`regal_set(COUNT, seed=S, n_range=(50, 200))` gets k = (4, 8, 16)[i % 3] and search
seed i. Prints per graph its shape key (Spec N, K, degree widths D/S, block window),
the search programs (`_loop_chunk`, `score_chunk`, `decode_chunk`) built during it and
its cold wall; with --warm the same searches again (everything compiled) for the warm
wall. Totals: programs, cold wall (from the process start, imports included, and of
the searches alone), warm wall, geometric mean of cost / simple lower bound.

Exploration levers (monkeypatched here, for measuring before changing the library):
JP_SPEC_STEPS (request.SPEC_STEPS), JP_KMIN (search_spec's K padded to at least this),
JP_DEGREE_FLOOR (layout.DEGREE_FLOOR), JP_NOWINDOW=1 (full DP: req.windowed False),
JP_NBR_WIDTH (the local search's neighbour table padded to at least this width; the
table lives in jaxplace/search/programs.py, patched here only), JP_OLD_WINDOW=1 (the
window rule before 2026-11-23 session 3: `window_for` rounded up to a power of two).
"""
import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from compiles import count_compiles  # noqa: E402

import jaxplace as jp  # noqa: E402
from jaxplace.generators import regal_set  # noqa: E402
from jaxplace.search import request  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("count", type=int)
ap.add_argument("method", nargs="?", default="default")
ap.add_argument("--seed", type=int, default=77)
ap.add_argument("--warm", action="store_true")
args = ap.parse_args()

from jaxplace.decoder import layout  # noqa: E402

if "JP_SPEC_STEPS" in os.environ:
    request.SPEC_STEPS = int(os.environ["JP_SPEC_STEPS"])
if "JP_DEGREE_FLOOR" in os.environ:
    layout.DEGREE_FLOOR = int(os.environ["JP_DEGREE_FLOOR"])
if "JP_KMIN" in os.environ:
    _kmin, _orig = int(os.environ["JP_KMIN"]), layout.search_spec

    def _spec(problem, structure=None, steps=2):
        import dataclasses

        s = _orig(problem, structure, steps)
        return dataclasses.replace(s, K=min(max(s.K, _kmin), s.N))

    layout.search_spec = _spec
if os.environ.get("JP_NOWINDOW"):
    _init = request.SearchRequest.__init__

    def _nowin(self, *a, **kw):
        _init(self, *a, **kw)
        self.windowed = False

    request.SearchRequest.__init__ = _nowin

if "JP_NBR_WIDTH" in os.environ:
    import jax.numpy as jnp

    from jaxplace.search import local

    _nbr, _width = local.neighbour_table, int(os.environ["JP_NBR_WIDTH"])

    def _table(problem, N):
        table, deg = _nbr(problem, N)
        if table.shape[1] < _width:
            table = jnp.pad(table, ((0, 0), (0, _width - table.shape[1])))
        return table, deg

    local.neighbour_table = _table

if os.environ.get("JP_OLD_WINDOW"):
    def _old_window(self):
        from jaxplace.decoder.window import WINDOW_MAX_FRACTION, block_bounds, window_for

        first = self.first_solution
        if self.latency or self.hetero or not self.windowed or first is None or \
                not np.isfinite(first.cost):
            return None
        L = window_for(block_bounds(self.problem), self.spec, first.cost)
        if L is None:
            return None
        L = 1 << (L - 1).bit_length()
        return None if L > WINDOW_MAX_FRACTION * self.spec.N else L

    request.SearchRequest.window = request.SearchRequest.__dict__["window"].__class__(
        _old_window)
    request.SearchRequest.window.__set_name__(request.SearchRequest, "window")

# the window and spec each search uses (recorded from the SearchRequest it builds)
seen = []
_win = request.SearchRequest.window.func


def _window(self):
    w = _win(self)
    seen.append((self.spec, w))
    return w


request.SearchRequest.window = request.SearchRequest.__dict__["window"].__class__(_window)
request.SearchRequest.window.__set_name__(request.SearchRequest, "window")

budget = None if args.method == "default" else 10000
graphs = list(regal_set(args.count, seed=args.seed, n_range=(50, 200)))
problems = [jp.Problem(g, (4, 8, 16)[i % 3]) for i, g in enumerate(graphs)]
big = ("_loop_chunk", "score_chunk", "decode_chunk")
t0 = time.perf_counter()
ratios, cold, keys = [], [], set()
print(f"{args.method}: {args.count} graphs (regal_set seed {args.seed}), "
      f"load {os.getloadavg()[0]:.2f}", flush=True)
with count_compiles() as counts:
    for i, p in enumerate(problems):
        before = counts.built(big)
        del seen[:]
        t = time.perf_counter()
        r = jp.search(p, args.method, budget=budget, seed=i, progress=False)
        cold.append(time.perf_counter() - t)
        ratios.append(r.cost / r.lower_bound)
        s, w = seen[0] if seen else (None, None)
        key = (s.N, s.K, s.D, s.S, w) if s is not None else None
        new = key not in keys
        keys.add(key)
        deg = np.bincount(p.graph.edges.ravel(), minlength=p.n).max(initial=0)
        nbr = 1 << max(int(deg) - 1, 0).bit_length()  # local search's neighbour width
        print(f"  graph {i:2d} n={p.n:3d} k={p.k:2d} key(N,K,D,S,window)={key} nbr {nbr:2d} "
              f"{'new' if new else 'seen'} programs+{counts.built(big) - before} "
              f"cold {cold[-1]:6.2f}s cost/LB {ratios[-1]:.4f}", flush=True)
cold_total = time.perf_counter() - t0
progs = {k: counts[k] for k in big if counts[k]}
line = (f"{args.method}: {args.count} graphs, {len(keys)} keys, programs {sum(progs.values())} "
        f"{progs} (cache hits {sum(counts.cache_hits[k] for k in big)}), cold "
        f"{time.perf_counter() - T_START:.1f}s from process start ({cold_total:.1f}s "
        f"searches), geomean cost/LB {np.exp(np.mean(np.log(ratios))):.4f}")
if args.warm:
    warm, wr = [], []
    for i, p in enumerate(problems):
        t = time.perf_counter()
        r = jp.search(p, args.method, budget=budget, seed=i, progress=False)
        warm.append(time.perf_counter() - t)
        wr.append(r.cost / r.lower_bound)
        print(f"  warm {i:2d} {warm[-1]:6.2f}s cost/LB {wr[-1]:.4f}", flush=True)
    line += (f", warm {sum(warm):.1f}s (geomean cost/LB {np.exp(np.mean(np.log(wr))):.4f})")
print(line + f", load {os.getloadavg()[0]:.2f}")
