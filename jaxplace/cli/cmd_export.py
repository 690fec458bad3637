"""`jaxplace export RESULT --to FRAMEWORK [-o PATH]`: a result JSON's stage plan in a
pipeline framework's own form (jaxplace.export)."""

from __future__ import annotations

from jaxplace.cli.args import add_output_arg, check_output

HELP = "export a result's stage plan for Megatron-LM, DeepSpeed, vLLM, torch, JAX"
DESCRIPTION = ("Print the stage plan of a result JSON (from `jaxplace partition "
               "config.json -o result.json`) in a pipeline framework's own form, with "
               "what it assumes; -o writes it as JSON. A plan the framework cannot "
               "express is refused with the reason (exit status 2).")

FRAMEWORKS = ("megatron", "deepspeed", "vllm", "torch-pipelining", "jax", "json")


def add_arguments(p) -> None:
    p.add_argument("result", help="result JSON written by `jaxplace partition -o`")
    p.add_argument("--to", required=True, choices=FRAMEWORKS, metavar="FRAMEWORK",
                   help=f"target: {', '.join(FRAMEWORKS)}")
    add_output_arg(p, "write the export (value, snippet, assumptions) as JSON here")


def run(args) -> int:
    from dataclasses import replace

    from jaxplace.export import export_plan, plan_from_result
    from jaxplace.formats import read_json, write_json

    check_output(args.output, inputs=[args.result])
    result = read_json(args.result)
    exp = export_plan(plan_from_result(args.result), args.to)
    devices = result.get("stage_devices") if isinstance(result, dict) else None
    if isinstance(devices, list) and devices:  # a plan for an unequal cluster
        order = ", ".join(f"rank {s}: {d}" for s, d in enumerate(devices))
        exp = replace(exp, assumptions=(*exp.assumptions, "pipeline ranks run on the "
                                        f"cluster's devices in this order ({order})"))
    if args.output == "-":
        write_json("-", exp.to_dict())
        return 0
    print(exp.render())
    if args.output:
        write_json(args.output, exp.to_dict())
        print(f"wrote {args.output}")
    return 0
