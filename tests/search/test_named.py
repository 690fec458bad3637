"""`search_named`: a benchmark's method name to a `search` call (the names of `jaxplace
bench search` and `jaxplace warmup --methods`)."""

import pytest

import jaxplace.search.named as named
from jaxplace.search import search_named


@pytest.mark.parametrize("name, method, extra", [
    ("random-300", "random", {"budget": 300}),
    ("brkga-20x50", "brkga", {"budget": 1000, "population_size": 20}),
    ("brkga-10000", "brkga", {"budget": 10_000, "population_size": 100}),  # the alias
    ("brkga-100", "brkga", {"budget": 100, "population_size": 10}),
    ("default", "default", {}),
])
def test_names_resolve_to_a_search_call(monkeypatch, name, method, extra):
    calls = []
    monkeypatch.setattr(named, "search", lambda problem, m, **kw: calls.append((m, kw)))
    search_named("P", name, 7, time_limit=2.0)
    assert calls == [(method, {**extra, "seed": 7, "progress": False, "time_limit": 2.0})]
