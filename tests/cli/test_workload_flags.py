"""Model configs say what they are costed for: --mode, --seq-len, --micro-batch set the
workload, the header names it, the result records it, and an export to a framework of
the other mode warns."""

import json
from pathlib import Path

import jaxplace
from jaxplace.cli.main import main

CONFIG = str(Path(jaxplace.__file__).parent / "llm" / "configs" / "llama-2-7b.json")


def _partition(tmp_path, name, *flags):
    out = tmp_path / name
    assert main(["partition", CONFIG, "-k", "4", "-q", "-o", str(out), *flags]) == 0
    return json.loads(out.read_text())


def test_default_is_training_and_said(tmp_path, capsys):
    r = _partition(tmp_path, "train.json")
    err = capsys.readouterr().err
    assert "workload: training, sequence 4096 tokens, micro-batch 1, bf16" in err
    wl = r["source_model"]["workload"]
    assert (wl["mode"], wl["seq_len"], wl["micro_batch"]) == ("training", 4096, 1)


def test_flags_change_the_costs_and_are_recorded(tmp_path, capsys):
    train = _partition(tmp_path, "train.json")
    serve = _partition(tmp_path, "serve.json", "--mode", "inference", "--seq-len", "2048",
                       "--micro-batch", "2")
    assert "workload: inference, sequence 2048 tokens, micro-batch 2" in capsys.readouterr().err
    wl = serve["source_model"]["workload"]
    assert (wl["mode"], wl["seq_len"], wl["micro_batch"]) == ("inference", 2048, 2)
    # training pays forward + backward and holds optimizer state: more time, more bytes
    assert train["bottleneck"] > serve["bottleneck"]
    assert sum(b["param"] for b in train["blocks"]) > sum(b["param"] for b in serve["blocks"])


def test_export_warns_across_modes(tmp_path, capsys):
    _partition(tmp_path, "train.json")
    _partition(tmp_path, "serve.json", "--mode", "inference")
    capsys.readouterr()
    assert main(["export", str(tmp_path / "train.json"), "--to", "vllm"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "costed for training" in err and "vLLM runs inference" in err
    assert main(["export", str(tmp_path / "serve.json"), "--to", "vllm"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["export", str(tmp_path / "serve.json"), "--to", "megatron"]) == 0
    assert "costed for inference" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "train.json"), "--to", "megatron"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_workload_flags_elsewhere_and_bad_values(tmp_path, capsys):
    assert main(["partition", "--example", "-k", "2", "-q", "--mode", "inference"]) == 0
    err = capsys.readouterr().err
    assert "ignored for example:transformer: --mode" in err and "workload:" not in err
    for flag, value in (("--seq-len", "0"), ("--micro-batch", "-1")):
        assert main(["partition", CONFIG, "-k", "4", flag, value]) == 2
        err = capsys.readouterr().err
        assert flag in err and len(err.strip().splitlines()) == 1
