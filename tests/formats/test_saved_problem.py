"""A saved partition reloads at its saved cost, under the problem it was saved with
(`certify --partition`, `load_assignment`), and the refusals of problems no partition
fits are one line naming the field."""

from __future__ import annotations

import json

import pytest

import jaxplace as jp
from jaxplace.cli.main import main
from jaxplace.formats.nodelink import nodelink_data
from jaxplace.formats.results import load_assignment, saved_problem

# three ops, a file asking for 6 accelerators and one CPU: the CLI caps k at 3 and puts
# op "a" (cheap on the CPU only) on the CPU block, numbered 3 in the result
NEURIPS = {
    "maxSizePerFPGA": 100.0, "maxFPGAs": 6, "maxCPUs": 1,
    "nodes": [{"name": n, "id": i + 1, "supportedOnFpga": 1, "cpuLatency": c,
               "fpgaLatency": f, "isBackwardNode": 0, "size": 1.0}
              for i, (n, c, f) in enumerate([("a", 5.0, 50.0), ("b", 40.0, 4.0),
                                             ("c", 40.0, 4.5)])],
    "edges": [{"sourceId": 1, "destId": 2, "cost": 0.5, "size": 0.5},
              {"sourceId": 2, "destId": 3, "cost": 0.5, "size": 0.5}],
}


def _one_error_line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.splitlines()
           if ln.startswith("jaxplace: error")]
    assert len(err) == 1
    return err[0]


def test_cpu_block_saved_under_a_capped_k_reloads_at_its_cost(tmp_path, capsys):
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(NEURIPS))
    res, cert = tmp_path / "r.json", tmp_path / "c.json"
    assert main(["partition", str(graph), "-o", str(res), "--quiet"]) == 0
    saved = json.loads(res.read_text())
    assert saved["k"] == 3 and saved["cpus"] == 1
    assert saved["assignment"][0] == 3  # the CPU block, numbered from the capped k
    # the library, with the file's k = 6: block 3 of the result is the CPU
    problem = jp.load_problem(graph)
    assert problem.k == 6
    a = load_assignment(res, problem)
    assert a[0] == problem.k
    assert jp.evaluate_partition(problem, a).cost == pytest.approx(saved["bottleneck"],
                                                                   rel=1e-12)
    # the CLI
    capsys.readouterr()
    assert main(["certify", str(graph), "--partition", str(res), "--quiet", "--methods",
                 "simple", "-o", str(cert)]) == 0
    c = json.loads(cert.read_text())
    assert c["certificate"]["upper_bound"] == pytest.approx(saved["bottleneck"], rel=1e-12)
    assert c["bottleneck"] == pytest.approx(saved["bottleneck"], rel=1e-12)


def _chain(tmp_path):
    g = jp.CompGraph([4.0, 1.0, 1.0, 4.0, 2.0, 3.0],
                     [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                     size_param=[3.0, 1.0, 1.0, 3.0, 2.0, 2.0],
                     size_out=[2.0, 3.0, 1.0, 2.0, 4.0, 0.0])
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(nodelink_data(g)))
    return path


FLAGS = ["-k", "3", "--bandwidth", "0.5", "--memory", "2", "--capacity", "6"]


def test_certify_partition_takes_the_saved_problem(tmp_path, capsys):
    """The result's k, bandwidth, memory and capacity, not the graph file's defaults."""
    path = _chain(tmp_path)
    res, cert = tmp_path / "r.json", tmp_path / "c.json"
    assert main(["partition", str(path), *FLAGS, "--budget", "50", "-o", str(res),
                 "--quiet"]) == 0
    saved = json.loads(res.read_text())
    # the same plan under the file's defaults (k = 1 is refused: it has 3 blocks;
    # bandwidth 1, no memory term) costs differently
    plain = jp.Problem(jp.load_graph(path), 3)
    assert jp.evaluate_partition(plain, saved["assignment"]).cost != pytest.approx(
        saved["bottleneck"])
    assert main(["certify", str(path), "--partition", str(res), "--methods", "simple",
                 "--quiet", "-o", str(cert)]) == 0
    c = json.loads(cert.read_text())
    assert c["certificate"]["upper_bound"] == pytest.approx(saved["bottleneck"], rel=1e-12)
    for f in ("k", "bandwidth", "memory", "capacity"):
        assert c[f] == saved[f], f
    # the same flags again agree with the file
    assert main(["certify", str(path), "--partition", str(res), "--methods", "simple",
                 "--quiet", *FLAGS]) == 0


@pytest.mark.parametrize("flag,value,field", [("--capacity", "7", "capacity"),
                                              ("--bandwidth", "1", "bandwidth"),
                                              ("--memory", "3", "memory"),
                                              ("-k", "2", "k")])
def test_certify_partition_refuses_a_conflicting_flag(tmp_path, capsys, flag, value, field):
    path = _chain(tmp_path)
    res, cert = tmp_path / "r.json", tmp_path / "c.json"
    assert main(["partition", str(path), *FLAGS, "--budget", "50", "-o", str(res),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["certify", str(path), "--partition", str(res), "--methods", "simple",
                 "--quiet", flag, value, "-o", str(cert)]) == 2
    line = _one_error_line(capsys)
    assert f"{field}: the partition was saved with {field}" in line
    assert not cert.exists()


def test_saved_problem_keeps_a_matching_problem(tmp_path):
    path = _chain(tmp_path)
    res = tmp_path / "r.json"
    problem = jp.Problem(jp.load_graph(path), 3, bandwidth=0.5, memory=2.0, capacity=6.0)
    jp.save_result(res, problem, [0, 0, 1, 1, 2, 2])
    assert saved_problem(res, problem) is problem
    other = saved_problem(res, jp.Problem(jp.load_graph(path), 4))
    assert (other.k, other.bandwidth, other.memory, other.capacity) == (3, 0.5, 2.0, 6.0)


@pytest.mark.parametrize("capacity", ["1", "3"])
def test_partition_refuses_an_infeasible_capacity(tmp_path, capsys, capacity):
    """capacity 1: every op alone exceeds it; 3: four ops of 2 in two blocks."""
    g = jp.CompGraph([1.0, 2.0, 3.0, 4.0], [(0, 1), (1, 2), (2, 3)],
                     size_param=[2.0] * 4, size_out=[1.0] * 4)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(nodelink_data(g)))
    out = tmp_path / "r.json"
    assert main(["partition", str(path), "-k", "2", "--capacity", capacity, "-o",
                 str(out), "--quiet"]) == 2
    line = _one_error_line(capsys)
    assert "capacity: no partition into 2 blocks fits capacity" in line
    assert not out.exists()


def test_cpu_only_op_refused_through_the_cli(tmp_path, capsys):
    data = json.loads(json.dumps(NEURIPS))
    data["maxCPUs"] = 0
    data["nodes"][1]["supportedOnFpga"] = 0
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "r.json"
    assert main(["partition", str(path), "-o", str(out), "--quiet"]) == 2
    line = _one_error_line(capsys)
    assert "cpus:" in line and "supported_on_accel" in line and "assignment" not in line
    assert not out.exists()
