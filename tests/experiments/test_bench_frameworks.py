"""`python -m experiments.bench.frameworks` (outside the wheel): the rows on an unequal
cluster."""

import json

from lab import run_lab_bench

#: a 4-layer llama-like config (as in tests/llm/test_cluster_split.py)
TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 32000, "max_position_embeddings": 512}


def test_bench_frameworks_cluster_rows(tmp_path, capsys):
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps(TINY))
    cluster = tmp_path / "c.json"
    cluster.write_text(json.dumps({"devices": ["h100", "t4", "a100"], "bandwidth": 2e10}))
    assert run_lab_bench("frameworks", ["--configs", str(config), "--ks", "2",
                 "--mode", "inference", "--cluster", str(cluster), "--time-limit", "2",
                 "--certify-time", "5"]) == 0
    out = capsys.readouterr().out
    row = [line for line in out.splitlines() if " 3  " in line and "orders" in line]
    assert row and "optimal (6 orders)" in row[-1]
