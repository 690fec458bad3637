"""`jaxplace export RESULT --to FRAMEWORK [-o PATH]`: a result JSON's stage plan in a
pipeline framework's own form (jaxplace.export), runnable ONNX stages, or a neutral
JSON plan."""

from __future__ import annotations

from jaxplace.cli.args import add_output_arg, check_output, dims_from_args, note
from jaxplace.errors import JaxplaceError

HELP = "export a result's stages: ONNX files, JSON, Megatron-LM, DeepSpeed, vLLM, torch, JAX"
DESCRIPTION = ("Export the stage plan of a result JSON (from `jaxplace partition ... -o "
               "result.json`). --to onnx -o DIR writes DIR/stage_<i>.onnx (cut out of the "
               "model the result was made from, found through the path and sha256 the "
               "result records) and DIR/plan.json; run the stages in order, feeding each "
               "its inputs by name. --to json prints a neutral plan (stages, ops, tensors "
               "crossing each cut with bytes, devices) of any result as JSON (-o FILE: "
               "writes it there and prints a summary). torch-pipelining gives "
               "split points by op name (and module, from torch.onnx scope names) for any "
               "result; megatron, deepspeed, vllm and jax take the layer graphs of model "
               "configs. A "
               "plan a framework cannot express is refused with the reason (exit 2).")

FRAMEWORKS = ("onnx", "json", "megatron", "deepspeed", "vllm", "torch-pipelining", "jax")
_LAYER_TARGETS = {"megatron": "Megatron-LM", "deepspeed": "DeepSpeed", "vllm": "vLLM",
                  "torch-pipelining": "torch.distributed.pipelining", "jax": "the JAX export"}


def add_arguments(p) -> None:
    p.add_argument("result", help="result JSON written by `jaxplace partition -o`")
    p.add_argument("--to", required=True, choices=FRAMEWORKS, metavar="FRAMEWORK",
                   help=f"target: {', '.join(FRAMEWORKS)}")
    add_output_arg(p, "--to onnx: the folder for stage_<i>.onnx and plan.json; otherwise "
                   "write the export as JSON here")
    p.add_argument("--model", metavar="PATH",
                   help="the .onnx model the result was made from (default: the path the "
                        "result records; its sha256 must match)")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic ONNX dimension for the tensor bytes in the "
                        "plan, e.g. --dim batch=8 (repeatable; default: the values the "
                        "partition used, others 1)")


def run(args) -> int:
    from jaxplace.formats import read_json, write_json

    dims = dims_from_args(args)
    if args.to == "onnx":
        return _onnx(args, dims)
    check_output(args.output, inputs=[args.result])
    result = read_json(args.result)
    if not isinstance(result, dict):
        raise JaxplaceError("not a jaxplace result", source=args.result)
    if args.to == "json":
        data = _json(args, result, dims)
        _fewer_note(args.result, data["num_stages"], result)
        if args.output in (None, "-"):  # --to json means JSON: on stdout without -o
            write_json("-", data)
            return 0
        for st in data["stages"]:
            print(f"stage {st['stage']} ({st['device']}): {len(st['ops'])} ops"
                  + (f", in {_bytes(st['inputs'])}, out {_bytes(st['outputs'])}"
                     if "inputs" in st else ""))
        write_json(args.output, data)
        print(f"wrote {args.output}")
        return 0
    return _layers(args, result)


def _bytes(items) -> str:
    total = sum(i.get("bytes") or 0 for i in items) if items and "bytes" in items[0] \
        else sum(i.get("size", 0.0) for i in items)
    unit = "bytes" if items and "bytes" in items[0] else "(graph size units)"
    return f"{len(items)} tensors {total:.6g} {unit}"


def _onnx(args, dims) -> int:
    from pathlib import Path

    from jaxplace.export.onnx_stages import export_result_onnx

    if not args.output or args.output == "-":
        raise JaxplaceError("--to onnx writes files: give the folder with -o DIR",
                            field="--output")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise JaxplaceError("is a file, expected a folder", source=str(out),
                            field="--output")
    plan = export_result_onnx(args.result, str(out), model=args.model, dim_values=dims)
    _fewer_note(args.result, plan["num_stages"])
    for st in plan["stages"]:
        ins = sum(i["bytes"] or 0 for i in st["inputs"])
        outs = sum(o["bytes"] or 0 for o in st["outputs"])
        print(f"{out / st['file']}: stage {st['stage']} ({st['device']}), "
              f"{len(st['ops'])} ops, weights {st['weight_bytes']:.0f} bytes, "
              f"in {len(st['inputs'])} tensors {ins:.0f} bytes, "
              f"out {len(st['outputs'])} tensors {outs:.0f} bytes")
    print(f"wrote {out / 'plan.json'}")
    return 0


