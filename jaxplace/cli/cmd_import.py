"""`jaxplace import MODEL -o graph.json --device h100 [--coarsen [fusion]]`: a model file to a
node-link JSON computation graph costed with the roofline model."""

from __future__ import annotations

from pathlib import Path

from jaxplace.cli.args import (
    add_model_args,
    add_output_arg,
    add_quiet_arg,
    check_output,
    model_options,
)
from jaxplace.cli.runner import Runner, Stopped
from jaxplace.errors import JaxplaceError

HELP = "import a model file (.onnx) as a costed computation graph"
DESCRIPTION = ("Import a model file (.onnx) as a node-link JSON computation graph with "
               "roofline costs: work in microseconds on the device, tensor sizes in "
               "microseconds of link transfer (use bandwidth 1), parameters in bytes.")


def add_arguments(p) -> None:
    p.add_argument("model", nargs="?", help="model file (.onnx)")
    add_output_arg(p, "output JSON (default: MODEL's stem + .json in the current folder, "
                   "never replacing a file unless --force)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing file of the default output name")
    p.add_argument("--top", type=int, default=10, help="heaviest ops to list (default 10)")
    add_quiet_arg(p)
    p.add_argument("--list-devices", action="store_true",
                   help="list the device profiles and exit")
    add_model_args(p)


def write_graph_json(graph, path) -> None:
    """Write `graph` as node-link JSON, atomically (temp file + os.replace)."""
    from jaxplace.formats import nodelink_data, write_json

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, nodelink_data(graph))


def _list_devices() -> int:
    from jaxplace.importers.devices import device_profiles

    for name, prof in device_profiles().items():
        print(f"{name:8s} {prof.description}: fp32 matrix "
              f"{prof.peak('fp32', matrix=True) / 1e12:.1f} TFLOP/s, bf16 "
              f"{prof.peak('bf16', matrix=True) / 1e12:.1f} TFLOP/s, memory "
              f"{prof.mem_bw / 1e9:.0f} GB/s, link {prof.link_bw / 1e9:.1f} GB/s, "
              f"launch {prof.launch_s * 1e6:.1f} us")
    return 0


def run(args) -> int:
    if args.list_devices:
        return _list_devices()
    if not args.model:
        raise JaxplaceError("give a model file (or --list-devices)", field="MODEL")
    out = args.output or Path(args.model).with_suffix(".json").name
    check_output(out, inputs=[args.model], replace=bool(args.output or args.force),
                 make_parents=True)
    options = model_options(args)  # checks --device and --dim before the import

    def work():
        from jaxplace.importers import load_model_file

        return load_model_file(args.model, **options)

    with Runner(quiet=True) as runner:
        try:
            graph = runner.call(work)
        except Stopped:
            graph = None
        if runner.interrupted:
            return runner.nothing_written("the import was complete")
    write_graph_json(graph, out)
    if args.quiet:
        print(f"wrote {out}: {graph.num_nodes} ops")
    else:
        from jaxplace.importers import summarize

        print(summarize(graph, top=args.top))
        print(f"\nwrote {out}")
    return 0
