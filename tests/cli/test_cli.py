"""The command-line tool end to end: outputs, exit codes, one-line errors."""

import glob
import json
import os
import subprocess
import sys

import pytest
from conftest import NEURIPS, NEURIPS_SKIP
from repo_paths import ROOT

from jaxplace.cli.main import main

WORKLOADS = sorted(glob.glob(str(NEURIPS / "throughput" / "*" / "*.json")))


def test_info_and_partition_on_file(tmp_path, capsys):
    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": 1 + i, "size_out": 0.5} for i in range(6)],
            "edges": [{"source": i, "target": i + 1} for i in range(5)]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    assert main(["info", str(path), "-k", "2"]) == 0
    text = capsys.readouterr().out
    assert "lower bound 10.5" in text and "policy      gnn-v3 " in text
    assert "units" not in text  # every node its own unit
    out = tmp_path / "r.json"
    assert main(["partition", str(path), "-k", "2", "--budget", "20", "-o", str(out),
                 "--quiet", "--certify", "--bounds", "simple,exact"]) == 0
    text = capsys.readouterr().out
    assert "bottleneck" in text and "stage" in text
    res = json.loads(out.read_text())
    assert res["k"] == 2 and len(res["assignment"]) == 6 and res["bottleneck"] >= 10.5
    # The ratio printed last is against the certificate's bound, named (issue 13).
    last = text.strip().splitlines()[-2]  # the line before "wrote ..."
    assert "(certify: exact)" in last and last.endswith("ratio 1.0000"), last
    assert res["lower_bound"] == pytest.approx(res["bottleneck"], rel=1e-6)


def test_partition_with_the_policy_names_it(tmp_path, capsys):
    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": 1 + i % 3, "size_out": 0.5} for i in range(8)],
            "edges": [{"source": i, "target": i + 1} for i in range(7)]}
    path, out = tmp_path / "g.json", tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert main(["partition", str(path), "-k", "2", "--method", "policy", "--budget", "4",
                 "-o", str(out), "--quiet"]) == 0
    assert "method=policy policy=gnn-v3 " in capsys.readouterr().out
    assert json.loads(out.read_text())["policy"] == "gnn-v3"
    assert main(["partition", str(path), "-k", "2", "--budget", "20", "-o", str(out),
                 "--quiet"]) == 0
    assert "policy" not in json.loads(out.read_text())  # k = 2: no coupling


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


@pytest.mark.skipif(not WORKLOADS, reason=NEURIPS_SKIP)
@pytest.mark.parametrize("path", WORKLOADS, ids=[os.path.basename(p) for p in WORKLOADS])
def test_partition_runs_on_every_shared_file(path, capsys):
    assert main(["partition", path, "--budget", "3", "--quiet"]) == 0
    assert "bottleneck" in capsys.readouterr().out


