"""`jaxplace spatial MODEL --devices N`: split CNN layers across devices with halos.

MODEL is an .onnx file or a built-in layer graph (resnet18, resnet50, vgg16,
yolo) at --size pixels. Prints, per layer, the split axis, each device's output
and input intervals, the halo bytes received and the time; then the latency
against one device, the best hybrid cut and the optimizer's halo savings.
"""

from __future__ import annotations

import argparse
import os

from jaxplace.cli.args import add_output_arg, check_output, dims_from_args, positive_int
from jaxplace.errors import JaxplaceError
from jaxplace.jsonio import write_json

HELP = "split CNN layers across devices (rows, columns or channels, with halos)"
DESCRIPTION = ("Spatial (intra-layer) plan of a CNN, BBGraP-style: every layer's output "
               "split by rows, columns or channels over the devices, only the halo rows "
               "each device misses exchanged; compared with one device, and the best "
               "hybrid (split prefix, rest whole on the fastest device). MODEL: an .onnx "
               "file or a built-in model (resnet18, resnet50, vgg16, yolo).")


def _axes(text: str) -> tuple:
    out = []
    for part in text.split(","):
        p = part.strip().lower()
        if p in ("h", "w", "c"):
            out.append(p)
        elif p in ("none", "whole"):
            out.append(None)
        else:
            raise argparse.ArgumentTypeError(f"axes are h, w, c or none; got {part!r}")
    if not out:
        raise argparse.ArgumentTypeError("no axes given")
    return tuple(dict.fromkeys(out))


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be positive and finite, got {text}")
    return v


def add_arguments(p) -> None:
    p.add_argument("model", metavar="MODEL",
                   help="an .onnx file, or resnet18 | resnet50 | vgg16 | yolo")
    p.add_argument("--devices", "-n", type=positive_int, default=None,
                   help="number of identical devices (default 2; with --cluster, its count)")
    p.add_argument("--cluster", default=None, metavar="FILE",
                   help="cluster file or example name (moirai_inter, moirai_intra): "
                   "unequal devices and links")
    p.add_argument("--device", default="h100",
                   help="profile of the identical devices (default h100)")
    p.add_argument("--link-bw", type=_positive, default=None, metavar="GBS",
                   help="link bandwidth of the identical devices, GB/s (default: profile)")
    p.add_argument("--link-latency-us", type=float, default=5.0, metavar="US",
                   help="per-transfer latency of the identical devices' links (default 5)")
    p.add_argument("--size", type=positive_int, default=None, metavar="PX",
                   help="input size of a built-in model (default 224; yolo 416)")
    p.add_argument("--batch", type=positive_int, default=1,
                   help="batch size (built-in models; ONNX: dims named N, batch, batch_size)")
    p.add_argument("--axes", type=_axes, default=("h", "w", "c", None),
                   help="split axes to consider, comma-separated among h,w,c,none "
                   "(default all; 'c' alone mimics BBGraP's channel-only runtime)")
    p.add_argument("--shares", choices=("speed", "even", "layer"), default="speed",
                   help="device shares: proportional to model speed (default), equal "
                   "(BBGraP Eq. 1), or per-layer speed")
    p.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE",
                   help="value of a symbolic ONNX dimension (repeatable; others 1)")
    add_output_arg(p, "write the plan JSON here")
    p.add_argument("-q", "--quiet", action="store_true", help="summary only, no layer table")


def load_layers(args):
    """(layers, source) from MODEL: an .onnx file or a built-in name."""
    from jaxplace.spatial.models import MODELS, build_model

    model = args.model
    if os.path.exists(model) or model.lower().endswith(".onnx"):
        if args.size is not None:
            raise JaxplaceError("--size applies to built-in models only", field="--size")
        from jaxplace.spatial.load import layers_from_onnx

        if os.path.isdir(model):
            raise JaxplaceError("is a directory, expected an .onnx file", source=model)
        dims = dims_from_args(args)
        if args.batch != 1:
            dims = {**dims, **{k: args.batch for k in ("N", "batch", "batch_size")}}
        return layers_from_onnx(model, dims), model
    if model.lower() not in MODELS:
        raise JaxplaceError(f"no such file, and not a built-in model ({', '.join(MODELS)})",
                            source=model)
    size = args.size or (416 if model.lower() == "yolo" else 224)
    return build_model(model, size, args.batch), f"{model.lower()}@{size}"