def _fewer_note(path, stages: int, result=None) -> None:
    from jaxplace.formats import read_json

    result = read_json(path) if result is None else result
    k = result.get("k")
    if isinstance(k, int) and stages < k:
        note(f"{path} uses {stages} of its k = {k} stages: its partition left the other "
             "blocks empty")


def _json(args, result, dims) -> dict:
    from jaxplace.export import export_plan, plan_from_result
    from jaxplace.export.neutral import neutral_plan

    data = neutral_plan(result, args.result, model=args.model, dim_values=dims)
    try:
        data["layer_plan"] = export_plan(plan_from_result(result), "json").value
    except JaxplaceError:
        pass  # not a layer chain: the neutral plan is the whole answer
    return data


def _layers(args, result) -> int:
    from dataclasses import replace

    from jaxplace.export import export_plan, plan_from_result

    try:
        plan = plan_from_result(args.result)
    except JaxplaceError as exc:
        if exc.field != "node_ids" and "node_ids" in result:
            raise
        if args.to == "torch-pipelining":  # any graph: split points by op name
            return _print_export(args, _op_splits(args, result))
        raise JaxplaceError(
            f"{_LAYER_TARGETS[args.to]} needs a layer chain (the result of partitioning "
            "a model config, e.g. `jaxplace partition config.json`, whose node ids are "
            "model.layers.<i>); this result's ops are not; use --to onnx or --to json",
            source=args.result) from None
    exp = export_plan(plan, args.to)
    _mode_warning(args, result)  # once the plan is exportable: errors stay one line
    devices = result.get("stage_devices")
    if isinstance(devices, list) and devices:  # a plan for an unequal cluster
        order = ", ".join(f"rank {s}: {d}" for s, d in enumerate(devices))
        exp = replace(exp, assumptions=(*exp.assumptions, "pipeline ranks run on the "
                                        f"cluster's devices in this order ({order})"))
    return _print_export(args, exp)


#: What each layer-chain framework runs: its plans should be costed for that workload.
_FRAMEWORK_MODES = {"megatron": ("training",), "deepspeed": ("training",),
                    "vllm": ("inference", "decode")}


def _mode_warning(args, result) -> None:
    """A warning when the plan was costed for a workload the framework does not run
    (a training plan served by vLLM: other stage times and memory)."""
    wants = _FRAMEWORK_MODES.get(args.to)
    if wants is None:
        return
    wl = (result.get("source_model") or {}).get("workload") or {}
    mode = wl.get("mode")
    target = _LAYER_TARGETS[args.to]
    if mode is None:
        _warn(f"{args.result} does not record the workload it was costed for "
             f"(model configs are costed for training unless --mode says otherwise); "
             f"{target} runs {wants[0]}")
    elif mode not in wants:
        _warn(f"{args.result} was costed for {mode} (sequence {wl.get('seq_len')}, "
             f"micro-batch {wl.get('micro_batch')}) but {target} runs {wants[0]}: stage "
             f"times and memory differ; re-plan with `jaxplace partition CONFIG "
             f"--mode {wants[0]}`")


def _warn(message: str) -> None:
    import sys

    print(f"jaxplace: warning: {message}", file=sys.stderr)


def _op_splits(args, result):
    from jaxplace.export.onnx_stages import find_model, result_op_blocks
    from jaxplace.export.op_splits import to_torch_split_points

    model = None
    if "node_ids" not in result:
        model = find_model(result, args.result, args.model)[0]
    blocks = result_op_blocks(result, args.result, model)
    return to_torch_split_points(list(blocks), blocks, args.result)


def _print_export(args, exp) -> int:
    from jaxplace.formats import write_json

    if args.output == "-":
        write_json("-", exp.to_dict())
        return 0
    print(exp.render())
    if args.output:
        write_json(args.output, exp.to_dict())
        print(f"wrote {args.output}")
    return 0
