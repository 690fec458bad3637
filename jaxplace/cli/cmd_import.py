"""`jaxplace import MODEL -o graph.json --device h100 [--coarsen]`: a model file to a
node-link JSON computation graph costed with the roofline model."""

from __future__ import annotations

from pathlib import Path

from jaxplace.errors import JaxplaceError


def add_device_arguments(p) -> None:
    """The device-profile flags, shared with other subcommands that read model files."""
    from jaxplace.importers.devices import device_names

    g = p.add_argument_group("cost model (roofline)")
    g.add_argument("--device", default="h100",
                   help=f"device profile: {', '.join(device_names())} (default h100)")
    g.add_argument("--peak-tflops", type=float, metavar="TF",
                   help="override the matrix-unit peak, TFLOP/s (all dtypes)")
    g.add_argument("--mem-bw", type=float, metavar="GBS",
                   help="override the device-memory bandwidth, GB/s")
    g.add_argument("--link-bw", type=float, metavar="GBS",
                   help="override the stage-to-stage link bandwidth, GB/s")
    g.add_argument("--launch-us", type=float, metavar="US",
                   help="override the per-op launch overhead, microseconds")
    g.add_argument("--coarsen", action="store_true",
                   help="fuse chains of cheap elementwise ops into their producer")
    g.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic ONNX dimension, e.g. --dim batch=8 "
                        "(repeatable; others default to 1)")


def device_from_args(args):
    """The DeviceProfile selected by `add_device_arguments` flags."""
    from jaxplace.importers.devices import get_device

    return get_device(args.device, peak_tflops=args.peak_tflops, mem_bw_gbs=args.mem_bw,
                      link_bw_gbs=args.link_bw, launch_us=args.launch_us)


def dims_from_args(args) -> dict[str, int]:
    out = {}
    for item in getattr(args, "dim", []) or []:
        name, sep, val = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = int(val)
            if out[name] <= 0:
                raise ValueError
        except ValueError:
            raise JaxplaceError(f"expected NAME=POSITIVE_INT, got {item!r}",
                                field="--dim") from None
    return out


def write_graph_json(graph, path) -> None:
    """Write `graph` as node-link JSON, atomically (temp file + os.replace)."""
    from jaxplace.formats import nodelink_data, write_json

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_json(path, nodelink_data(graph))


def run(args) -> int:
    from jaxplace.importers import load_model_file, summarize

    if args.list_devices:
        from jaxplace.importers.devices import _load

        for name, prof in _load().items():
            print(f"{name:8s} {prof.description}: fp32 matrix "
                  f"{prof.peak('fp32', matrix=True) / 1e12:.1f} TFLOP/s, bf16 "
                  f"{prof.peak('bf16', matrix=True) / 1e12:.1f} TFLOP/s, memory "
                  f"{prof.mem_bw / 1e9:.0f} GB/s, link {prof.link_bw / 1e9:.1f} GB/s, "
                  f"launch {prof.launch_s * 1e6:.1f} us")
        return 0
    if not args.model:
        raise JaxplaceError("give a model file (or --list-devices)", field="MODEL")
    out = args.output or str(Path(args.model).with_suffix(".json").name)
    if Path(out).resolve() == Path(args.model).resolve():
        raise JaxplaceError("output would overwrite the model", field="--output")
    graph = load_model_file(args.model, device=device_from_args(args),
                            coarsen=args.coarsen, dim_values=dims_from_args(args))
    write_graph_json(graph, out)
    if args.quiet:
        print(f"wrote {out}: {graph.num_nodes} ops")
    else:
        print(summarize(graph, top=args.top))
        print(f"\nwrote {out}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "import", help="import a model file (.onnx) as a costed computation graph",
        description="Import a model file (.onnx) as a node-link JSON computation graph "
                    "with roofline costs: work in microseconds on the device, tensor "
                    "sizes in microseconds of link transfer (use bandwidth 1), "
                    "parameters in bytes.")
    p.add_argument("model", nargs="?", help="model file (.onnx)")
    p.add_argument("-o", "--output", help="output JSON (default: MODEL stem + .json)")
    p.add_argument("--top", type=int, default=10, help="heaviest ops to list (default 10)")
    p.add_argument("-q", "--quiet", action="store_true", help="print one line only")
    p.add_argument("--list-devices", action="store_true",
                   help="list the device profiles and exit")
    add_device_arguments(p)
    p.set_defaults(run=run)
