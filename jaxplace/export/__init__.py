"""Stage plans in the pipeline frameworks' own forms: Megatron-LM's layout string,
DeepSpeed's partition boundaries, vLLM's VLLM_PP_LAYER_PARTITION, a
torch.distributed.pipelining split spec, a JAX stage -> module map, plain JSON (for
layer chains); runnable ONNX stage files and a neutral JSON plan (for any result).

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
from jaxplace.export.neutral import neutral_plan
from jaxplace.export.onnx_stages import export_onnx_stages, export_result_onnx, run_stages
from jaxplace.export.op_splits import split_points, to_torch_split_points
from jaxplace.export.plan import StagePlan, make_plan, plan_from_result

__all__ = ["EXPORTERS", "Export", "StagePlan", "export_onnx_stages", "export_plan",
           "export_result_onnx", "make_plan", "neutral_plan", "plan_from_result",
           "run_stages", "split_points", "to_deepspeed", "to_jax", "to_json", "to_megatron",
           "to_torch_pipelining", "to_torch_split_points", "to_vllm"]
