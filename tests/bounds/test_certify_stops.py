"""The certificate's default ladder stops once a rung proves the partition optimal
(the rungs after it cannot raise the bound); named methods, or `every_rung`, all run."""

import jaxplace as jp
from jaxplace.bounds.certificate import certify
from jaxplace.generators import regal

METHODS = ("simple", "bottleneck", "exact")


def test_rungs_after_a_proof_are_skipped_and_every_rung_runs_them():
    p = jp.Problem(regal(1, n=12), 1)  # one device: the simple bound is the cost
    cert = certify(p, methods=METHODS, time_limit=20, every_rung=False)
    assert cert.optimal and cert.method == "simple"
    assert [r.status for r in cert.results][1:] == ["skipped (proven)"] * 2
    full = certify(p, methods=METHODS, time_limit=20)  # named methods: each runs
    assert full.optimal and full.lower_bound == cert.lower_bound
    assert all(not r.status.startswith("skipped") for r in full.results)


def test_an_open_gap_runs_the_next_rung():
    p = jp.Problem(regal(2, n=14), 3)
    cert = certify(p, methods=METHODS, time_limit=20, every_rung=False)
    # neither closed form nor relaxation meets the cost here: each rung runs
    assert cert.result("simple").bound < cert.result("bottleneck").bound < cert.upper_bound
    assert cert.result("exact").status != "skipped (proven)"
    assert cert.optimal and cert.method == "exact"  # the exact MIP closes it


def test_the_default_ladder_stops_at_a_proof():
    p = jp.Problem(regal(1, n=12), 1)
    cert = jp.certify(p, time_limit=20)
    assert cert.optimal
    assert any(r.status == "skipped (proven)" for r in cert.results)


def test_the_cli_stops_a_picked_ladder_and_runs_named_methods(tmp_path, capsys):
    from jaxplace.cli.main import main

    path = tmp_path / "g.json"
    assert main(["generate", "regal", "--seed", "1", "--n", "12", "-o", str(path)]) == 0
    assert main(["certify", str(path), "-k", "1", "--time-limit", "20", "-q"]) == 0
    assert "skipped (proven)" in capsys.readouterr().out
    assert main(["certify", str(path), "-k", "1", "--time-limit", "20", "-q",
                 "--methods", "simple,bottleneck"]) == 0
    assert "skipped (proven)" not in capsys.readouterr().out
