"""The search's block window: one restricted window per padded class (few programs)."""

from __future__ import annotations

import dataclasses

import numpy as np

import jaxplace as jp
from jaxplace.decoder.layout import Spec
from jaxplace.decoder.window import (
    WINDOW_CLASS_MAX_FRACTION,
    WINDOW_SLACK,
    block_bounds,
    class_window,
    search_window,
)
from jaxplace.generators import regal_set
from jaxplace.search.request import SearchRequest


def test_class_window_depends_on_the_class_only():
    base = Spec(N=192, T=192, D=16, S=16, K=8, use_param=False)
    for N in (64, 96, 128, 192, 256, 384):
        for K in (1, 2, 4, 8, 16, 32, 64):
            spec = dataclasses.replace(base, N=N, T=N, K=min(K, N))
            L = class_window(spec)
            if L is not None:
                assert L % 16 == 0 and 0 < L <= WINDOW_CLASS_MAX_FRACTION * N
    # larger k: shorter blocks, never a longer window
    ws = [class_window(dataclasses.replace(base, K=K)) or 192 for K in (4, 8, 16, 32)]
    assert ws == sorted(ws, reverse=True)


def test_search_window_is_the_class_window_or_full():
    graphs = regal_set(9, seed=3)
    seen: dict = {}
    for i, g in enumerate(graphs):
        p = jp.Problem(g, (4, 8, 16)[i % 3])
        req = SearchRequest(p, seed=0, budget=1)
        b = block_bounds(p)
        w = req.window
        assert w == search_window(b, req.spec, req.first_solution.cost)
        assert w in (None, class_window(req.spec))
        seen.setdefault((req.spec.N, req.spec.K), set()).add(w)
        if w is not None:  # exact for every partition up to 1.05x the first solution
            need = int(np.searchsorted(b, WINDOW_SLACK * req.first_solution.cost,
                                       side="right"))
            assert need <= w
    assert all(len(ws) <= 2 for ws in seen.values())


def test_search_window_falls_back_to_the_full_dp():
    spec = Spec(N=96, T=96, D=16, S=16, K=16, use_param=False)
    W = class_window(spec)
    bounds = np.arange(1.0, 97.0)  # a block of L+1 units costs at least L+1
    assert search_window(bounds, spec, (W - 1) / WINDOW_SLACK) == W
    assert search_window(bounds, spec, (W + 2) / WINDOW_SLACK) is None
    assert search_window(bounds, spec, None) is None
    assert search_window(bounds, spec, float("inf")) is None
