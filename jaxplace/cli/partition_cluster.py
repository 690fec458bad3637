"""`jaxplace partition config.json --cluster FILE`: a decoder config's layer chain split
exactly over a cluster's devices and their order. The DP is `jaxplace.llm.cluster_split`
(a side path, not an objective: see its docstring), its rows and certificate
`jaxplace.llm.cluster_result`; this module parses, prints and writes the result
(`formats.results.write_result`, as `save_result`'s are): a row per stage, `assignment`
and `node_ids` for `jaxplace export`, `stage_devices` (the framework's pipeline ranks in
that order) and the DP's `Certificate` (exhaustive: a proven bound).
"""

from __future__ import annotations

import sys

from jaxplace.errors import JaxplaceError
from jaxplace.jsonio import read_json


def is_config_file(path: str | None) -> bool:
    """A JSON file holding a Hugging Face-style decoder config."""
    if not path or not str(path).lower().endswith(".json"):
        return False
    from jaxplace.llm.config import is_hf_config

    try:
        return is_hf_config(read_json(path))
    except JaxplaceError:
        return False


#: `partition` options the exact layer DP does not take: one line, exit 2 when set
#: (--objective throughput is what it computes).
NOT_TAKEN = ("objective", "bandwidth", "memory", "capacity", "device", "peak_tflops",
             "mem_bw", "link_bw", "launch_us", "coarsen", "fusion", "dim", "method", "policy",
             "budget", "noncontiguous", "bounds")


def run_config_on_cluster(args) -> int:
    """Split the config of args.file over --cluster; see the module docstring."""
    given = [o for o in NOT_TAKEN if getattr(args, o, None) not in (None, False, [], "throughput")]
    if given:
        raise JaxplaceError("does not apply to a model config on a cluster (split by the "
                            "exact layer DP)", field="--" + given[0].replace("_", "-"))
    from jaxplace.cluster import load_cluster
    from jaxplace.formats.results import FORMAT, write_result
    from jaxplace.llm import cluster_split, layer_graph
    from jaxplace.llm.cluster_result import plan_certificate, stage_rows
    from jaxplace.llm.workload import workload_options

    cluster = load_cluster(args.cluster)
    data = read_json(args.file)
    options = workload_options(data.get("jaxplace"), args.file)
    options.pop("device", None)  # the cluster names the devices
    plan = cluster_split(data, cluster, stages=args.k, source=args.file, **options)
    graph = layer_graph(data, device=cluster.profiles[plan.devices[0]], source=args.file,
                        **options)
    names = [cluster.names[d] for d in plan.devices]
    rows = stage_rows(plan, graph, cluster)
    if not args.quiet:
        print(f"{graph.meta['model']} on {cluster.name}: {len(rows)} stages, "
              f"{graph.meta['workload']['mode']}, exact over {plan.orders_tried} device "
              f"orders\n{'stage':>5}  {'device':<12} {'profile':<10} {'modules':>7}  "
              f"{'time ms':>9}  {'memory GB':>9} / limit", file=sys.stderr)
        for r in rows:
            print(f"{r['stage']:>5}  {r['device']:<12} {r['profile']:<10} "
                  f"{len(r['nodes']):>7}  {r['time_us'] / 1e3:>9.3f}  "
                  f"{r['memory_bytes'] / 1e9:>9.2f} / {r['memory_limit_bytes'] / 1e9:.2f}",
                  file=sys.stderr)
    cert = plan_certificate(plan)
    print(f"bottleneck {plan.bottleneck / 1e3:.6g} ms per micro-batch ("
          + ("optimal: " if cert.optimal else "") + "exact DP over splits and device "
          f"orders); stage devices: {', '.join(names)}")
    if args.output:
        write_result(args.output, {
            "format": FORMAT, "source": args.file, "objective": "throughput",
            "num_nodes": graph.num_nodes, "k": len(rows), "cpus": 0,
            "node_ids": list(graph.node_ids), "assignment": [int(a) for a in plan.assignment],
            "method": "cluster-dp", "bottleneck": plan.bottleneck, "time_unit": "us",
            "lower_bound": cert.lower_bound, "ratio": cert.ratio, "cluster": cluster.to_dict(),
            "stage_devices": names, "stages": rows, "certificate": cert.to_dict()})
        if not args.quiet:
            print(f"wrote {args.output}", file=sys.stderr)
    return 0
