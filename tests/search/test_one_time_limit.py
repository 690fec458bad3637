"""One meaning of a time limit and one set of defaults.

`time_limit` is the whole call for `jp.certify`, `jp.search`, `jp.search_many` and the
CLI alike; a per-rung cap is `rung_time_limit`. Each entry point ends within
limit + 10% + 5 s, on inputs where it would otherwise run longer. `jp.certify` with no
methods named runs the ladder the CLI picks (`bounds.certificate.pick_methods`).
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

import jaxplace as jp
from jaxplace.bounds import MethodResult
from jaxplace.bounds.certificate import certify_ladder, pick_methods
from jaxplace.bounds.registry import METHODS
from jaxplace.bounds.simple import SimpleBound
from jaxplace.generators import example, generate


def _within(wall: float, limit: float) -> bool:
    return wall <= limit * 1.1 + 5.0


class Sleepy:
    """A rung that sleeps all the time it is given; its bound is 0 (valid)."""

    kind = "mip"

    def __init__(self, name: str):
        self.name = name

    def run(self, problem, context):
        time.sleep(context.time_limit)
        return MethodResult(self.name, 0.0, f"limit {context.time_limit:.3f}",
                            context.time_limit, kind=self.kind)


def _tiny():
    return jp.Problem(jp.CompGraph(np.ones(6), [(i, i + 1) for i in range(5)]), 2)


@pytest.fixture(scope="module")
def regal60():
    """60 ops, k = 16: 1.4-1.7 M ideals, past the DP; every rung of the ladder at 3 s
    each would take about a minute."""
    return jp.Problem(generate("regal", seed=1, n=60), 16)


def test_certify_time_limit_covers_every_rung(regal60):
    """Every rung named (17 of them) under time_limit=3: the whole call ends within
    3 s + 10% + 5 s (per rung, as before, it took far longer), and the bound is valid."""
    part = jp.decode(regal60, np.zeros(regal60.n, np.float32), precision="reference")
    t0 = time.perf_counter()
    cert = jp.certify(regal60, part, methods=METHODS, time_limit=3.0)
    wall = time.perf_counter() - t0
    assert _within(wall, 3.0), (wall, cert.summary())
    assert 0 < cert.lower_bound <= cert.upper_bound * (1 + 1e-6)
    assert cert.settings["time_limit"] == 3.0
    ran = [r for r in cert.results if not r.status.startswith("skipped")]
    assert sum(r.time for r in ran) <= 3.0 * 1.1 + 5.0


def test_rung_time_limit_caps_each_rung_and_the_whole_is_shared():
    registry = {"simple": SimpleBound("simple"), "a": Sleepy("a"), "b": Sleepy("b")}
    t0 = time.perf_counter()
    cert = jp.certify(_tiny(), methods=list(registry), registry=registry, samples=1,
                      time_limit=10.0, rung_time_limit=0.3)
    assert time.perf_counter() - t0 < 2.0
    assert [r.status for r in cert.results[1:]] == ["limit 0.300", "limit 0.300"]
    t0 = time.perf_counter()
    cert = jp.certify(_tiny(), methods=list(registry), registry=registry, samples=1,
                      time_limit=0.8)
    wall = time.perf_counter() - t0
    limits = [float(r.status.split()[1]) for r in cert.results[1:]]
    assert limits[0] == pytest.approx(0.4, abs=0.1)  # half of it; the last the rest
    assert sum(limits) <= 0.8 and wall <= 0.8 + 0.3, (limits, wall)


def test_certify_refuses_old_and_bad_time_settings():
    with pytest.raises(jp.JaxplaceError, match="rung_time_limit") as exc:
        jp.certify(_tiny(), methods=("simple",), total_time=5.0)
    assert exc.value.field == "total_time" and "\n" not in str(exc.value)
    for kw in ({"time_limit": None}, {"time_limit": 0.0}, {"rung_time_limit": -1.0},
               {"time_limit": float("inf")}):
        with pytest.raises(jp.JaxplaceError):
            jp.certify(_tiny(), methods=("simple",), **kw)
    with pytest.raises(TypeError):
        jp.certify(_tiny(), methods=("simple",), no_such_option=1)
    # no limit on the whole, a cap per rung: the benchmarks comparing rungs
    cert = certify_ladder(_tiny(), None, ("simple", "bottleneck"), time_limit=None,
                          rung_time_limit=5.0, samples=1)
    assert cert.optimal or cert.lower_bound > 0


def test_other_objectives_share_the_limit_and_take_a_rung_cap():
    from jaxplace.cluster import load_cluster

    g = jp.CompGraph(np.ones(8), [(i, i + 1) for i in range(7)])
    p = jp.Problem(g, cluster=load_cluster("moirai_inter"), objective="latency")
    cert = jp.certify(p, time_limit=20.0, rung_time_limit=0.5)
    assert cert.settings["rung_time_limit"] == 0.5
    assert cert.settings["picked"] == f"the default bounds of {p.objective_impl.label}"
    assert [r.name for r in cert.results] == list(p.objective_impl.default_bounds)


def test_certify_default_is_the_clis_pick_on_the_readme_example(capsys):
    """jp.certify with no methods runs what `jaxplace certify --example -k 4` runs (the
    DP over ideals) and proves the optimum like it (measured: 0.15 s; not asserted)."""
    from jaxplace.cli.main import main

    p = jp.Problem(example(), 4)
    part = jp.decode(p, np.zeros(p.n, np.float32), precision="reference")
    cert = jp.certify(p, part, time_limit=60)
    assert cert.optimal and cert.method == "ideals"
    assert tuple(cert.settings["methods"]) == pick_methods(p)[0] == ("simple", "ideals")
    assert "ideals" in cert.settings["picked"]
    assert main(["certify", "--example", "-k", "4", "-q"]) == 0
    out = capsys.readouterr().out
    cli_methods = re.search(r"methods (\S+) \(", out).group(1).split(",")
    assert cli_methods == list(cert.settings["methods"])
    assert "(optimal)" in out
    assert f"{cert.lower_bound:.6g}" in out


def test_picked_mip_ladder_is_the_same_for_the_library_and_the_cli(regal60, capsys):
    """Past the DP's count the library and the CLI pick the same MIP ladder (the CLI's
    `certify` used to add bottleneck-guess, `partition --certify` not)."""
    from jaxplace.cli.cmd_certify import default_bounds

    methods, why = pick_methods(regal60)
    assert "ideals" not in methods and "exact" in methods
    assert default_bounds(regal60) == (methods, why)


@pytest.mark.heavy
def test_certify_cli_time_limit_is_the_whole_command(tmp_path):
    """`jaxplace certify --time-limit 6` (every rung named) ends within 6 s + 10% + 5 s,
    imports included (measured from outside)."""
    import subprocess
    import sys

    from jaxplace.formats import nodelink_data, write_json

    path = tmp_path / "g.json"
    write_json(path, nodelink_data(generate("regal", seed=1, n=60)))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "jaxplace", "certify", str(path), "-k", "16",
                        "--methods", ",".join(METHODS), "--time-limit", "6", "-q"],
                       capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    assert _within(wall, 6.0), (wall, r.stdout)


def _search_problems():
    return [jp.Problem(generate("regal", seed=s, n=150), k) for s, k in ((3, 4), (4, 16))]


@pytest.mark.heavy
def test_search_time_limit_is_the_whole_call():
    """jp.search(time_limit=3) on 150-op graphs (k = 4 with its MIP polish, k = 16)
    whose default budget takes longer: each ends within 3 s + 10% + 5 s, compile and
    polish included."""
    for p in _search_problems():
        t0 = time.perf_counter()
        r = jp.search(p, time_limit=3.0, seed=0, progress=False)
        wall = time.perf_counter() - t0
        assert _within(wall, 3.0), (p.k, wall, r.info.get("stopped"))
        assert r.cost == pytest.approx(
            jp.evaluate_partition(p, r.partition.assignment).bottleneck, rel=1e-9)


@pytest.mark.heavy
def test_search_many_time_limit_is_the_whole_call():
    """search_many(time_limit=4) over two 150-op problems: the call ends within 4 s +
    10% + 5 s, its programs' compiles included (problems whose program was still
    compiling get their first solutions)."""
    search_many, problems = jp.search_many, _search_problems()  # imports: not the call
    t0 = time.perf_counter()
    out = search_many(problems, time_limit=4.0, seed=0)
    wall = time.perf_counter() - t0
    assert _within(wall, 4.0), wall
    assert all(np.isfinite(r.cost) for r in out)


def test_call_by_answers_at_its_deadline_and_keeps_the_callers_jax_settings():
    """The mechanism that lets jp.search answer while XLA compiles: past `give_up`
    with an answer ready the caller gets (False, None) and the work goes on; otherwise
    the work's value or its exception; the caller's thread-local JAX settings hold in
    the work's thread."""
    import threading

    import jax

    from jaxplace.search.deadline import THREAD_NAME, call_by

    release = threading.Event()
    t0 = time.perf_counter()
    done, value = call_by(lambda: release.wait(30), t0 + 0.3, lambda: True)
    assert (done, value) == (False, None) and time.perf_counter() - t0 < 2.0
    assert any(t.name == THREAD_NAME for t in threading.enumerate())
    release.set()
    # not ready: it waits for the work
    done, value = call_by(lambda: (time.sleep(0.4), 7)[1], time.perf_counter(),
                          lambda: False)
    assert (done, value) == (True, 7)
    with pytest.raises(ZeroDivisionError):
        call_by(lambda: 1 / 0, time.perf_counter() + 5, lambda: True)
    with jax.enable_x64(True):
        done, value = call_by(lambda: bool(jax.config.jax_enable_x64),
                              time.perf_counter() + 5, lambda: False)
    assert done and value is True
