"""`jaxplace partition-many --mode`: the batched search's mode from the command line
(islands / default / auto), and its refusals as one-line errors with nothing written."""

from __future__ import annotations

import json

import pytest

from jaxplace.cli.main import main


def _graph(path, n=8):
    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": 1 + (i * 7) % 5, "size_out": 0.5} for i in range(n)],
            "edges": [{"source": i, "target": j} for i in range(n) for j in (i + 1, i + 3)
                      if j < n]}
    path.write_text(json.dumps(data))
    return path


def test_mode_islands_runs_the_island_search(tmp_path):
    """Small graphs the exact step proves never reach the search: the answers exist."""
    g = _graph(tmp_path / "g.json")
    out = tmp_path / "out"
    assert main(["partition-many", str(g), "-k", "2,3", "--mode", "islands", "--budget",
                 "96", "-o", str(out), "-q"]) == 0
    rows = [json.loads(x) for x in (out / "summary.jsonl").read_text().splitlines()]
    assert sorted(r["k"] for r in rows) == [2, 3]
    for r in rows:
        res = json.loads(open(r["output"]).read())
        assert r["cost"] >= r["lower_bound"] * (1 - 1e-9) and res["k"] == r["k"]


@pytest.mark.parametrize("flag, ray, want", [
    ("auto", None, None), ("default", None, "default"), ("islands", None, "islands"),
    ("auto", "local", "default")])
def test_mode_reaches_search_many(tmp_path, monkeypatch, flag, ray, want):
    """--mode is search_many's `mode` (auto: None, its platform choice; under --ray the
    default mode, since islands run on this process's devices only)."""
    import jaxplace

    seen = {}

    def fake(problems, **kw):
        seen.update(kw)
        return []

    monkeypatch.setattr(jaxplace, "search_many", fake)
    g = _graph(tmp_path / "g.json")
    argv = ["partition-many", str(g), "-k", "2", "--mode", flag, "-o", str(tmp_path / "o"),
            "-q"] + (["--ray", ray] if ray else [])
    assert main(argv) == 0
    assert "mode" in seen and seen["mode"] == want


@pytest.mark.parametrize("argv, message", [
    (["--mode", "islands", "--ray", "local"], "--mode: mode 'islands'"),
])
def test_refusals_are_one_line_exit_2_nothing_written(tmp_path, capsys, argv, message):
    g = _graph(tmp_path / "g.json")
    out = tmp_path / "out"
    assert main(["partition-many", str(g), "-k", "2", "-o", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_unknown_mode_is_an_argument_error(tmp_path, capsys):
    g = _graph(tmp_path / "g.json")
    assert main(["partition-many", str(g), "-k", "2", "--mode", "fast"]) == 2
    assert "invalid choice: 'fast'" in capsys.readouterr().err
