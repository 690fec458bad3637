"""Plans you can look at: one self-contained HTML page (`html`, `save_html`,
`jaxplace view`), the same views with matplotlib (`plot`), and Chrome/Perfetto
traces of predicted and measured pipeline schedules (`chrome_trace`).

    from jaxplace import view
    view.save_html("result.json", "plan.html")
    view.save_html(result, "plan.html", problem=problem, certificate=cert)
"""

from jaxplace.view.html import html, html_fragment, render_html, save_html
from jaxplace.view.model import PlanView, StageView, from_result_dict, load_view
from jaxplace.view.figure import plot
from jaxplace.view.sources import plan_view, timeline_events
from jaxplace.view.trace import bubble_shares, chrome_trace, save_trace

__all__ = [
    "PlanView",
    "StageView",
    "bubble_shares",
    "chrome_trace",
    "from_result_dict",
    "html",
    "html_fragment",
    "load_view",
    "plan_view",
    "plot",
    "render_html",
    "save_trace",
    "save_html",
    "timeline_events",
]
