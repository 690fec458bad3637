"""LLM configs -> layer graphs, framework exports (round trips, refusals), baselines,
the per-rank split, and the `partition config.json` -> `export` CLI path."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from jaxplace import llm
from jaxplace.errors import JaxplaceError
from jaxplace.export import EXPORTERS, export_plan, make_plan, plan_from_result
from jaxplace.formats import load_graph, load_problem, result_dict
from jaxplace.llm.hetero import chain_split
from jaxplace.objectives.throughput.cost import evaluate_partition

TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_hidden_layers": 6, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 32000, "max_position_embeddings": 512}

# Published parameter counts (billions) and the relative tolerance: the names round
# (Llama 2 "70B" has 68.98B by the published dimensions; GPT-2 XL "1.5B" 1.558B).
PUBLISHED = {"llama-2-7b": (6.74, 0.005), "llama-2-13b": (13.0, 0.005),
             "llama-2-70b": (70.0, 0.02), "mixtral-8x7b": (46.7, 0.005),
             "gpt2-xl": (1.5, 0.04), "qwen-style-32b": (32.5, 0.02)}


@pytest.fixture
def tiny_path(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY))
    return path


# -- configs ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shipped_param_counts_match_published(name):
    cfg = llm.read_config(llm.shipped_config(name))
    want, rtol = PUBLISHED[name]
    assert llm.param_counts(cfg).total / 1e9 == pytest.approx(want, rel=rtol)


def test_mixtral_active_params_and_moe_layers():
    cfg = llm.read_config(llm.shipped_config("mixtral-8x7b"))
    assert (cfg.num_experts, cfg.experts_per_token) == (8, 2)
    assert llm.param_counts(cfg).active_per_token / 1e9 == pytest.approx(12.9, rel=0.005)
    g = llm.layer_graph(cfg, mode="inference")
    assert g.op_types[1] == "moe_decoder_layer"


def test_families_and_module_names():
    gpt2 = llm.read_config(llm.shipped_config("gpt2-xl"))
    assert gpt2.family == "gpt2" and gpt2.tie_embeddings and not gpt2.gated_mlp
    neox = llm.read_config({"model_type": "gpt_neox", "hidden_size": 64,
                            "num_hidden_layers": 2, "num_attention_heads": 4,
                            "intermediate_size": 256, "vocab_size": 100})
    g = llm.layer_graph(neox, seq_len=16)
    assert g.node_ids == ("gpt_neox.embed_in", "gpt_neox.layers.0", "gpt_neox.layers.1",
                          "gpt_neox.final_layer_norm", "embed_out")
    qwen = llm.read_config(llm.shipped_config("qwen-style-32b"))
    assert qwen.qkv_bias and qwen.num_kv_heads == 8 and qwen.sliding_window is None


def test_bad_configs_name_the_field(tmp_path):
    with pytest.raises(JaxplaceError, match="vocab_size"):
        llm.read_config({k: v for k, v in TINY.items() if k != "vocab_size"})
    with pytest.raises(JaxplaceError, match="num_key_value_heads"):
        llm.read_config({**TINY, "num_key_value_heads": 3})
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**TINY, "jaxplace": {"mode": "training", "batch": 2}}))
    with pytest.raises(JaxplaceError, match="unknown option 'batch'"):
        load_graph(path)
    with pytest.raises(JaxplaceError, match="mode"):
        llm.layer_graph(TINY, mode="serving")


def test_detected_by_content_with_options(tmp_path):
    path = tmp_path / "model-config.json"
    path.write_text(json.dumps({**TINY, "jaxplace": {"mode": "inference", "seq_len": 128,
                                                     "device": "a100"}}))
    problem = load_problem(path, k=4)
    g = problem.graph
    assert g.meta["format"] == "hf-config" and g.meta["device"]["name"] == "a100"
    assert g.meta["workload"]["mode"] == "inference" and g.meta["workload"]["seq_len"] == 128
    assert problem.capacity == pytest.approx(g.meta["capacity"], rel=1e-12)
    assert g.num_nodes == TINY["num_hidden_layers"] + 3


# -- memory model -------------------------------------------------------------------------

def test_training_memory_is_16_bytes_per_param_plus_activations():
    g = llm.layer_graph(TINY, mode="training", seq_len=64, in_flight=4)
    params = g.node_attrs["params"]
    np.testing.assert_allclose(g.node_attrs["weight_bytes"], 2 * params, rtol=1e-12)
    np.testing.assert_allclose(g.node_attrs["state_bytes"], 14 * params, rtol=1e-12)
    assert np.all(g.node_attrs["activation_bytes"][1:-2] > 0)
    assert not g.node_attrs["kv_bytes"].any()


def test_inference_memory_has_kv_cache_and_capacity_from_device():
    g = llm.layer_graph(TINY, mode="inference", seq_len=256, micro_batch=2, in_flight=3)
    kv = 2 * 2 * 64 * 256 * 2 * 2 * 3  # K and V, kv heads * head_dim, tokens, seqs, bf16
    assert g.node_attrs["kv_bytes"][1] == kv
    assert not g.node_attrs["state_bytes"].any()
    cap = 80e9 * 0.9 - g.meta["workspace_bytes"]
    assert g.meta["capacity"] == pytest.approx(cap, rel=1e-12)
    mem = llm.stage_memory(g, [0, 0, 0, 1, 1, 1, 1, 1, 1])
    assert sum(m.weights + m.optimizer + m.activations + m.kv_cache for m in mem) == \
        pytest.approx(g.size_param.sum(), rel=1e-12)
    mem = llm.stage_memory(g, [5, 5, 5, 2, 2, 2, 2, 2, 2], [10.0, 20.0])  # pipeline order
    assert [(m.stage, m.device_bytes) for m in mem] == [(0, 10.0), (1, 20.0)]
    assert mem[0].weights == pytest.approx(g.node_attrs["weight_bytes"][:3].sum(), rel=1e-12)


def test_training_costs_three_forwards():
    fwd = llm.part_table(TINY, mode="inference", seq_len=64)
    train = llm.part_table(TINY, mode="training", seq_len=64)
    assert train[1].time_s == pytest.approx(3 * fwd[1].time_s, rel=1e-12)


# -- baselines and the per-rank split ----------------------------------------------------

def test_uniform_spreads_the_remainder_like_vllm():
    g = llm.layer_graph(llm.shipped_config("llama-2-13b"), mode="inference")
    a = llm.split_uniform(g, 16)  # 40 layers: 2 each, 8 extra on stages 14 .. 7
    plan = make_plan(g.node_ids, a)
    assert plan.layer_counts() == [2] * 7 + [3] * 8 + [2]
    assert plan.stage_of("model.embed_tokens") == 0 and plan.stage_of("lm_head") == 15


def test_parameter_split_is_minmax():
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = rng.integers(1, 10, size=7)
        counts = llm.baselines.minmax_counts(w, 3)
        got = max(w[a:b].sum() for a, b in _ranges(counts))
        brute = min(max(w[a:b].sum() for a, b in _ranges(c)) for c in _compositions(7, 3))
        assert got == brute


def test_block_partition_fills_every_block():
    for n, k in ((10, 3), (34, 8), (51, 16)):
        counts = llm.baselines.block_partition(np.linspace(1, 2, n), k)
        assert sum(counts) == n and min(counts) >= 1 and len(counts) == k


def test_chain_split_is_optimal_against_brute_force():
    g = llm.layer_graph(TINY, mode="training", seq_len=64)
    problem = llm.llm_problem(TINY, 3, mode="training", seq_len=64)
    full = problem.capacity + g.meta["workspace_bytes"]
    a, cost = chain_split(problem.graph, [full] * 3)
    brute = min(evaluate_partition(problem, _assignment(problem.graph, c)).bottleneck
                for c in _compositions(8, 3))
    assert cost == pytest.approx(brute, rel=1e-12)
    assert evaluate_partition(problem, a).bottleneck == pytest.approx(cost, rel=1e-12)
    a_small, _ = chain_split(problem.graph, [full, full, 1.0])
    assert a_small is None


def _ranges(counts):
    ends = np.cumsum(counts)
    return list(zip(ends - counts, ends, strict=True))


def _compositions(n, k):
    """Every way to cut n items into k non-empty runs, as counts."""
    for cuts in itertools.combinations(range(1, n), k - 1):
        b = [0, *cuts, n]
        yield [b[i + 1] - b[i] for i in range(k)]


def _assignment(graph, counts):
    return llm.baselines._assign(graph, counts)


# -- exports: parse each format back ------------------------------------------------------

def _parse_megatron(value, modules, plan):
    stages = value.split("|")
    seq = []
    for s, text in enumerate(stages):
        text = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)),
                      text.replace(",", ""))
        seq += [(c, s) for c in text]
    assert seq[0] == ("E", 0) and seq[-1] == ("L", len(stages) - 1)
    layer_stages = [s for c, s in seq if c == "t"]
    return {**{m: 0 for m in plan.pre}, **{m: len(stages) - 1 for m in plan.post},
            **{f"{plan.layer_prefix}.{i}": s for i, s in enumerate(layer_stages)}}


def _parse_vllm(value, modules, plan):
    counts = [int(x) for x in value.split(",")]
    layer_stages = np.repeat(np.arange(len(counts)), counts)
    return {**{m: 0 for m in plan.pre}, **{m: len(counts) - 1 for m in plan.post},
            **{f"{plan.layer_prefix}.{i}": int(s) for i, s in enumerate(layer_stages)}}


def _parse_deepspeed(value, modules, plan):
    parts, layers = value["parts"], value["layers"]
    return {m: int(np.searchsorted(parts, i, side="right")) - 1 for i, m in enumerate(layers)}


def _parse_torch(value, modules, plan):
    starts = set(value["split_spec"])
    assert set(value["split_spec"].values()) <= {"BEGINNING"}
    out, s = {}, 0
    for m in modules:
        s += m in starts
        out[m] = s
    return out


def _parse_jax(value, modules, plan):
    out = {m: int(s) for s, mods in value["stages"].items() for m in mods}
    for s, (a, b) in enumerate(value["layer_ranges"]):
        assert all(out[f"{plan.layer_prefix}.{i}"] == s for i in range(a, b))
    return out


def _parse_json(value, modules, plan):
    return dict(zip(value["modules"], value["stage"], strict=True))


PARSERS = {"megatron": _parse_megatron, "vllm": _parse_vllm, "deepspeed": _parse_deepspeed,
           "torch-pipelining": _parse_torch, "jax": _parse_jax, "json": _parse_json}


def _plans():
    """Result dicts of the baselines and the per-rank split on shipped configs, and
    random contiguous plans on the tiny config."""
    out = []
    for name, k in (("llama-2-13b", 16), ("gpt2-xl", 8), ("mixtral-8x7b", 4)):
        problem = llm.llm_problem(llm.shipped_config(name), k, mode="inference")
        for _, rule in llm.BASELINES.values():
            out.append(result_dict(problem, rule(problem.graph, k)))
        a, _ = chain_split(problem.graph, [1e12] * k)
        out.append(result_dict(problem, a))
    rng = np.random.default_rng(1)
    tiny = llm.llm_problem(TINY, 5, mode="inference")
    for _ in range(10):
        k = int(rng.integers(1, 6))
        cuts = np.sort(rng.choice(np.arange(1, 8), size=k - 1, replace=False))
        counts = np.diff([0, *cuts, 8])
        out.append(result_dict(tiny, _assignment(tiny.graph, counts)))
    return out


@pytest.mark.parametrize("framework", sorted(EXPORTERS))
def test_every_export_round_trips(framework):
    assert set(PARSERS) == set(EXPORTERS)
    for data in _plans():
        data = json.loads(json.dumps(data, default=lambda o: o.tolist()))  # as on disk
        plan = plan_from_result(data)
        exp = export_plan(plan, framework)
        value = json.loads(json.dumps(exp.to_dict()))["value"]
        back = PARSERS[framework](value, plan.modules, plan)
        assert [back[m] for m in plan.modules] == list(plan.stage), framework
        assert exp.assumptions and exp.snippet


NON_CONTIGUOUS = [0, 0, 1, 0, 1, 1, 1, 1, 1]
NORM_APART = [0, 0, 0, 0, 1, 1, 1, 1, 2]  # final norm on stage 1, head on stage 2


@pytest.mark.parametrize("framework", sorted(set(EXPORTERS) - {"json"}))
def test_non_contiguous_plans_are_refused(framework):
    g = llm.layer_graph(TINY)
    plan = make_plan(g.node_ids, NON_CONTIGUOUS)
    with pytest.raises(JaxplaceError, match="cannot express this plan") as err:
        export_plan(plan, framework)
    assert "\n" not in str(err.value) and "model.layers.1" in str(err.value)


@pytest.mark.parametrize("framework", ["megatron", "vllm"])
def test_head_apart_from_norm_is_refused_where_unsupported(framework):
    g = llm.layer_graph(TINY)
    plan = make_plan(g.node_ids, NORM_APART)
    with pytest.raises(JaxplaceError, match="model.norm is on stage 1.*last stage"):
        export_plan(plan, framework)
    for ok in ("deepspeed", "torch-pipelining", "json"):
        export_plan(plan, ok)


def test_plans_that_are_not_layer_graphs_are_refused():
    with pytest.raises(JaxplaceError, match="no decoder layers"):
        make_plan(["conv", "relu", "fc"], [0, 0, 1])
    with pytest.raises(JaxplaceError, match="not consecutive"):
        make_plan(["emb", "layers.0", "layers.2", "head"], [0, 0, 1, 1])
    with pytest.raises(JaxplaceError, match="CPU blocks"):
        plan_from_result({"k": 2, "assignment": [0, 2], "node_ids": ["a.0", "b"]})
    with pytest.raises(JaxplaceError, match="unknown framework"):
        export_plan(make_plan(["e", "l.0", "h"], [0, 0, 1]), "alpa")


# -- CLI ----------------------------------------------------------------------------------

def test_cli_partition_config_then_export_vllm(tiny_path, tmp_path, capsys):
    from jaxplace.cli.main import main

    result = tmp_path / "result.json"
    assert main(["partition", str(tiny_path), "-k", "4", "--method", "dfs", "-q",
                 "-o", str(result)]) == 0
    capsys.readouterr()
    assert main(["export", str(result), "--to", "vllm"]) == 0
    out = capsys.readouterr().out
    value = re.search(r'VLLM_PP_LAYER_PARTITION="([\d,]+)"', out).group(1)
    plan = plan_from_result(result)
    assert [int(x) for x in value.split(",")] == plan.layer_counts()
    assert sum(plan.layer_counts()) == TINY["num_hidden_layers"]
    written = tmp_path / "megatron.json"
    assert main(["export", str(result), "--to", "megatron", "-o", str(written)]) == 0
    assert json.loads(written.read_text())["framework"] == "megatron"


def test_cli_export_errors_are_one_line(tmp_path, capsys):
    from jaxplace.cli.main import main

    g = llm.layer_graph(TINY)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"assignment": NON_CONTIGUOUS, "node_ids": list(g.node_ids),
                               "k": 2}))
    assert main(["export", str(bad), "--to", "megatron"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Megatron-LM cannot express this plan" in err
    assert main(["export", str(bad), "--to", "json", "-o",
                 str(tmp_path / "no" / "x.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.heavy
def test_cli_default_search_certified_and_bench(tiny_path, tmp_path, capsys):
    from jaxplace.cli.main import main

    result = tmp_path / "result.json"
    assert main(["partition", str(tiny_path), "-k", "4", "--certify", "-q",
                 "-o", str(result)]) == 0
    data = json.loads(result.read_text())
    assert data["certificate"]["lower_bound"] == pytest.approx(data["bottleneck"], rel=1e-6)
    from lab import run_lab_bench  # the frameworks benchmark, outside the wheel

    assert run_lab_bench("frameworks", ["--configs", "gpt2-xl", "--ks", "4",
                                        "--mixed", "40", "-q"]) == 0
