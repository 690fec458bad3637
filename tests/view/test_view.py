"""jaxplace.view: the plan view of every objective's result (what it shows checked
against the result's own numbers), the self-contained HTML page, the CLI command's
errors, matplotlib figures, and the page in a real browser (headless Chromium, skipped
with the reason where none is installed)."""

from __future__ import annotations

import functools
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from repo_paths import DATA as TESTS_DATA

import jaxplace as jp
from jaxplace.cli.main import main
from jaxplace.view import html, load_view, plan_view, save_html
from jaxplace.view.model import topo_depth

DATA = TESTS_DATA / "view"
#: results written by `jaxplace partition` on DATA/tr.json (a 4-layer transformer):
#: -k 4 --certify; --cluster moirai_inter --certify (unequal devices, tr8.json); and
#: --cluster moirai_inter --objective latency --certify
RESULTS = {"throughput": "throughput.json", "hetero": "hetero.json", "latency": "latency.json"}


def _longest_path_depth(n, edges):
    """Brute force: the depth of v is the longest path into it (memoized recursion)."""
    preds = {v: [a for a, b in edges if b == v] for v in range(n)}
    memo = {}

    def d(v):
        if v not in memo:
            memo[v] = max((d(u) + 1 for u in preds[v]), default=0)
        return memo[v]

    return np.array([d(v) for v in range(n)])


@pytest.mark.parametrize("seed", range(5))
def test_depth_is_the_longest_path_from_a_source(seed):
    rng = np.random.default_rng(seed)
    n = 30
    edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, n, (60, 2)) if a < b})
    got = topo_depth(n, np.asarray(edges, np.int64).reshape(-1, 2))
    assert np.array_equal(got, _longest_path_depth(n, edges))


def test_a_cycle_is_refused():
    with pytest.raises(jp.JaxplaceError, match="cycle"):
        topo_depth(3, np.array([[0, 1], [1, 2], [2, 0]]))


def _data(name):
    return json.loads((DATA / RESULTS[name]).read_text())


@pytest.mark.parametrize("name", list(RESULTS))
def test_view_shows_the_results_own_numbers(name):
    data = _data(name)
    view = load_view(DATA / RESULTS[name])
    assert not view.notes  # the graph was found beside the result: edges drawn
    assert len(view.edges) > 0 and len(view.node_stage) == data["num_nodes"]
    if name == "throughput":
        totals = sorted(b["total"] for b in data["blocks"])
        assert sorted(s.total for s in view.stages) == totals
        for s in view.stages:
            assert math.isclose(s.total, s.transfer_in + s.compute + s.transfer_out
                                + s.overflow, rel_tol=1e-9)
        assert view.cost == data["bottleneck"]
    elif name == "hetero":
        assert [s.device for s in view.stages] == data["stage_devices"]
        assert [s.total for s in view.stages] == [r["total_s"] for r in data["stages"]]
    else:
        assert view.cost == data["makespan"]
        assert len([e for e in view.timeline if e.kind == "compute"]) == data["num_nodes"]
        finish = max(e.end for e in view.timeline)
        assert math.isclose(finish, data["makespan"], rel_tol=1e-9)
    assert view.bottleneck == int(np.argmax([s.total for s in view.stages])) or \
        name == "latency"
    # every op coloured by the stage the result gives it
    ids = data["node_ids"]
    stage_ids = [s.index for s in view.stages]
    for v, a in zip(ids, data["assignment"], strict=True):
        if name == "latency":
            assert view.node_stage[ids.index(v)] == a
        else:
            assert stage_ids[view.node_stage[ids.index(v)]] == a
    assert [r.name for r in view.ladder] == [r["name"] for r in
                                             data["certificate"]["results"]]


@pytest.mark.parametrize("name", list(RESULTS))
def test_page_is_self_contained_with_one_row_per_stage(name):
    view = load_view(DATA / RESULTS[name])
    page = html(view)
    assert page.count('class="stage-bar"') == view.num_stages
    assert page.count('class="op"') == len(view.node_stage)
    assert page.count('class="event"') == len(view.timeline)
    # nothing fetched: no external scripts, styles, images or fonts
    assert not re.search(r"<(script|link|img|iframe)[^>]*(src|href)=", page)
    assert "url(" not in page
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"] * \
        page.count("<svg")


def test_a_result_without_its_graph_is_drawn_in_order_with_a_note(tmp_path):
    data = _data("throughput")
    data["source"] = "missing.json"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    view = load_view(path)
    assert len(view.edges) == 0 and view.notes
    assert html(view).count('class="op"') == data["num_nodes"]


def test_problem_and_partition_give_the_same_view_as_their_json():
    problem = jp.load_problem(DATA / "tr.json", k=4)
    data = _data("throughput")
    a = np.asarray(data["assignment"])
    view = plan_view(a, problem=problem)
    ref = load_view(DATA / RESULTS["throughput"])
    assert [s.total for s in view.stages] == pytest.approx([s.total for s in ref.stages])
    assert np.array_equal(view.node_stage, ref.node_stage)


def test_cli_writes_the_page_and_refuses_bad_input(tmp_path, capsys):
    out = tmp_path / "plan.html"
    src = tmp_path / "r.json"
    shutil.copy(DATA / "tr.json", tmp_path / "tr.json")
    shutil.copy(DATA / RESULTS["throughput"], src)
    assert main(["view", str(src), "-o", str(out)]) == 0
    assert out.read_text().count('class="stage-bar"') == 4
    bad = tmp_path / "bad.json"
    for text, msg in (('{"format": "nope"}', "unknown result format 'nope'"),
                      ('{"format": "jaxplace-result/1", "blocks": [{}]}', "malformed"),
                      ("[1, 2", "")):
        bad.write_text(text)
        capsys.readouterr()
        assert main(["view", str(bad), "-o", str(tmp_path / "bad.html")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and msg in err
        assert not (tmp_path / "bad.html").exists()


def test_plot_draws_every_panel_the_plan_has():
    pytest.importorskip("matplotlib")
    fig = jp.plot(DATA / RESULTS["latency"])
    assert len(fig.axes) == 4  # graph, stages, ladder, timeline
    fig = jp.plot(DATA / RESULTS["throughput"])
    assert len(fig.axes) == 3


# -- the page in a real browser -------------------------------------------------------

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def _browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(page: Path, tmp: Path, *, screenshot: Path | None = None) -> str:
    """Load `page` in headless Chromium; the DOM after its scripts ran (or, with
    `screenshot`, write the PNG and return '')."""
    exe = _browser()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--disable-sync",
             f"--user-data-dir={tmp / 'profile'}"]
    what = [f"--screenshot={screenshot}", "--window-size=1280,1000"] if screenshot else \
        ["--dump-dom"]
    out = subprocess.run([exe, *flags, *what, page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    return out.stdout


def _png_pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    return np.asarray(matplotlib.image.imread(str(path)))[..., :3]


@functools.lru_cache(maxsize=2)  # one trace and plan each for the tests that draw it
def _pipeline_plan(train=False):
    torch = pytest.importorskip("torch")
    from jaxplace.torch import plan_pipeline
    from jaxplace.torch.models import GPT2

    torch.manual_seed(0)
    m = GPT2(vocab=256, ctx=32, d=32, layers=4, heads=2).eval()
    x = torch.randint(0, 256, (2, 16))
    if train:
        return plan_pipeline(m, (x,), k=2, device="cpu", train=True, schedule="1f1b",
                             n_microbatches=4)
    return plan_pipeline(m, (x,), k=2)


def test_training_plan_view_shows_its_simulated_step():
    plan = _pipeline_plan(train=True)
    view = plan_view(plan)
    assert view.num_stages == plan.num_stages and view.cost == plan.step_time
    assert len(view.timeline) == len(plan.timeline.events)
    np.testing.assert_allclose([s.compute for s in view.stages],
                               plan.stage_fwd + plan.stage_bwd)
    assert html(view).count('class="event"') == len(plan.timeline.events)


def test_search_result_displays_itself_in_notebooks():
    problem = jp.load_problem(DATA / "tr.json", k=3)
    result = jp.search(problem, seed=0)
    frag = result._repr_html_()
    assert "<script" not in frag and frag.count('class="stage-bar"') == \
        len(set(result.partition.assignment.tolist()))
    full = html(result, problem=problem)
    assert full.count('class="op"') == problem.graph.num_nodes


@pytest.mark.skipif(_browser() is None, reason="no Chromium/Chrome on PATH (apt-get "
                    "install chromium): the page is not checked in a browser here")
@pytest.mark.parametrize("name", [*RESULTS, "torch", "torch-train"])
def test_page_renders_in_headless_chromium(name, tmp_path):
    if name.startswith("torch"):
        view = plan_view(_pipeline_plan(train=name == "torch-train"))
    else:
        view = load_view(DATA / RESULTS[name])
    page = tmp_path / "plan.html"
    save_html(view, page)
    dom = browse(page, tmp_path)
    check = re.search(r'<p id="jp-check"[^>]*data-stages="(\d+)" data-ops="(\d+)"'
                      r' data-events="(\d+)"', dom)
    assert check, "the page's script did not run"
    assert int(check.group(1)) == view.num_stages >= 1
    assert int(check.group(2)) == len(view.node_stage)
    assert int(check.group(3)) == len(view.timeline)
    shot = tmp_path / "shot.png"
    browse(page, tmp_path, screenshot=shot)
    px = _png_pixels(shot)
    nonwhite = np.any(px < 0.95, axis=-1).mean()
    colours = len(np.unique((px.reshape(-1, 3) * 255).astype(np.uint8), axis=0))
    assert nonwhite > 0.02 and colours > 8
