"""The command-line tool end to end: outputs, exit codes, one-line errors."""

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxplace.cli.main import main

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "dnn-partitioning"
WORKLOADS = sorted(glob.glob(str(SHARED / "throughput" / "*" / "*.json")))


def test_info_and_partition_on_file(tmp_path, capsys):
    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": 1 + i, "size_out": 0.5} for i in range(6)],
            "edges": [{"source": i, "target": i + 1} for i in range(5)]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    assert main(["info", str(path), "-k", "2"]) == 0
    assert "lower bound 10.5" in capsys.readouterr().out
    out = tmp_path / "r.json"
    assert main(["partition", str(path), "-k", "2", "--budget", "20", "-o", str(out),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "bottleneck" in text and "stage" in text
    res = json.loads(out.read_text())
    assert res["k"] == 2 and len(res["assignment"]) == 6 and res["bottleneck"] >= 10.5


@pytest.mark.parametrize("argv, match", [
    (["partition", "missing.json", "-k", "2"], "missing.json: no such file"),
    (["partition", "{path}", "-k", "0"], "at least 1"),
    (["info", "{path}"], "has a cycle"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, argv, match):
    path = tmp_path / "cyc.json"
    path.write_text(json.dumps({"nodes": [{"id": 0, "work": 1}, {"id": 1, "work": 1}],
                                "edges": [{"source": 0, "target": 1},
                                          {"source": 1, "target": 0}]}))
    argv = [a.replace("{path}", str(path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err and "Traceback" not in err


def test_nothing_written_on_error(tmp_path):
    out = tmp_path / "r.json"
    assert main(["partition", str(tmp_path / "none.json"), "-k", "2", "-o", str(out)]) == 2
    assert not out.exists()


@pytest.mark.skipif(not WORKLOADS, reason="../shared/data not present")
@pytest.mark.parametrize("path", WORKLOADS, ids=[os.path.basename(p) for p in WORKLOADS])
def test_partition_runs_on_every_shared_file(path, capsys):
    assert main(["partition", path, "--budget", "3", "--quiet"]) == 0
    assert "bottleneck" in capsys.readouterr().out


def test_console_script_subprocess(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jaxplace", "partition", "nope.json", "-k", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr
