"""Stage plans in the pipeline frameworks' own forms: Megatron-LM's layout string,
DeepSpeed's partition boundaries, vLLM's VLLM_PP_LAYER_PARTITION, a
torch.distributed.pipelining split spec, a JAX stage -> module map, plain JSON.

    from jaxplace.export import export_plan, plan_from_result
    print(export_plan(plan_from_result("result.json"), "vllm").value)   # "9,8,8,7"
"""

from jaxplace.export.frameworks import (
    EXPORTERS,
    Export,
    export_plan,
    to_deepspeed,
    to_jax,
    to_json,
    to_megatron,
    to_torch_pipelining,
    to_vllm,
)
from jaxplace.export.plan import StagePlan, make_plan, plan_from_result

__all__ = ["EXPORTERS", "Export", "StagePlan", "export_plan", "make_plan",
           "plan_from_result", "to_deepspeed", "to_jax", "to_json", "to_megatron",
           "to_torch_pipelining", "to_vllm"]
