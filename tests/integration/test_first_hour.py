"""The small things a new user meets in the first hour: JSON from `export --to json`, a
missing Ray refused before anything is written, Ctrl-C before a first plan explained,
a misspelt method answered at once with "did you mean", a Python file pointed at
jaxplace.torch, the extras that the documented paths need, and progress bars with
units, totals and an ETA."""

import importlib.util
import io
import json
import signal
import subprocess
import sys
import time
import tomllib
import types

import pytest
from repo_paths import ROOT

import jaxplace as jp
from jaxplace.cli.main import interrupted_message, main
from jaxplace.cli.method_names import BUILTIN, check_method, evosax_names


@pytest.fixture
def graph(tmp_path):
    path = tmp_path / "t.json"
    assert main(["generate", "transformer", "--layers", "2", "-o", str(path)]) == 0
    return path


def test_export_json_prints_json(graph, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    assert main(["partition", str(graph), "-k", "2", "-q", "-o", str(plan)]) == 0
    capsys.readouterr()
    assert main(["export", str(plan), "--to", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["num_stages"] == 2 and len(data["stages"]) == 2
    out = tmp_path / "neutral.json"
    assert main(["export", str(plan), "--to", "json", "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == data
    assert "wrote" in capsys.readouterr().out


def test_ray_missing_fails_before_writing(graph, tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ray" else real(name, *a))
    second = tmp_path / "u.json"
    second.write_text(graph.read_text())
    out = tmp_path / "results"
    assert main(["partition", str(graph), str(second), "-k", "2", "--ray", "local",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Ray is not installed" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    with pytest.raises(jp.JaxplaceError, match="Ray is not installed"):
        jp.search_many([jp.load_problem(str(graph), k=2)], executor="ray")


def _frame_in(module_name: str):
    """A frame whose code runs in a module called `module_name`."""
    mod = types.ModuleType(module_name)
    exec("import sys\ndef where():\n    return sys._getframe()\n", mod.__dict__)
    return mod.where()


def test_interrupt_message_says_what_ran_and_that_no_plan_exists():
    msg = interrupted_message(_frame_in("jaxplace.bounds.fake"), "partition")
    assert msg.startswith("jaxplace: interrupted while computing lower bounds")
    assert "jaxplace.bounds.fake.where" in msg and "no plan exists yet" in msg
    assert "nothing written" in msg
    assert "searching" in interrupted_message(_frame_in("jaxplace.search.x"), "partition")
    assert "no result yet" in interrupted_message(None, "certify")


def test_ctrl_c_before_a_plan_is_one_line_and_writes_nothing(graph, tmp_path):
    out = tmp_path / "r.json"
    argv = [sys.executable, "-m", "jaxplace", "partition", str(graph), "-k", "2",
            "--method", "brkga", "--budget", "10000000", "-o", str(out)]
    # Ctrl-C's default action in the command even where this runner ignores SIGINT
    # (set in the child before exec, without a preexec_fn)
    start = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
             f"os.execv(sys.executable, {argv!r})")
    p = subprocess.Popen([sys.executable, "-c", start], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # within the imports, before any search
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 130
    assert err.strip().splitlines()[-1].startswith("jaxplace: interrupted while"), err
    assert "nothing written" in err and "Traceback" not in err
    assert not out.exists()


def test_unknown_method_is_instant_and_suggests():
    code = ("import sys\nfrom jaxplace.cli.main import main\n"
            f"rc = main(['partition', '--example', '-k', '2', '--method', 'brgka'])\n"
            "print(rc, 'jax' in sys.modules, 'evosax' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.split() == ["2", "False", "False"], p.stdout + p.stderr
    assert "did you mean 'brkga'?" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    with pytest.raises(jp.JaxplaceError, match="did you mean 'CMA_ES'"):
        check_method("cma-es")
    for ok in ("brkga", "Default", "CMA_ES", "sep_cma_es", None):
        check_method(ok)


def test_method_names_match_the_registry():
    from jaxplace.search import METHODS
    from jaxplace.search.programs import algorithms

    evo = set(algorithms()) - {"BRKGA"}
    assert set(evosax_names()) == evo
    assert set(BUILTIN) == set(METHODS) - evo


def test_python_file_points_at_jaxplace_torch(tmp_path, capsys):
    script = tmp_path / "model.py"
    script.write_text("import torch\n")
    for arg in (str(script), f"{script}:Net"):
        assert main(["partition", arg, "-k", "2"]) == 2
        err = capsys.readouterr().err
        assert "jaxplace.torch.plan_pipeline" in err and len(err.strip().splitlines()) == 1


def test_extras_hold_what_the_documented_paths_need():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {k: {d.split(">")[0].split("=")[0].split("<")[0] for d in v}
             for k, v in extras.items()}
    assert {"onnx", "onnxruntime"} <= names["onnx"]  # export.run_stages
    assert "ipywidgets" in names["notebooks"]  # tqdm.auto's notebook bars


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_has_units_total_and_eta(monkeypatch):
    from jaxplace.progress import ReportBar
    from jaxplace.search.stop import Progress

    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with ReportBar("search", False, 50.0, total=6000) as b:
        b.show(Progress(1200, 55.0, None, 1.0, "brkga"))
    text = err.getvalue()
    assert "search (brkga)" in text and "1200/6000 evaluations" in text
    assert "<" in text and "ratio=1.1000" in text  # elapsed<remaining: the ETA
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    with ReportBar("search", False, None) as b:
        b.show(Progress(1, 55.0, None, 1.0, "refine-2"))
    assert "search (refine-2): 1 evaluations" in err.getvalue()


def test_named_method_header_says_what_the_method_did():
    from jaxplace.cli.cmd_partition import _header

    problem = jp.Problem(jp.generators.transformer(layers=2), 2)
    kept = types.SimpleNamespace(method="brkga", evaluations=301, elapsed=1.0, stopped=None,
                                 info={"found_by": "dfs", "first_solution": "dfs",
                                       "method_best": 57.5658})
    line = _header("t.json", problem, kept)
    assert "method=brkga (its best, 57.5658, did not beat its dfs start" in line
    assert "found by dfs" not in line
    own = types.SimpleNamespace(method="brkga", evaluations=301, elapsed=1.0, stopped=None,
                                info={})
    assert "did not beat" not in _header("t.json", problem, own)
