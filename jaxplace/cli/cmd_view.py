"""`jaxplace view RESULT -o plan.html`: a result JSON of any objective as one
self-contained HTML page (the graph coloured by stage, per-stage bars, the
certificate's ladder, the timeline where the plan has one)."""

from __future__ import annotations

HELP = "draw a result JSON as a self-contained HTML page"
DESCRIPTION = (
    "Write one HTML file (inline SVG, CSS and JS; no server, no network) showing the plan "
    "in RESULT: the graph laid out by topological depth and coloured by stage, per-stage "
    "time (received, compute, sent, overflow) and memory bars with the bottleneck marked, "
    "the certificate's ladder, and the schedule's timeline where the result has one "
    "(latency plans). The graph comes from --graph, else from the file the result names "
    "in 'source' (beside the result or in the working folder); without it the ops are "
    "drawn in the result's order, without edges.")


def add_arguments(p) -> None:
    p.add_argument("result", help="result JSON written by `jaxplace partition -o`")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="HTML file to write (default: RESULT with .html)")
    p.add_argument("--graph", metavar="FILE", help="the graph file the result splits")


def run(args) -> int:
    from pathlib import Path

    from jaxplace.view import load_view, save_html

    out = args.output or str(Path(args.result).with_suffix(".html"))
    view = load_view(args.result, args.graph)
    save_html(view, out)
    print(f"wrote {out} ({view.num_stages} stages, {len(view.node_stage)} ops"
          f"{', timeline' if view.timeline else ''})")
    return 0
