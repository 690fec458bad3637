"""`python -m experiments.bench.spatial`: spatial, pipeline and hybrid plans of ResNet-50, VGG-16
and YOLOv3-tiny layer graphs (built from their published layer shapes, no weights)
on equal and unequal devices, next to one device.

Per row: latency of one input on the fastest device alone; with every layer split
(axes chosen among h, w, c); with a per-layer choice among h, w, c and whole on the
fastest device; the best contiguous pipeline (period-optimal split,
its latency and its period); the best hybrid (split prefix, rest whole on the
fastest device); and the halo bytes between layers before (BBGraP's initial
full-sync plan) and after the graph optimizer. Rows "bbgrap" mimic BBGraP's
testbed (Section 4.2): three i5-10400-class CPU nodes on 1 Gbit/s Ethernet,
channel splits only. Figures come from the roofline cost model and the event
simulation of `jaxplace.spatial.cost`, not from running the models.
"""

from __future__ import annotations

import time

HELP = "spatial vs pipeline vs hybrid plans of CNN layer graphs (ResNet-50, VGG-16, YOLO)"

#: i5-10400: 6 cores x 2.9 GHz x 32 fp32 FLOP/cycle (AVX2, 2 FMA units) = 557 GFLOP/s
#: peak; dual-channel DDR4-2666 = 42.7 GB/s. Per-op overhead and 1 GbE latency:
#: estimates.
BBGRAP_NODE = {"peak_flops": 5.57e11, "vector_flops": 5.57e11, "mem_bw": 4.27e10,
               "launch_s": 2e-5, "memory": 16e9}
GBE = 1.25e8  # 1 Gbit/s in bytes/s


def _sizes(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def add_arguments(p) -> None:
    p.add_argument("--models", default="resnet50,vgg16,yolo",
                   help="comma-separated built-in models (resnet18, resnet50, vgg16, yolo)")
    p.add_argument("--sizes", type=_sizes, default=[224, 416, 640],
                   help="input sizes in pixels (default 224,416,640)")
    p.add_argument("--devices", type=_sizes, default=[2, 3, 4],
                   help="device counts of the equal clusters (default 2,3,4)")
    p.add_argument("--profile", default="t4", help="profile of the equal devices")
    p.add_argument("--no-unequal", action="store_true",
                   help="skip the unequal moirai_inter clusters")
    p.add_argument("--no-bbgrap", action="store_true", help="skip BBGraP's CPU testbed rows")
    p.add_argument("--no-hybrid", action="store_true",
                   help="skip the hybrid sweep (the slow part)")


def sub_cluster(cluster, k: int):
    """The first k devices of a cluster and their links."""
    from jaxplace.cluster import Cluster

    return Cluster(cluster.devices[:k], cluster.bandwidth[:k, :k].copy(),
                   cluster.latency[:k, :k].copy(), name=f"{cluster.name}[:{k}]")


def bbgrap_cluster(k: int, bandwidth: float = GBE):
    from jaxplace.cluster import cluster_from_dict

    return cluster_from_dict({"name": f"{k}xi5-{bandwidth * 8 / 1e9:g}GbE",
                              "devices": [{"name": f"i5-{i}", **BBGRAP_NODE} for i in range(k)],
                              "bandwidth": bandwidth, "latency": 5e-5}, "bbgrap")


def _configs(args):
    from jaxplace.cluster import load_cluster, uniform_cluster

    out = []
    for k in args.devices:
        out.append(("equal", uniform_cluster(k, args.profile, latency=5e-6), None))
    if not args.no_unequal:
        inter = load_cluster("moirai_inter")
        for k in args.devices:
            if k <= inter.num_devices:
                out.append(("unequal", sub_cluster(inter, k), None))
    return out


def row(model: str, size: int, kind: str, cluster, axes, hybrid: bool) -> dict:
    from jaxplace.spatial import ALL_AXES, best_pipeline, build_model, plan_spatial

    layers = build_model(model, size)
    res = plan_spatial(layers, cluster, axes=axes or ALL_AXES, hybrid=hybrid)
    pipe = best_pipeline(layers, cluster)
    return {"model": model, "px": size, "kind": kind, "cluster": cluster.name,
            "k": cluster.num_devices, "one": res.latency_one, "spatial": res.latency_spatial,
            "auto": res.latency_auto,
            "pipe_lat": pipe.latency, "pipe_period": pipe.period,
            "hybrid": res.hybrid["latency"], "cut": res.hybrid["cut"], "n": len(layers),
            "best": res.latency, "plan": res.kind,
            "halo_init": res.halo_initial, "halo_opt": res.halo_optimized}


def _print_header() -> None:
    print(f"{'model':<9} {'px':>4} {'cluster':<18} {'one ms':>8} {'split ms':>9} "
          f"{'choice ms':>9} "
          f"{'pipe ms':>8} {'period':>8} {'hybrid ms':>9} {'cut':>7} {'best/one':>8} "
          f"{'halo MB init':>12} {'opt':>8}", flush=True)


def _print_row(r: dict) -> None:
    print(f"{r['model']:<9} {r['px']:>4} {r['cluster']:<18} {r['one'] * 1e3:8.3f} "
          f"{r['spatial'] * 1e3:9.3f} {r['auto'] * 1e3:9.3f} {r['pipe_lat'] * 1e3:8.3f} "
          f"{r['pipe_period'] * 1e3:8.3f} {r['hybrid'] * 1e3:9.3f} "
          f"{str(r['cut']) + '/' + str(r['n']):>7} {r['best'] / r['one']:8.3f} "
          f"{r['halo_init'] / 1e6:12.2f} {r['halo_opt'] / 1e6:8.3f}", flush=True)


def run(args) -> int:
    models = [m.strip().lower() for m in args.models.split(",") if m.strip()]
    t0 = time.perf_counter()
    _print_header()
    for model in models:
        for size in args.sizes:
            size = size if model != "yolo" else max(32, size // 32 * 32)
            for kind, cluster, axes in _configs(args):
                _print_row(row(model, size, kind, cluster, axes, not args.no_hybrid))
    if not args.no_bbgrap and "resnet50" in models:
        print("\nBBGraP's testbed (i5-10400-class CPU nodes; the paper does not give the "
              "network: 1 and 10 GbE), ResNet-50 at 224 px:")
        _print_header()
        for gbe in (1, 10):
            for k in (1, 2, 3):
                for axes in ((("c",), None) if k > 1 else (None,)):
                    r = row("resnet50", 224, "bbgrap", bbgrap_cluster(k, GBE * gbe), axes,
                            not args.no_hybrid)
                    r["cluster"] = f"{k}xi5 {gbe}GbE {'c' if axes else 'hwc'}"
                    _print_row(r)
    print(f"\n{time.perf_counter() - t0:.1f} s; latency of one input (batch 1, fp32) from "
          "the roofline model and the event simulation; split = every splittable layer "
          "split, choice = per layer among h, w, c and whole on the fastest device, "
          "hybrid = best cut (split before `cut` of n layers, rest whole on the "
          "fastest device); best/one = the best of split, per-layer choice and hybrid "
          "over one device.")
    return 0


if __name__ == "__main__":
    import sys

    from experiments.bench.command import main

    sys.exit(main(sys.modules[__name__]))
