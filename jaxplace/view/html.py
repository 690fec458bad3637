"""A plan as one self-contained HTML page: inline SVG, CSS and a few lines of JS, no
server, no network, nothing fetched.

Sections: the graph by topological depth coloured by stage (edges that cross stages,
the transfers, drawn dark), per-stage bars (received, compute, sent, overflow; memory
against capacity; the bottleneck outlined), the certificate's ladder (each bound as a
share of the plan's cost) and the timeline where the plan has one. Every stage row
carries `class="stage-bar" data-stage="s"`, every op `class="op" data-stage="s"`; the
script fills `#jp-check` with their counts once the page has run, which is what the
headless-browser test reads.
"""

from __future__ import annotations

import math
import os
from html import escape
from typing import Any

import numpy as np

from jaxplace.errors import JaxplaceError
from jaxplace.view._colors import fmt_bytes, fmt_time, stage_color
from jaxplace.view.model import PlanView
from jaxplace.view.sources import plan_view

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;
background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.sub{color:#555}.note{color:#8a5a00;font-size:12px}
svg text{font:11px system-ui,sans-serif;fill:#333}
.legend span{display:inline-block;margin:2px 10px 2px 0;cursor:default}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;
border-radius:2px}
.dim{opacity:.15}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right}
th{border-bottom:1px solid #ccc}td:first-child,th:first-child{text-align:left}
"""

_JS = """
(function(){
  var rows=document.querySelectorAll('.stage-bar'), ops=document.querySelectorAll('.op');
  var check=document.getElementById('jp-check');
  check.setAttribute('data-stages', rows.length);
  check.setAttribute('data-ops', ops.length);
  check.setAttribute('data-events', document.querySelectorAll('.event').length);
  check.textContent='rendered: '+rows.length+' stages, '+ops.length+' ops';
  function focus(s){
    document.querySelectorAll('[data-stage]').forEach(function(e){
      if(e.id==='jp-check')return;
      e.classList.toggle('dim', s!==null && e.getAttribute('data-stage')!==s);});
  }
  document.querySelectorAll('.legend [data-stage], .stage-bar').forEach(function(e){
    e.addEventListener('mouseenter',function(){focus(e.getAttribute('data-stage'));});
    e.addEventListener('mouseleave',function(){focus(null);});
  });
})();
"""

#: the most ops drawn as separate shapes; larger graphs are drawn by depth columns
MAX_DRAWN_OPS = 20_000


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" role="img" '
            f'aria-label="{escape(label)}">' + "".join(body) + "</svg>")


def graph_svg(view: PlanView, width: float = 1100.0) -> str:
    """The ops as dots, x by topological depth, stacked by stage within a depth."""
    n = len(view.node_stage)
    if n == 0:
        return ""
    depth = np.asarray(view.node_depth, np.int64)
    stage = np.asarray(view.node_stage, np.int64)
    cols = int(depth.max()) + 1
    order = np.lexsort((np.arange(n), stage, depth))
    row = np.zeros(n, np.int64)
    counts = np.zeros(cols, np.int64)
    for v in order:  # position within its depth column, grouped by stage
        row[v] = counts[depth[v]]
        counts[depth[v]] += 1
    rows = int(counts.max())
    dx = min(40.0, max(2.0, (width - 40) / max(cols, 1)))
    dy = min(24.0, max(2.0, 420.0 / max(rows, 1)))
    r = max(1.0, min(6.0, 0.4 * min(dx, dy)))
    x = 20 + dx * depth + dx / 2
    y = 20 + dy * row + dy / 2
    w, h = 40 + dx * cols, 40 + dy * rows
    body = []
    e = np.asarray(view.edges, np.int64).reshape(-1, 2)
    if len(e) and n <= MAX_DRAWN_OPS:
        cut = stage[e[:, 0]] != stage[e[:, 1]]
        for mask, color, sw in ((~cut, "#bbbbbb", 0.6), (cut, "#333333", 1.2)):
            d = " ".join(f"M{x[a]:.1f} {y[a]:.1f}L{x[b]:.1f} {y[b]:.1f}" for a, b in e[mask])
            if d:
                body.append(f'<path d="{d}" stroke="{color}" stroke-width="{sw}" '
                            f'fill="none" opacity="0.7"/>')
    if n <= MAX_DRAWN_OPS:
        for v in range(n):
            s = int(stage[v])
            body.append(f'<circle class="op" data-stage="{s}" cx="{x[v]:.1f}" '
                        f'cy="{y[v]:.1f}" r="{r:.1f}" fill="{stage_color(s)}">'
                        f'<title>{escape(view.node_labels[v])} (stage {s}, depth '
                        f'{depth[v]})</title></circle>')
    else:  # one bar per (depth, stage) run keeps the page small
        for v in order:
            s = int(stage[v])
            body.append(f'<rect data-stage="{s}" x="{x[v] - dx / 2:.1f}" '
                        f'y="{y[v] - dy / 2:.1f}" width="{dx:.1f}" height="{dy:.1f}" '
                        f'fill="{stage_color(s)}"/>')
    return _svg(w, h, body, "the graph by topological depth, coloured by stage")


def legend(view: PlanView) -> str:
    items = [f'<span data-stage="{s.index if view.stages else i}"><i style="background:'
             f'{stage_color(i)}"></i>stage {i} ({escape(s.device)})</span>'
             for i, s in enumerate(view.stages)]
    return f'<div class="legend">{"".join(items)}</div>'


def stages_svg(view: PlanView, width: float = 1100.0) -> str:
    """Per stage: received | compute | sent | overflow, scaled to the largest total,
    and memory against capacity (or the largest memory)."""
    if not view.stages:
        return ""
    known = [s for s in view.stages if math.isfinite(s.total)]
    label_w, mem_w, row_h = 190.0, 220.0, 26.0
    bar_w = width - label_w - mem_w - 200
    scale = max((s.total for s in known), default=0.0)
    mems = [s.memory for s in view.stages if math.isfinite(s.memory)]
    mem_scale = max([s.capacity for s in view.stages if math.isfinite(s.capacity)] + mems
                    + [0.0])
    max_ops = max(s.ops for s in view.stages) or 1
    body = [f'<text x="{label_w}" y="12">time per stage: received | compute | sent | '
            f'overflow</text>',
            f'<text x="{width - mem_w}" y="12">memory / capacity</text>']
    for i, s in enumerate(view.stages):
        y = 20 + i * row_h
        c = stage_color(i)
        hot = view.bottleneck == i
        parts = [f'<g class="stage-bar" data-stage="{i}">',
                 f'<text x="0" y="{y + 16}">stage {i}: {escape(s.device[:22])} '
                 f'({s.ops} ops)</text>']
        if math.isfinite(s.total) and scale > 0:
            x0 = label_w
            for val, fill, name, op in ((s.transfer_in, c, "received", 0.35),
                                        (s.compute, c, "compute", 1.0),
                                        (s.transfer_out, c, "sent", 0.55),
                                        (s.overflow, "#d62728", "overflow", 0.8)):
                if math.isfinite(val) and val > 0:
                    wv = bar_w * val / scale
                    parts.append(f'<rect x="{x0:.1f}" y="{y + 3}" width="{wv:.1f}" '
                                 f'height="{row_h - 8}" fill="{fill}" opacity="{op}">'
                                 f'<title>{name} {fmt_time(val, view.unit)}</title></rect>')
                    x0 += wv
            if hot:
                parts.append(f'<rect x="{label_w - 2}" y="{y + 1}" '
                             f'width="{bar_w * s.total / scale + 4:.1f}" height="{row_h - 4}"'
                             f' fill="none" stroke="#d62728" stroke-width="2"/>')
            parts.append(f'<text x="{label_w + bar_w * s.total / scale + 6:.1f}" '
                         f'y="{y + 16}">{fmt_time(s.total, view.unit)}'
                         f'{" (bottleneck)" if hot else ""}</text>')
        else:
            wv = bar_w * s.ops / max_ops
            parts.append(f'<rect x="{label_w}" y="{y + 3}" width="{wv:.1f}" '
                         f'height="{row_h - 8}" fill="{c}"><title>{s.ops} ops</title></rect>')
        if math.isfinite(s.memory) and mem_scale > 0:
            mx = width - mem_w
            parts.append(f'<rect x="{mx}" y="{y + 3}" width="{mem_w - 90}" '
                         f'height="{row_h - 8}" fill="#eee"/>')
            frac = min(s.memory / mem_scale, 1.0)
            over = math.isfinite(s.capacity) and s.memory > s.capacity
            parts.append(f'<rect x="{mx}" y="{y + 3}" width="{(mem_w - 90) * frac:.1f}" '
                         f'height="{row_h - 8}" fill="{"#d62728" if over else c}"/>')
            cap = f" / {fmt_bytes(s.capacity)}" if math.isfinite(s.capacity) else ""
            parts.append(f'<text x="{width - 86}" y="{y + 16}">{fmt_bytes(s.memory)}'
                         f'{escape(cap)}</text>')
        parts.append("</g>")
        body += parts
    return _svg(width + 60, 30 + row_h * len(view.stages), body,
                "per-stage time and memory")


def ladder_svg(view: PlanView, width: float = 1100.0) -> str:
    """Each rung's bound as a share of the plan's cost (1 proves the plan optimal)."""
    if not view.ladder:
        return ""
    ub = view.upper_bound if math.isfinite(view.upper_bound) else view.cost
    label_w, row_h, bar_w = 170.0, 22.0, width - 520.0
    body = []
    for i, r in enumerate(view.ladder):
        y = 6 + i * row_h
        frac = r.bound / ub if math.isfinite(r.bound) and ub > 0 else math.nan
        body.append(f'<text x="0" y="{y + 14}">{escape(r.name)}</text>')
        body.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="{row_h - 8}" '
                    f'fill="#f1f1f1"/>')
        if math.isfinite(frac):
            fill = "#2ca02c" if frac >= 1 - 1e-6 else "#4e79a7"  # green: proves optimal
            body.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w * min(frac, 1):.1f}" '
                        f'height="{row_h - 8}" fill="{fill}"/>')
        body.append(f'<text x="{label_w + bar_w + 8}" y="{y + 14}">LB/UB '
                    f'{"n/a" if not math.isfinite(frac) else f"{frac:.4f}"} · '
                    f'{fmt_time(r.bound, view.unit)} · {escape(r.status)} · '
                    f'{r.time:.2f} s</text>')
    return _svg(width, 12 + row_h * len(view.ladder), body, "the certificate's ladder")


def timeline_svg(view: PlanView, width: float = 1100.0) -> str:
    """The timeline's bars, one lane per rank or device, coloured by stage (backward
    darker, weight gradients lighter, sends outlined)."""
    if not view.timeline:
        return ""
    lanes = sorted({e.lane for e in view.timeline},
                   key=lambda s: (s.split(" ")[0], _natural(s)))
    t0 = min(e.start for e in view.timeline)
    t1 = max(e.end for e in view.timeline)
    span = (t1 - t0) or 1.0
    label_w, lane_h = 120.0, 26.0
    plot_w = width - label_w - 110
    body = []
    for li, lane in enumerate(lanes):
        y = 6 + li * lane_h
        body.append(f'<text x="0" y="{y + 16}">{escape(lane)}</text>')
        busy = 0.0
        for e in (e for e in view.timeline if e.lane == lane):
            x = label_w + plot_w * (e.start - t0) / span
            w = max(plot_w * (e.end - e.start) / span, 0.5)
            c = stage_color(e.stage)
            send = e.kind == "send"
            op = {"B": 0.7, "W": 0.45}.get(e.kind, 1.0)
            if not send:
                busy += e.end - e.start
            hy, hh = (y + 14, lane_h - 18) if send else (y + 3, lane_h - 8)
            stroke = ' stroke="#333" stroke-width="0.5"' if send else ""
            body.append(f'<rect class="event" data-stage="{e.stage}" x="{x:.2f}" y="{hy}" '
                        f'width="{w:.2f}" height="{hh}" fill="{c}" opacity="{op}"{stroke}>'
                        f'<title>{escape(e.label)}: {fmt_time(e.start, "s")} - '
                        f'{fmt_time(e.end, "s")}</title></rect>')
        if not lane.startswith("link"):
            body.append(f'<text x="{label_w + plot_w + 6}" y="{y + 16}">idle '
                        f'{1 - busy / span:.0%}</text>')
    ya = 12 + lane_h * len(lanes)
    for k in range(6):
        x = label_w + plot_w * k / 5
        body.append(f'<text x="{x:.1f}" y="{ya}" text-anchor="middle">'
                    f'{fmt_time(t0 + span * k / 5, "s")}</text>')
    return _svg(width, ya + 8, body, "timeline")


def _natural(s: str) -> tuple:
    tail = s.split(" ")[-1]
    return (int(tail),) if tail.isdigit() else (0, tail)


def render_html(view: PlanView) -> str:
    """The page's text."""
    head = [f"{escape(view.objective)}" if view.objective else ""]
    if math.isfinite(view.cost):
        head.append(f"{escape(view.cost_name)} {fmt_time(view.cost, view.unit)}")
    if math.isfinite(view.lower_bound):
        head.append(f"lower bound {fmt_time(view.lower_bound, view.unit)}")
    if math.isfinite(view.ratio):
        head.append(f"ratio {view.ratio:.4f}")
    sections = [f"<header><h1>{escape(view.title)}</h1>"
                f'<p class="sub">{" · ".join(h for h in head if h)}</p>'
                + "".join(f'<p class="note">{escape(n)}</p>' for n in view.notes)
                + "</header>"]
    if len(view.node_stage):
        sections.append(f'<section id="graph"><h2>Graph by topological depth '
                        f'({len(view.node_stage)} ops, {len(view.edges)} edges; cut edges '
                        f'dark)</h2>{legend(view)}{graph_svg(view)}</section>')
    if view.stages:
        sections.append(f'<section id="stages"><h2>Stages</h2>{stages_svg(view)}</section>')
    if view.ladder:
        sections.append(f'<section id="ladder"><h2>Certificate</h2>{ladder_svg(view)}'
                        f'</section>')
    if view.timeline:
        sections.append(f'<section id="timeline"><h2>{escape(view.timeline_title or "Timeline")}'
                        f'</h2>{timeline_svg(view)}</section>')
    sections.append('<p id="jp-check" class="sub"></p>')
    return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(view.title)} - jaxplace plan</title><style>{_CSS}</style>"
            f'</head><body>{"".join(sections)}<script>{_JS}</script></body></html>')


def html_fragment(obj: Any, **kwargs) -> str:
    """The view as an HTML fragment for notebooks (`_repr_html_`): the page's sections
    in a <div>, its script left out (notebooks sanitize scripts)."""
    view = plan_view(obj, **kwargs)
    page = render_html(view)
    body = page[page.index("<body>") + 6:page.index("<script>")]
    return f"<div><style>{_CSS}</style>{body}</div>"


def html(obj: Any, **kwargs) -> str:
    """The self-contained HTML page of `obj` (anything `plan_view` accepts; keyword
    arguments go to it)."""
    return render_html(plan_view(obj, **kwargs))


def save_html(obj: Any, path: str | os.PathLike, **kwargs) -> str:
    """Write the page of `obj` to `path` atomically; returns the path."""
    text = html(obj, **kwargs)
    write_text_atomic(path, text)
    return str(path)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """A temp file beside `path`, then a rename: a crash leaves the old file or the
    new one, never half of one."""
    import tempfile
    from pathlib import Path

    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise JaxplaceError("folder does not exist", source=str(folder))
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
