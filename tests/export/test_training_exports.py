"""Training plans exported with their schedule: torchtitan's model parts, Megatron-LM's
layout with virtual stages, DeepSpeed's manual parts with the microbatches."""

from __future__ import annotations

import pytest

from jaxplace.errors import JaxplaceError
from jaxplace.export.frameworks import TrainingSchedule, export_training
from jaxplace.export.plan import make_plan

MODULES = ["embed", *(f"layers.{i}" for i in range(6)), "norm", "head"]


def _plan(stage):
    return make_plan(MODULES, stage)


def test_torchtitan_keeps_every_part_and_the_schedule():
    plan = _plan([0, 0, 0, 1, 1, 2, 2, 3, 3])
    ex = export_training(plan, "torchtitan", TrainingSchedule("interleaved-1f1b", 8, 2))
    v = ex.value
    assert v["pipeline_parallel_degree"] == 2
    assert v["pipeline_parallel_schedule"] == "Interleaved1F1B"
    assert v["module_fqns_per_model_part"] == [["embed", "layers.0", "layers.1"],
                                               ["layers.2", "layers.3"],
                                               ["layers.4", "layers.5"], ["norm", "head"]]
    assert sum(len(p) for p in v["module_fqns_per_model_part"]) == len(MODULES)
    assert 'pipeline_parallel_schedule = "Interleaved1F1B"' in ex.snippet
    zbv = export_training(plan, "torchtitan", TrainingSchedule("zbv", 4, 2))
    assert zbv.value["pipeline_parallel_schedule"] == "ZBVZeroBubble"
    assert any("V-shaped" in a for a in zbv.assumptions)


def test_megatron_layout_with_virtual_stages():
    plan = _plan([0, 0, 0, 1, 1, 2, 2, 3, 3])
    ex = export_training(plan, "megatron", TrainingSchedule("interleaved-1f1b", 8, 2))
    assert ex.value["layout"] == "E,t*2|t*2|t*2|L"
    assert ex.value["pipeline_model_parallel_size"] == 2
    assert ex.value["virtual_stages_per_rank"] == 2
    # the layout's t counts are the plan's layers per (virtual) stage
    counts = [s.count("t") and (int(s.split("t*")[1].split(",")[0]) if "t*" in s else 1)
              for s in ex.value["layout"].split("|")]
    assert counts == plan.layer_counts()
    assert "--pipeline-model-parallel-size 2" in ex.snippet
    one = export_training(_plan([0, 0, 0, 0, 1, 1, 1, 1, 1]), "megatron",
                          TrainingSchedule("1f1b", 4, 1))
    assert one.value["layout"] == "E,t*3|t*3,L"
    for bad in ("gpipe", "zero-bubble"):
        with pytest.raises(JaxplaceError, match="Megatron-LM has no") as err:
            export_training(plan, "megatron", TrainingSchedule(bad, 4, 1))
        assert err.value.field == "schedule"


def test_deepspeed_parts_and_microbatches():
    plan = _plan([0, 0, 0, 0, 1, 1, 1, 1, 1])
    ex = export_training(plan, "deepspeed", TrainingSchedule("1f1b", 6, 1))
    assert ex.value["parts"] == [0, 4, 9]
    assert ex.value["gradient_accumulation_steps"] == 6
    assert '"gradient_accumulation_steps": 6' in ex.snippet
    with pytest.raises(JaxplaceError, match="1F1B with one chunk"):
        export_training(_plan([0, 0, 0, 1, 1, 2, 2, 3, 3]), "deepspeed",
                        TrainingSchedule("interleaved-1f1b", 4, 2))


@pytest.mark.parametrize("to", ["torchtitan", "megatron", "deepspeed"])
def test_refusals_are_one_line(to):
    with pytest.raises(JaxplaceError) as err:  # three stages do not fill 2 per rank
        export_training(_plan([0, 0, 0, 1, 1, 1, 2, 2, 2]), to,
                        TrainingSchedule("interleaved-1f1b", 4, 2))
    assert "\n" not in str(err.value)
    with pytest.raises(JaxplaceError, match="one run of modules"):  # not contiguous
        export_training(_plan([0, 1, 1, 0, 0, 1, 1, 1, 1]), to, TrainingSchedule())
    with pytest.raises(JaxplaceError, match="unknown framework"):
        export_training(_plan([0] * 9), "vllm", TrainingSchedule())
