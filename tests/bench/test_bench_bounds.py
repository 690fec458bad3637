"""`jaxplace bench bounds` (issue 53): the ladder with BB&R beside the MIP rungs, the
share of graphs proven optimal per k, on REGAL-like graphs and on the ONNX models of
the test set (`jaxplace.bench.bounds_onnx`), at small size."""

from __future__ import annotations

import argparse
import re

import pytest

from jaxplace.bench import bounds
from jaxplace.bench.bounds_onnx import cnn_model, light_model_paths, onnx_graphs, onnx_names

onnx = pytest.importorskip("onnx")


def _args(*argv):
    p = argparse.ArgumentParser()
    bounds.add_arguments(p)
    return p.parse_args(list(argv))


def _row(table: str, head: str) -> list[str]:
    """The cells of the first table row whose first cell is `head`."""
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == head:
            return cells[1:]
    raise AssertionError(f"no row {head!r} in\n{table}")


def test_onnx_models_are_built_or_found_without_a_download():
    """The CNNs are made in-process and import as costed graphs; the light models are
    those the onnx package ships (when it ships them); an unknown name is refused."""
    assert onnx_names()[:2] == ["cnn2", "cnn8"]
    cnn = dict(onnx_graphs(["cnn2", "cnn8"]))
    # two Conv + Relu and a max pool, per residual block two Conv + Relu and an Add,
    # then BN, pool, flatten, Gemm, softmax
    for b in (2, 8):
        assert cnn[f"cnn{b}"].num_nodes == 5 + 5 * b + 5
    for g in cnn.values():
        assert g.work.sum() > 0 and g.size_param.sum() > 0
        assert g.meta["unknown_ops"] == []
    onnx.checker.check_model(cnn_model(3))
    light = light_model_paths()
    assert all(name.startswith("light_") for name in light)
    assert list(light) == onnx_names()[2:]
    with pytest.raises(ValueError, match="unknown ONNX model"):
        onnx_graphs(["resnet1000"])


def test_onnx_suite_small():
    """The ONNX suite at 2 s per rung on the two smallest models: every rung's bound
    checked against the DP's optimum (none above it), BB&R beside the MIPs in issue
    53's table with the share each proves, and BB&R proves every instance (their
    ideals are few)."""
    models = ["cnn2"] + [m for m in ("light_zfnet512",) if m in light_model_paths()]
    args = _args("--suite", "onnx", "--models", ",".join(models), "--ks", "2,4",
                 "--time-limit", "2", "--upper", "random", "--samples", "4")
    table = bounds.run_onnx(args)
    count = len(models)
    assert f"{count} ONNX models" in table
    assert _row(table, "proven by bbr") == [f"{count}/{count}"] * 2
    assert _row(table, "proven optimal") == [f"{count}/{count}"] * 2
    for m in ("simple", "bottleneck", "bbr", "exact"):
        assert len(_row(table, f"{m} (ours)")) == 2
    # issue 53's layout: the MIPs and BB&R per k, with the share each proves
    head = _row(table, "k")
    assert head[:3] == ["bottleneck", "bbr", "exact"] and head[3:5] == ["best bound",
                                                                          "proven"]
    row = _row(table, "4")
    assert re.fullmatch(r"1\.0000 \(\d/\d\)", row[1]) and row[1].endswith(f"({count}/{count})")
    assert row[4] == f"{count}/{count} (100%)"
    assert re.search(rf"optimum known for {count}/{count} at k=2, {count}/{count} at k=4; "
                     r"bounds above it or upper bounds below it: 0$", table, re.M)


def test_regal_table_prints_the_share_proven():
    """The REGAL suite at 1 s per rung (one 157-op graph, a sampled upper bound): the
    share proven per k, by the ladder and per rung, and the issue's columns (paper,
    target)."""
    args = _args("--count", "1", "--ks", "4", "--time-limit", "1", "--upper", "random",
                 "--samples", "4", "--methods", "simple,bbr")
    table = bounds.run_regal(args)
    assert re.fullmatch(r"[01]/1", _row(table, "proven optimal")[0])
    assert re.fullmatch(r"[01]/1", _row(table, "proven by bbr")[0])
    assert _row(table, "proven by simple") == ["0/1"]  # a sampled plan is not optimal
    head = _row(table, "k")
    assert head == ["bbr", "best bound", "proven", "ICML paper, 60 min Gurobi", "target"]
    row = _row(table, "4")
    assert row[-2:] == ["0.9579", "0.97"]
    assert float(row[1]) <= 1.0


def test_issue_table_counts():
    """The issue table's cells: the geometric mean LB/UB and the share proven per rung."""
    from jaxplace.bounds.registry import BOUNDS

    frac = {"exact": {4: [1.0, 0.25]}, "bbr": {4: [1.0, 1.0]}}
    lines = bounds._issue_table([4], ["exact", "bbr"], frac, {4: [1.0, 1.0]}, {4: 2}, 2,
                                BOUNDS, {"exact": {4: 1}, "bbr": {4: 2}}, paper=False)
    assert lines[0] == "| k | exact | bbr | best bound | proven |"
    assert lines[2] == "| 4 | 0.5000 (1/2) | 1.0000 (2/2) | 1.0000 | 2/2 (100%) |"


def test_cli_onnx_suite_writes_its_table(tmp_path, capsys):
    """`jaxplace bench bounds --suite onnx ... --markdown F`: the command's wiring, the
    table printed and written."""
    from jaxplace.cli.main import main

    out = tmp_path / "t.md"
    assert main(["bench", "bounds", "--suite", "onnx", "--models", "cnn2", "--ks", "3",
                 "--time-limit", "2", "--upper", "random", "--samples", "2",
                 "--methods", "simple,bbr", "--markdown", str(out)]) == 0
    table = out.read_text()
    assert _row(table, "proven by bbr") == ["1/1"]
    assert "| k | bbr | best bound | proven |" in table
    assert table.strip() in capsys.readouterr().out


def test_an_unknown_model_is_one_line_exit_2(tmp_path, capsys):
    from jaxplace.cli.main import main

    out = tmp_path / "t.md"
    assert main(["bench", "bounds", "--suite", "onnx", "--models", "bogus", "--ks", "4",
                 "--markdown", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "models" in err[0] and "bogus" in err[0]
    assert not out.exists()
