"""`python -m experiments.bench.spatial` (outside the wheel) at its smallest."""

from lab import run_lab_bench


def test_bench_spatial_smoke(capsys):
    assert run_lab_bench("spatial", ["--models", "yolo", "--sizes", "64", "--devices", "2",
                 "--no-unequal", "--no-bbgrap"]) == 0
    out = capsys.readouterr().out
    assert "yolo" in out and "best/one" in out
