"""jaxplace.view.trace: Chrome / Perfetto traces of simulated and measured pipeline
steps: the Trace Event Format's fields and types, the predicted makespan equal to the
simulator's step time, no two events of one rank overlapping, the bubble shares, and
the flows of every send between two ranks."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.pipeline.schedule import simulate_schedule
from jaxplace.view.trace import PIDS, bubble_shares, chrome_trace, save_trace

#: schedule -> chunks per rank
SCHEDULES = {"gpipe": 1, "1f1b": 1, "interleaved-1f1b": 2, "zero-bubble": 1, "zbv": 2}


def _timeline(schedule, seed, ranks=3, mb=4):
    rng = np.random.default_rng(seed)
    stages = ranks * SCHEDULES[schedule]
    fwd = rng.uniform(1e-3, 3e-3, stages)
    return simulate_schedule(schedule, fwd, 2 * fwd * rng.uniform(0.8, 1.2, stages),
                             max(mb, ranks) if schedule != "interleaved-1f1b" else 2 * ranks,
                             send=rng.uniform(0, 4e-4, stages - 1),
                             n_virtual=SCHEDULES[schedule])


def check_schema(trace: dict) -> None:
    """What Perfetto's JSON importer reads (Trace Event Format): the required fields of
    every phase used, with their types."""
    json.dumps(trace, allow_nan=False)  # finite numbers only
    assert isinstance(trace["traceEvents"], list)
    flows: dict[int, list[str]] = {}
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and isinstance(e["pid"], int) and \
            isinstance(e["tid"], int)
        ph = e["ph"]
        assert ph in ("X", "M", "C", "s", "f")
        if ph == "X":
            assert isinstance(e["ts"], float) and isinstance(e["dur"], float)
            assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["cat"], str)
        elif ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
            assert isinstance(e["args"], dict)
        elif ph == "C":
            assert all(isinstance(v, float) for v in e["args"].values())
        else:
            assert isinstance(e["id"], int) and isinstance(e["ts"], float)
            if ph == "f":
                assert e["bp"] == "e"
            flows.setdefault(e["id"], []).append(ph)
    assert all(sorted(v) == ["f", "s"] for v in flows.values())


def _complete(trace, pid):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]


@pytest.mark.parametrize("schedule", list(SCHEDULES))
@pytest.mark.parametrize("seed", range(3))
def test_predicted_trace_is_the_simulated_step(schedule, seed):
    tl = _timeline(schedule, seed)
    trace = chrome_trace(tl)
    check_schema(trace)
    xs = _complete(trace, PIDS["predicted"])
    assert len(xs) == len(tl.events)
    makespan = max(e["ts"] + e["dur"] for e in xs) - min(e["ts"] for e in xs)
    assert makespan == pytest.approx(tl.step_time * 1e6, rel=1e-12)
    assert trace["metadata"]["step_time_s"]["predicted"] == pytest.approx(tl.step_time)
    assert trace["metadata"]["bubble"]["predicted"] == pytest.approx(list(tl.bubble))
    for rank in range(tl.num_ranks):  # a rank does one thing at a time
        ev = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if e["tid"] == rank)
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(ev, ev[1:]))


def test_every_cross_rank_dependency_has_a_flow_forward_in_time():
    tl = _timeline("1f1b", 0)
    trace = chrome_trace(tl)
    s = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "s"}
    f = {e["id"]: e for e in trace["traceEvents"] if e["ph"] == "f"}
    assert s.keys() == f.keys()
    for k in s:
        assert s[k]["tid"] != f[k]["tid"] and f[k]["ts"] >= s[k]["ts"]
    # one activation and one gradient per boundary and microbatch
    n_mb = 1 + max(e.microbatch for e in tl.events)
    assert len(s) == 2 * (tl.num_ranks - 1) * n_mb


def test_predicted_and_measured_side_by_side():
    tl = _timeline("gpipe", 1)
    offset = 123.0  # a measured clock starts anywhere; the trace starts it at 0
    measured = [replace(e, start=offset + e.start * 1.3, end=offset + e.end * 1.3)
                for e in tl.events]
    trace = chrome_trace(tl, measured)
    check_schema(trace)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["name"] == "process_name"}
    assert names == {1: "predicted (gpipe)", 2: "measured run"}
    m = _complete(trace, PIDS["measured"])
    assert min(e["ts"] for e in m) == 0.0
    assert trace["metadata"]["step_time_s"]["measured"] == pytest.approx(1.3 * tl.step_time)
    assert trace["metadata"]["bubble"]["measured"] == pytest.approx(
        list(bubble_shares(measured)))


def test_dict_events_and_file(tmp_path):
    tl = _timeline("1f1b", 2)
    events = [e.__dict__ for e in tl.events]
    path = tmp_path / "trace.json"
    save_trace(path, measured=events)
    trace = json.loads(path.read_text())
    check_schema(trace)
    assert {e["pid"] for e in trace["traceEvents"]} == {PIDS["measured"]}


@pytest.mark.parametrize("bad", [[], [{"rank": 0}], [{"rank": 0, "stage": 0, "microbatch": 0,
                                                      "kind": "Q", "start": 0, "end": 1}],
                                 [{"rank": 0, "stage": 0, "microbatch": 0, "kind": "F",
                                   "start": 2, "end": 1}]])
def test_bad_timelines_are_one_clear_error(bad):
    with pytest.raises(jp.JaxplaceError, match="measured"):
        chrome_trace(measured=bad)


@pytest.mark.heavy
def test_trace_of_a_real_training_run_beside_its_prediction():
    """A 2-process run (gloo) of a tiny MLP: its measured events (one clock, barrier-
    aligned) and the predicted schedule in one valid trace; a rank's events never
    overlap in either."""
    torch = pytest.importorskip("torch")
    from jaxplace.calibrate import measure_step
    from jaxplace.torch import plan_pipeline
    from jaxplace.torch.models import UnequalMLP

    torch.manual_seed(0)
    m = UnequalMLP(widths=(32, 64, 16, 48, 8)).eval()
    x = torch.randn(4, 32)
    plan = plan_pipeline(m, (x,), k=2, device="cpu", train=True, schedule="1f1b",
                         n_microbatches=2, optimizer="sgd")
    run = measure_step(plan, m, (torch.cat([x, x]),), steps=1)
    trace = chrome_trace(plan.timeline, run.events)
    check_schema(trace)
    for pid in PIDS.values():
        xs = _complete(trace, pid)
        assert xs
        for rank in {e["tid"] for e in xs}:
            ev = sorted((e["ts"], e["ts"] + e["dur"]) for e in xs if e["tid"] == rank)
            assert all(b[0] >= a[1] - 1e-3 for a, b in zip(ev, ev[1:]))
    assert {e["args"]["kind"] for e in _complete(trace, PIDS["measured"])} >= {"F", "B"}
