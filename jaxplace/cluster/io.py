"""Reading cluster files (JSON) into `Cluster`, with one-line errors naming the field.

    {"devices": [{"name": "gpu0", "profile": "h100", "memory": 80e9},
                 {"name": "gpu1", "peak_flops": 1.2e14, "mem_bw": 9e11, "memory": 16e9}],
     "bandwidth": [[0, 4.5e10], [4.0e10, 0]],      # bytes/s, row = sender
     "latency": 5e-6}                               # seconds: a number or a matrix

A device names a built-in profile (`jaxplace info --devices` lists them) and may
override its `peak_tflops`, `mem_bw_gbs`, `link_bw_gbs` or `launch_us`; or it gives
explicit rates: `peak_flops` (matrix units, FLOP/s), optional `vector_flops` (default
peak_flops / 8), `mem_bw` (bytes/s) and optional `launch_s`. `memory` (bytes) defaults
to the profile's. `bandwidth` may also be one number (every link alike) or be left out
when every device has a profile (then link i -> j runs at the smaller of the two
profiles' link bandwidths). The diagonal of the matrices is ignored.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from jaxplace.cluster.model import Cluster, Device
from jaxplace.errors import JaxplaceError
from jaxplace.importers.devices import DeviceProfile, get_device
from jaxplace.jsonio import read_json

EXAMPLES_DIR = Path(__file__).with_name("examples")
_OVERRIDES = ("peak_tflops", "mem_bw_gbs", "link_bw_gbs", "launch_us")
_EXPLICIT = ("peak_flops", "vector_flops", "mem_bw", "launch_s")
_DEVICE_KEYS = {"name", "profile", "memory", *_OVERRIDES, *_EXPLICIT, "link_bw"}


def _number(v: Any, field: str, *, positive: bool = True, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise JaxplaceError(f"must be a number, got {v!r}", field=field)
    x = float(v)
    ok = math.isfinite(x) and (x > 0 or (allow_zero and x == 0) or not positive)
    if not ok:
        want = "non-negative" if allow_zero else "positive"
        raise JaxplaceError(f"must be {want} and finite, got {v!r}", field=field)
    return x


def _profile(entry: dict, field: str) -> DeviceProfile:
    unknown = sorted(set(entry) - _DEVICE_KEYS)
    if unknown:
        raise JaxplaceError(f"unknown key {unknown[0]!r}; expected some of "
                            f"{', '.join(sorted(_DEVICE_KEYS))}", field=field)
    if "profile" in entry:
        if any(k in entry for k in _EXPLICIT):
            raise JaxplaceError("give either 'profile' (with optional overrides) or "
                                "explicit rates (peak_flops, mem_bw), not both", field=field)
        over = {k: _number(entry[k], f"{field}.{k}", allow_zero=k == "launch_us")
                for k in _OVERRIDES if k in entry}
        try:
            return get_device(str(entry["profile"]), **over)
        except JaxplaceError as e:
            sub = "profile" if e.field in (None, "device") else e.field
            raise JaxplaceError(e.message, field=f"{field}.{sub}") from None
    if "peak_flops" not in entry or "mem_bw" not in entry:
        raise JaxplaceError("needs 'profile' or both 'peak_flops' and 'mem_bw'", field=field)
    peak = _number(entry["peak_flops"], f"{field}.peak_flops")
    vec = _number(entry.get("vector_flops", peak / 8), f"{field}.vector_flops")
    name = str(entry.get("name", "custom"))
    link = _number(entry.get("link_bw", 1e10), f"{field}.link_bw")
    return DeviceProfile(
        name=name, description=f"explicit rates of {name}",
        matrix={"fp32": peak}, vector={"fp32": vec},
        mem_bw=_number(entry["mem_bw"], f"{field}.mem_bw"), link_bw=link,
        launch_s=_number(entry.get("launch_s", 0.0), f"{field}.launch_s", allow_zero=True),
        memory_bytes=float(entry.get("memory", 0.0) or 0.0))


def _matrix(value: Any, d: int, field: str, *, default: float | None,
            diag: float, allow_zero: bool) -> np.ndarray:
    if value is None:
        if default is None:
            raise JaxplaceError("missing", field=field)
        value = default
    if isinstance(value, int | float) and not isinstance(value, bool):
        x = _number(value, field, allow_zero=allow_zero)
        m = np.full((d, d), x)
    else:
        if not isinstance(value, list) or len(value) != d or not all(
                isinstance(r, list) for r in value):
            got = len(value) if isinstance(value, list) else type(value).__name__
            raise JaxplaceError(f"must be a number or a {d}x{d} matrix (one row per "
                                f"device), got {got} rows", field=field)
        m = np.empty((d, d))
        for i, row in enumerate(value):
            if len(row) != d:
                raise JaxplaceError(f"must have {d} entries, got {len(row)}",
                                    field=f"{field}[{i}]")
            for j, v in enumerate(row):
                if i == j:
                    m[i, j] = diag
                    continue
                m[i, j] = _number(v, f"{field}[{i}][{j}]", allow_zero=allow_zero)
    np.fill_diagonal(m, diag)
    return m


def cluster_from_dict(data: Any, source: str = "cluster") -> Cluster:
    """A validated Cluster from the parsed JSON form (see the module docstring)."""
    try:
        if not isinstance(data, dict):
            raise JaxplaceError("expected a JSON object with 'devices'")
        devs = data.get("devices")
        if not isinstance(devs, list) or not devs:
            raise JaxplaceError("must be a non-empty list of devices", field="devices")
        devices, seen = [], set()
        for i, entry in enumerate(devs):
            field = f"devices[{i}]"
            if isinstance(entry, str):
                entry = {"name": f"{entry}{i}", "profile": entry}
            if not isinstance(entry, dict):
                raise JaxplaceError("must be an object or a profile name", field=field)
            name = str(entry.get("name", f"dev{i}"))
            if name in seen:
                raise JaxplaceError(f"duplicate device name {name!r}", field=f"{field}.name")
            seen.add(name)
            prof = _profile(entry, field)
            mem = entry.get("memory", prof.memory_bytes)
            mem = _number(mem, f"{field}.memory")
            devices.append(Device(name, prof, mem))
        d = len(devices)
        bw_default = None
        if data.get("bandwidth") is None:
            links = np.array([x.profile.link_bw for x in devices])
            bw_default = np.minimum.outer(links, links).tolist()
        bw = _matrix(data.get("bandwidth", bw_default), d, "bandwidth", default=None,
                     diag=math.inf, allow_zero=False)
        lat = _matrix(data.get("latency", 0.0), d, "latency", default=0.0, diag=0.0,
                      allow_zero=True)
        unknown = sorted(set(data) - {"devices", "bandwidth", "latency", "name", "_comment",
                                      "sources"})
        if unknown:
            raise JaxplaceError(f"unknown key {unknown[0]!r}", field=unknown[0])
        return Cluster(tuple(devices), bw, lat, name=str(data.get("name", source)))
    except JaxplaceError as e:
        raise e.with_source(source) from None


def load_cluster(path: str | os.PathLike) -> Cluster:
    """Read a cluster file, or a shipped example by name (`example_names()`)."""
    source = str(path)
    if not Path(source).exists() and (EXAMPLES_DIR / f"{source}.json").exists():
        source = str(EXAMPLES_DIR / f"{source}.json")
    return cluster_from_dict(read_json(source), source)


def example_names() -> list[str]:
    """The shipped example clusters (MOIRAI's two testbeds)."""
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.json"))


def uniform_cluster(k: int, profile: str | DeviceProfile = "h100", *,
                    memory: float | None = None, bandwidth: float | None = None,
                    latency: float = 0.0) -> Cluster:
    """k identical devices, every link alike (default: the profile's link bandwidth)."""
    prof = get_device(profile)
    mem = prof.memory_bytes if memory is None else memory
    bw = prof.link_bw if bandwidth is None else bandwidth
    data = {"devices": [{"name": f"{prof.name}-{i}", "profile": prof.name, "memory": mem}
                        for i in range(k)], "bandwidth": bw, "latency": latency,
            "name": f"{k}x{prof.name}"}
    c = cluster_from_dict(data, "uniform")
    return Cluster(tuple(Device(x.name, prof, x.memory) for x in c.devices), c.bandwidth,
                   c.latency, name=c.name)