def load_cluster_args(args):
    from jaxplace.cluster import load_cluster, uniform_cluster

    if args.cluster is not None:
        cl = load_cluster(args.cluster)
        if args.devices is not None and args.devices != cl.num_devices:
            raise JaxplaceError(f"--devices {args.devices} but the cluster has "
                                f"{cl.num_devices} devices", field="--devices")
        return cl
    if args.link_latency_us < 0:
        raise JaxplaceError(f"must be non-negative, got {args.link_latency_us}",
                            field="--link-latency-us")
    bw = None if args.link_bw is None else args.link_bw * 1e9
    return uniform_cluster(args.devices or 2, args.device, bandwidth=bw,
                           latency=args.link_latency_us * 1e-6)


def _iv(x) -> str:
    return "-" if x is None else f"[{x[0]},{x[1]})"


def print_table(doc: dict) -> None:
    rows = doc["layers"]
    names = doc["devices"]
    width = max(len("layer"), *(len(r["name"]) for r in rows))
    head = f"{'layer':<{width}} {'op':<11} axis " + " ".join(
        f"{n + ' out<-in':<17}" for n in names) + "  halo_KB  time_us"
    print(head)
    for r in rows:
        if r["axis"] is None:
            cells = f"whole on {r['devices'][0]['device']}".ljust(18 * len(names) - 1)
        else:
            cells = " ".join(f"{_iv(d['out']) + '<-' + _iv(d['in']):<17}"
                             for d in r["devices"])
        print(f"{r['name']:<{width}} {r['op']:<11} {str(r['axis'] or '-'):<4} {cells}  "
              f"{r['halo_bytes'] / 1e3:7.1f}  {r['compute_s'] * 1e6:7.1f}")


def print_summary(doc: dict) -> None:
    ms = 1e3
    print(f"latency: one device ({doc['host']}) {doc['latency_one'] * ms:.4f} ms   "
          f"all layers split {doc['latency_spatial'] * ms:.4f} ms   per-layer choice "
          f"{doc['latency_auto'] * ms:.4f} ms   hybrid {doc['hybrid']['latency'] * ms:.4f} ms "
          f"(split before {doc['hybrid']['cut_layer'] or 'the end'}, "
          f"cut {doc['hybrid']['cut']})")
    print(f"chosen plan: {doc['plan']}   latency {doc['latency'] * ms:.4f} ms   "
          f"speedup over one device x{doc['speedup']:.3f}")
    print(f"halo bytes between layers (all-split plan): initial {doc['halo_bytes_initial']:.4g}"
          f" -> optimized {doc['halo_bytes_optimized']:.4g}   sync points "
          f"{doc['sync_points_initial']} -> {doc['sync_points_optimized']}   cases "
          + ", ".join(f"{k} {v}" for k, v in sorted(doc["cases"].items())))
    over = [f"{n} ({w / 1e9:.3g} GB > {m / 1e9:.3g} GB)" for n, w, m in
            zip(doc["devices"], doc["weight_bytes"], doc["memory"], strict=True) if w > m]
    print("weights held per device (MB): " + ", ".join(
        f"{n} {w / 1e6:.1f}" for n, w in zip(doc["devices"], doc["weight_bytes"],
                                             strict=True))
          + (f"   OVER MEMORY: {', '.join(over)}" if over else ""))
    if doc["unsupported"]:
        print(f"kept whole (not splittable): {', '.join(doc['unsupported'])}")
    if doc["impossible"]:
        parts = [f"{x['layer']} ({', '.join(f'{a}={n}' for a, n in x['sizes'].items())})"
                 for x in doc["impossible"]]
        print(f"fewer rows/columns/channels than devices ({len(doc['devices'])}), those "
              f"devices idle on that axis: {', '.join(parts)}")


def run(args) -> int:
    from jaxplace.spatial.api import plan_spatial, to_json

    check_output(args.output, inputs=[args.model])
    layers, source = load_layers(args)
    cluster = load_cluster_args(args)
    result = plan_spatial(layers, cluster, axes=args.axes, shares=args.shares)
    doc = to_json(result, source)
    print(f"{source}: {len(layers)} layers on {cluster.num_devices} devices ({cluster.name}),"
          f" host {doc['host']}, plan {doc['plan']}")
    if not args.quiet:
        print_table(doc)
    print_summary(doc)
    if args.output:
        write_json(args.output, doc)
        print(f"wrote {args.output}")
    return 0