def test_console_script_subprocess(tmp_path):
    r = subprocess.run([sys.executable, "-m", "jaxplace", "partition", "nope.json", "-k", "2"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr


# --- the command map and a light parser (issue 11) -----------------------------------

HEAVY = ("jax", "flax", "optax", "evosax", "highspy", "networkx", "tqdm", "jaxplace.search",
         "jaxplace.bounds", "jaxplace.decoder", "jaxplace.objectives.throughput.cost")


@pytest.mark.parametrize("argv", [["--help"], ["partition", "--help"], ["info", "--help"]])
def test_help_imports_nothing_heavy(argv):
    code = ("import sys\nfrom jaxplace.cli.main import main\n"
            f"rc = main({argv!r})\n"
            f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
            "print('HEAVY', rc, heavy, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "HEAVY 0 []" in r.stderr, r.stderr
    assert "usage: jaxplace" in r.stdout


def test_every_command_module_has_the_protocol():
    from jaxplace.cli.main import COMMANDS, command_module

    for name in COMMANDS:
        mod = command_module(name)
        assert isinstance(mod.HELP, str) and callable(mod.add_arguments) and callable(mod.run)


def test_a_command_that_fails_to_import_is_an_error(monkeypatch):
    import jaxplace.cli.main as cli

    monkeypatch.setitem(cli.COMMANDS, "broken", "jaxplace.cli.cmd_does_not_exist")
    with pytest.raises(ModuleNotFoundError, match="cmd_does_not_exist"):
        cli.build_parser()


def test_critical_path():
    import jaxplace as jp
    from jaxplace.analysis import critical_path

    # 0 -> 1 -> 3 and 0 -> 2 -> 3: the heavier branch (2) counts.
    g = jp.CompGraph([1.0, 2.0, 5.0, 1.0], [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert critical_path(g) == pytest.approx(7.0, abs=0)  # exact sums of small floats
    assert critical_path(jp.CompGraph([3.0, 4.0], [])) == 4.0


def test_one_set_of_model_arguments():
    from jaxplace.cli.main import build_parser

    p = build_parser()
    for argv in (["info", "g.json"], ["partition", "g.json"], ["certify", "g.json"],
                 ["import", "m.onnx"]):
        args = p.parse_args([*argv, "--device", "h200", "--link-bw", "50", "--coarsen",
                             "--dim", "batch=2"])
        assert (args.device, args.link_bw, args.coarsen, args.dim) == (
            "h200", 50.0, True, ["batch=2"])


# --- outputs (issue 13) ----------------------------------------------------------------

def _chain(tmp_path, n=6, **node):
    data = {"directed": True, "graph": {},
            "nodes": [{"id": i, "work": 1 + i, "size_out": 0.5, **node} for i in range(n)],
            "edges": [{"source": i, "target": i + 1} for i in range(n - 1)]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    return path


def _one_line_error(capsys, match):
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("command", ["partition", "certify", "generate"])
@pytest.mark.parametrize("target, match", [
    ("{tmp}/missing/r.json", "does not exist"),
    ("{tmp}", "is a directory"),
    ("/proc/r.json", "not writable"),
    ("{graph}", "is the input file"),
])
def test_bad_output_refused_before_any_work(tmp_path, capsys, command, target, match):
    graph = _chain(tmp_path)
    before = graph.read_text()
    out = target.format(tmp=tmp_path, graph=graph)
    if command == "generate":
        if target == "{graph}":
            return  # generate reads no input
        argv = ["generate", "regal", "--n", "20", "-o", out]
    else:
        argv = [command, str(graph), "-k", "2", "-o", out]
    assert main(argv) == 2
    _one_line_error(capsys, match)
    assert graph.read_text() == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_output_gets_the_umask_mode(tmp_path):
    from jaxplace.formats import write_json

    old = os.umask(0o027)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        (tmp_path / "b.json").write_text("old")
        write_json(tmp_path / "b.json", {"x": 2})  # replaced atomically, new mode
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o640
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": 2}


def test_import_without_output_never_overwrites(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"not onnx")
    (tmp_path / "model.json").write_text("precious")
    assert main(["import", "model.onnx"]) == 2
    _one_line_error(capsys, "--force")
    assert (tmp_path / "model.json").read_text() == "precious"
    assert main(["import", "model.onnx", "-o", "model.onnx"]) == 2
    _one_line_error(capsys, "is the input file")


def test_import_prints_the_name_it_wrote(tmp_path, monkeypatch, capsys):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [4, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [4, 8])])
    monkeypatch.chdir(tmp_path)
    onnx.save(helper.make_model(graph), "net.onnx")
    assert main(["import", "net.onnx", "--quiet"]) == 0
    assert "wrote net.json" in capsys.readouterr().out
    assert main(["import", "net.onnx", "--quiet"]) == 2  # exists now
    assert main(["import", "net.onnx", "--quiet", "--force"]) == 0
    assert json.loads((tmp_path / "net.json").read_text())["nodes"]


# --- inputs (issue 13) -------------------------------------------------------------------

def test_k_capped_at_placement_units(tmp_path, capsys):
    path = _chain(tmp_path)
    assert main(["info", str(path), "-k", "1000000"]) == 0
    cap = capsys.readouterr()
    assert "k           6" in cap.out
    assert cap.err.count("\n") == 1 and "k=1000000 exceeds the 6 placement units" in cap.err


@pytest.mark.parametrize("argv", [
    ["partition", "{g}", "-k", "2", "--time-limit", "0"],
    ["partition", "{g}", "-k", "2", "--time-limit", "-1"],
    ["partition", "{g}", "-k", "2", "--time-limit", "nan"],
    ["partition", "{g}", "-k", "2", "--certify-time", "0"],
    ["certify", "{g}", "-k", "2", "--time-limit", "-5"],
])
def test_time_limit_must_be_positive(tmp_path, capsys, argv):
    path = _chain(tmp_path)
    assert main([a.replace("{g}", str(path)) for a in argv]) == 2
    _one_line_error(capsys, "must be a positive number of seconds")


def test_unknown_device_refused_for_json_graphs(tmp_path, capsys):
    path = _chain(tmp_path)
    assert main(["info", str(path), "--device", "bogus"]) == 2
    err = _one_line_error(capsys, "unknown device 'bogus'")
    assert "h100" in err and "tpu-v4" in err
    assert main(["info", str(path), "-k", "2", "--device", "h200"]) == 0
    assert "only apply to model files" in capsys.readouterr().err


def test_overflowing_values_rejected(tmp_path, capsys):
    path = _chain(tmp_path)
    data = json.loads(path.read_text())
    data["nodes"][1]["work"] = data["nodes"][2]["work"] = 1e308  # the sum is inf
    path.write_text(json.dumps(data))
    assert main(["info", str(path), "-k", "2"]) == 2
    err = _one_line_error(capsys, f"{path}: work: values too large")
    assert "inf" in err
    nips = tmp_path / "n.json"
    nips.write_text(json.dumps({"maxFPGAs": 2, "nodes": [
        {"id": 1, "fpgaLatency": 1.0}, {"id": 2, "fpgaLatency": 1e38},
        {"id": 3, "fpgaLatency": 2e38}, {"id": 4, "fpgaLatency": 2e38}],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 1.0}]}))
    assert main(["certify", str(nips), "--methods", "simple"]) == 2  # beyond float32
    _one_line_error(capsys, f"{nips}: fpgaLatency: values too large")


def test_numbers_in_messages_are_plain():
    import numpy as np

    import jaxplace as jp

    with pytest.raises(jp.JaxplaceError) as e1:
        jp.CompGraph(np.array([1.0, np.nan]), [(0, 1)])
    with pytest.raises(jp.JaxplaceError) as e2:
        jp.Problem(jp.CompGraph([1.0, 2.0], [(0, 1)]), np.float64(2.5))
    with pytest.raises(jp.JaxplaceError) as e3:
        jp.Problem(jp.CompGraph([1.0, 2.0], [(0, 1)]), 2, bandwidth=np.float64(-1))
    for e in (e1, e2, e3):
        assert "np." not in str(e.value), str(e.value)
    assert "got 2.5" in str(e2.value) and "got -1.0" in str(e3.value)


# --- output that says what it means (issue 13) -----------------------------------------

def test_stage_table_has_devices_and_the_json_block_ids():
    import numpy as np

    import jaxplace as jp
    from jaxplace.formats import result_dict
    from jaxplace.objectives.throughput.report import stage_table

    g = jp.CompGraph([1.0, 2.0, 3.0, 4.0], [(0, 1), (1, 2), (2, 3)], size_out=[1.0] * 4,
                     node_attrs={"cpu_latency": np.array([9.0, 9.0, 9.0, 0.5])})
    problem = jp.Problem(g, 3, cpus=1)
    a = np.array([2, 2, 0, 3])  # blocks 2 then 0 on accelerators, node 3 on the CPU
    table = stage_table(problem, jp.evaluate_partition(problem, a)).splitlines()
    assert table[0].split()[:2] == ["stage", "device"]
    rows = [line.split() for line in table[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("0", "accel", "2"), ("1", "accel", "1"),
                                                  ("3", "CPU", "1")]
    res = result_dict(problem, a)
    assert [(b["block"], b["device"], len(b["nodes"])) for b in res["blocks"]] == [
        (0, "accel", 2), (1, "accel", 1), (3, "cpu", 1)]


def test_evaluate_partition_accepts_a_partition_object():
    import numpy as np

    import jaxplace as jp
    from jaxplace.objectives.throughput.reference import decode_reference

    problem = jp.Problem(jp.CompGraph([1.0, 2.0, 3.0], [(0, 1), (1, 2)]), 2)
    part = decode_reference(problem, np.zeros(3))
    cost = jp.evaluate_partition(problem, part)
    assert cost.bottleneck == pytest.approx(part.cost, rel=1e-12)  # both float64


@pytest.mark.parametrize("name", ["workloads", "policy", "hetero", "scale"])
def test_bench_of_a_moved_benchmark_says_where_it_went(name, capsys):
    """The research benchmarks left the wheel: `jaxplace bench NAME`, whatever follows,
    names their new place in one line, exit 2, and `jaxplace bench --help` lists only
    what ships."""
    from jaxplace.bench import BENCHES, MOVED

    assert main(["bench", name, "--count", "3", "--help"]) == 2
    err = _one_line_error(capsys, f"experiments/bench/{name}.py")
    assert f"python -m experiments.bench.{name}" in err
    assert name in MOVED and name not in BENCHES
    assert main(["bench", "--help"]) == 0
    listing = capsys.readouterr().out
    assert "decode" in listing and f"    {name} " not in listing
    assert main(["bench", "nosuch"]) == 2
    err = _one_line_error(capsys, "invalid choice: 'nosuch'")
    assert "'gpu'" in err and f"'{name}'" not in err


def test_bench_decode_quotes_a_failing_yardstick(tmp_path, capsys):
    (tmp_path / "yardstick.py").write_text(
        "import sys\nprint('building refslice', flush=True)\n"
        "sys.exit('error: no C++ compiler (g++) found')\n")
    assert main(["bench", "decode", "--n", "8", "--k", "2", "--pop", "4", "--yardstick",
                 str(tmp_path)]) == 2
    _one_line_error(capsys, "yardstick failed (exit 1): error: no C++ compiler (g++) found")


@pytest.mark.parametrize("argv", [["partition", "g.json"], ["certify", "g.json"],
                                  ["import", "m.onnx"], ["bench", "bounds"],
                                  ["bench", "decode"], ["bench", "search"]])
def test_quiet_on_every_long_command(argv):
    from jaxplace.cli.main import build_parser

    assert build_parser().parse_args([*argv, "--quiet"]).quiet is True


def test_data_location_is_configurable():
    from conftest import NEURIPS

    assert "JAXPLACE_DATA" in NEURIPS_SKIP and "msr-fiddle/dnn-partitioning" in NEURIPS_SKIP
    if not os.environ.get("JAXPLACE_DATA"):
        assert NEURIPS == ROOT.parent / "shared" / "data" / \
            "dnn-partitioning"


def test_partition_of_many_graphs_is_the_batched_run(tmp_path):
    """`partition` given a folder, several graph files or a k sweep runs partition-many;
    one file with one k (and paths that are option values) stays a plain partition."""
    from jaxplace.cli.main import _many

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.write_text("{}")
    assert _many([str(tmp_path), "-k", "4"])
    assert _many([str(a), str(b)])
    assert _many([str(a), "-k", "2,4,8"]) and _many([str(a), "-k2,4"])
    assert not _many([str(a), "-k", "4", "-o", str(b)])
    assert not _many([str(a), "--policy", str(tmp_path)])


# --- one partition flow (issue 50) -------------------------------------------------------

CLI = ROOT / "jaxplace" / "cli"


def test_cli_asks_the_objective_never_its_name():
    """No cli module compares objective names or reads the objective-owned views
    (Problem.latency / hetero / pipeline_instance, cluster.is_uniform): the flow asks
    the resolved objective (`objective_impl`, its capabilities and methods)."""
    import re

    banned = re.compile(r"\.latency\b|\.hetero\b|\.pipeline_instance\b|\.is_uniform\b"
                        r"|objective\s*[!=]=|[!=]=\s*[\"'](latency|throughput)[\"']")
    hits = [f"{p.name}:{i}: {line.strip()}" for p in sorted(CLI.glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if banned.search(line)]
    assert not hits, "\n".join(hits)


def test_partition_and_certify_take_the_same_problem_options():
    from jaxplace.cli.main import build_parser
    from jaxplace.objectives import problem_objectives

    p = build_parser()
    opts = ["--cluster", "moirai_inter", "--objective", "latency", "--memory", "5",
            "--capacity", "7", "--bandwidth", "2", "-k", "3"]
    for command in ("partition", "certify"):
        a = p.parse_args([command, "g.json", *opts])
        assert (a.cluster, a.objective, a.memory, a.capacity, a.bandwidth, a.k) == (
            "moirai_inter", "latency", 5.0, 7.0, 2.0, 3)
        action = next(x for x in p._subparsers._group_actions[0].choices[command]._actions
                      if "--objective" in x.option_strings)
        assert tuple(action.choices) == problem_objectives()  # from the registry


@pytest.mark.parametrize("argv, match", [
    # the objective refuses what it does not model: one line, exit 2, nothing dropped
    (["partition", "{g}", "--cluster", "moirai_inter", "--memory", "3"], "memory"),
    (["certify", "{g}", "--cluster", "moirai_inter", "--objective", "latency",
      "--capacity", "3"], "capacity"),
    (["partition", "{g}", "--cluster", "moirai_inter", "--objective", "latency",
      "--noncontiguous"], "non-contiguous"),
    (["partition", "{g}", "-k", "2", "--objective", "latency"], "needs a cluster"),
    (["partition", "{g}", "-k", "2", "--certify", "--bounds", "nope"], "nope"),
    # --bounds is the throughput ladder's unless the objective has the bound; never
    # dropped without a word (checked before the search)
    (["partition", "{g}", "--cluster", "moirai_inter", "--certify", "--bounds",
      "ideals"], "bound 'ideals' does not apply to"),
    (["partition", "{g}", "--cluster", "moirai_inter", "--objective", "latency",
      "--certify", "--bounds", "bottleneck"], "bound 'bottleneck' does not apply to"),
    (["partition", "{g}", "-k", "2", "--bounds", "simple"], "--bounds: applies to --certify"),
])
def test_options_an_objective_lacks_are_refused(tmp_path, capsys, argv, match):
    path = _chain(tmp_path)
    out = tmp_path / "r.json"
    assert main([a.replace("{g}", str(path)) for a in argv] + ["-o", str(out), "-q"]) == 2
    _one_line_error(capsys, match)
    assert not out.exists()


@pytest.mark.parametrize("flags, match", [
    (["--memory", "3"], "--memory"), (["--objective", "latency"], "--objective"),
    (["--method", "dfs"], "--method"), (["--certify", "--bounds", "simple"], "--bounds"),
    (["--fusion", "none"], "--fusion"),
])
def test_config_on_cluster_refuses_options_it_does_not_take(tmp_path, capsys, flags, match):
    """A model config on a cluster is split by the exact layer DP, with the config's and
    the cluster's costs: any other cost or search option is refused, not dropped."""
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({
        "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 32000, "max_position_embeddings": 512}))
    out = tmp_path / "r.json"
    assert main(["partition", str(config), "--cluster", "moirai_intra", *flags, "-q",
                 "-o", str(out)]) == 2
    _one_line_error(capsys, f"{match}: does not apply to a model config on a cluster")
    assert not out.exists()


def test_objective_keeps_the_settled_k(tmp_path, capsys):
    path = _chain(tmp_path)  # 6 placement units
    assert main(["partition", str(path), "-k", "1000000", "--objective", "throughput",
                 "--method", "dfs", "-q"]) == 0
    assert " k=6 " in capsys.readouterr().out


def test_certify_on_unequal_devices_keeps_the_device_order(tmp_path, capsys):
    """--certify's partition (an assignment) never replaces the plan it bounds: on
    unequal devices that would drop the stage -> device map (a defect once)."""
    import numpy as np

    import jaxplace as jp

    path, out = _chain(tmp_path), tmp_path / "r.json"
    assert main(["partition", str(path), "--cluster", "moirai_inter", "--method", "dfs",
                 "--certify", "-q", "-o", str(out)]) == 0
    assert "improved" not in capsys.readouterr().out
    data = json.loads(out.read_text())
    p = jp.Problem(jp.load_problem(path, 1).graph, cluster=jp.load_cluster("moirai_inter"))
    sc = jp.evaluate_partition(p, np.array(data["assignment"]),
                               devices=[p.cluster.index(d) for d in data["stage_devices"]])
    assert sc.bottleneck == pytest.approx(data["bottleneck"], rel=1e-12)


def test_certify_on_a_cluster_uses_the_objectives_bounds(tmp_path, capsys):
    path = _chain(tmp_path, n=5)
    out = tmp_path / "c.json"
    assert main(["certify", str(path), "--cluster", "moirai_inter", "--objective",
                 "latency", "--methods", "simple", "-q", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "simple" in text and "methods simple (--methods)" in text
    data = json.loads(out.read_text())
    assert data["objective"] == "latency" and data["certificate"]["lower_bound"] > 0
    assert data["certificate"]["lower_bound"] <= data["makespan"] * (1 + 1e-9)


def test_a_registered_objective_runs_through_partition_and_certify(tmp_path, capsys):
    """A fourth objective (the toy of test_objectives) is one --objective choice more:
    partition, --certify and certify run it with no change in cli/."""
    from toy_objective import ComputeOnly

    from jaxplace.objectives import register, unregister

    path = _chain(tmp_path, n=8)
    out = tmp_path / "r.json"
    register(ComputeOnly())
    try:
        assert main(["partition", str(path), "-k", "3", "--objective", "toy-compute",
                     "--certify", "-q", "-o", str(out)]) == 0
        text = capsys.readouterr().out
        assert "lower bound" in text and "(certify: simple)" in text.splitlines()[-2]
        data = json.loads(out.read_text())
        assert data["objective"] == "toy-compute" and len(data["assignment"]) == 8
        assert data["lower_bound"] <= data["bottleneck"]
        assert main(["certify", str(path), "-k", "3", "--objective", "toy-compute",
                     "-q"]) == 0
        assert main(["partition", str(path), "-k", "3", "--objective", "toy-compute",
                     "--method", "brkga", "-q"]) == 2
        _one_line_error(capsys, "toy-compute")
    finally:
        unregister("toy-compute")
    assert main(["partition", str(path), "-k", "3", "--objective", "toy-compute"]) == 2
