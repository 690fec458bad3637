"""Device profiles for the roofline cost model, read from `devices.json`.

Every number in the data file names its source (vendor datasheets, Cloud TPU docs);
the ones that are not published are marked as estimates there. Profiles are selected
by name, case-insensitively (`get_device("H100")`), or by the path of a profile JSON
(`save_profile` writes one; `jaxplace calibrate` fits one to the machine), and any field
can be overridden (`get_device("h100", peak_tflops=400, mem_bw_gbs=2000)`), which is
what the CLI flags `--peak-tflops`, `--mem-bw`, `--link-bw` and `--launch-us` do.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from jaxplace.errors import JaxplaceError
from jaxplace.jsonio import read_json, write_json

_DATA = Path(__file__).with_name("devices.json")

# Canonical dtype names used as keys of `matrix` / `vector`, and the fallbacks used
# when a profile has no entry for a dtype.
_FALLBACK = {
    "fp64": ("fp64", "fp32"),
    "fp32": ("fp32",),
    "tf32": ("tf32", "fp32"),
    # a device without bf16 (Volta, Turing, Pascal) emulates it at the fp32 rate
    "bf16": ("bf16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    "int8": ("int8", "int32", "fp32"),
    "int32": ("int32", "fp32"),
}


def canonical_dtype(dtype: Any) -> str:
    """Map a numpy/JAX/ONNX dtype (or its name) to a profile key: fp64, fp32, bf16,
    fp16, fp8, int8 or int32 (other integer and bool types count as int32)."""
    import numpy as np

    name = str(getattr(dtype, "name", dtype)).lower()
    if name in _FALLBACK:
        return name
    if "bfloat16" in name:
        return "bf16"
    if "float8" in name or name.startswith("f8"):
        return "fp8"
    try:
        dt = np.dtype(name)
    except TypeError:
        return "fp32"
    if dt.kind == "f" or dt.kind == "c":
        return {8: "fp64", 4: "fp32", 2: "fp16", 16: "fp64"}.get(dt.itemsize, "fp32")
    if dt.kind in "iu" and dt.itemsize == 1:
        return "int8"
    return "int32"


@dataclass(frozen=True)
class DeviceProfile:
    """Peak rates of one accelerator.

    Attributes:
        name: registry key, e.g. "h100".
        description: the product the numbers describe.
        matrix: dtype -> peak FLOP/s of the matrix units (dense), used for dot/conv.
        vector: dtype -> peak FLOP/s of the vector units, used for everything else.
        mem_bw: device-memory bandwidth, bytes/s.
        link_bw: stage-to-stage link bandwidth (one direction), bytes/s.
        launch_s: fixed per-op overhead, seconds.
        memory_bytes: device memory capacity, bytes.
        sources: where the numbers come from.
        link_latency_s: fixed time per stage-to-stage message, seconds (measured
            profiles; the built-in ones leave it 0).
        backward_launch_s: per-op overhead of an op's backward, seconds (None: as
            launch_s); a training step's backward runs under autograd's dispatcher.
        calibration: how a measured profile was fitted (what was measured, errors).
    """

    name: str
    description: str
    matrix: dict[str, float]
    vector: dict[str, float]
    mem_bw: float
    link_bw: float
    launch_s: float
    memory_bytes: float
    sources: tuple[str, ...] = ()
    notes: str = ""
    overrides: dict[str, float] = field(default_factory=dict)
    link_latency_s: float = 0.0
    backward_launch_s: float | None = None
    calibration: dict = field(default_factory=dict)

    def peak(self, dtype: Any, *, matrix: bool) -> float:
        """Peak FLOP/s for an op of this dtype on the matrix or vector units."""
        table = self.matrix if matrix else self.vector
        for key in _FALLBACK[canonical_dtype(dtype)]:
            if key in table:
                return float(table[key])
        return float(max(table.values()))

    def to_meta(self) -> dict[str, Any]:
        """A JSON-friendly summary stored in the graph's `meta`."""
        return {"name": self.name, "description": self.description,
                "matrix_flops": dict(self.matrix), "vector_flops": dict(self.vector),
                "mem_bw": self.mem_bw, "link_bw": self.link_bw, "launch_s": self.launch_s,
                "memory_bytes": self.memory_bytes, "overrides": dict(self.overrides)}

    def to_dict(self) -> dict[str, Any]:
        """The profile file's content (`save_profile`, read back by `load_profile`)."""
        return {"format": PROFILE_FORMAT, "name": self.name,
                "description": self.description, "matrix": dict(self.matrix),
                "vector": dict(self.vector), "mem_bw": self.mem_bw, "link_bw": self.link_bw,
                "launch_s": self.launch_s, "memory_bytes": self.memory_bytes,
                "link_latency_s": self.link_latency_s,
                "backward_launch_s": self.backward_launch_s, "sources": list(self.sources),
                "notes": self.notes, "calibration": dict(self.calibration)}


#: the `format` of a profile file
PROFILE_FORMAT = "jaxplace-device-profile/1"
_POSITIVE = ("mem_bw", "link_bw", "memory_bytes")
_NON_NEGATIVE = ("launch_s", "link_latency_s")


def _rate_table(d: dict, key: str, source: str) -> dict[str, float]:
    table = d.get(key)
    if not isinstance(table, dict) or not table:
        raise JaxplaceError("must be a non-empty object of dtype -> FLOP/s", source=source,
                            field=key)
    out = {}
    for k, v in table.items():
        if k not in _FALLBACK:
            raise JaxplaceError(f"unknown dtype {k!r}; known: {', '.join(_FALLBACK)}",
                                source=source, field=f"{key}.{k}")
        out[k] = _number(v, source, f"{key}.{k}", positive=True)
    return out


def _number(v: Any, source: str, name: str, *, positive: bool) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or \
            (v <= 0 if positive else v < 0):
        raise JaxplaceError(f"must be a {'positive' if positive else 'non-negative'} "
                            f"finite number, got {v!r}", source=source, field=name)
    return float(v)


def profile_from_dict(d: Any, source: str = "profile") -> DeviceProfile:
    """A DeviceProfile from a profile file's content; one clear error per bad field."""
    if not isinstance(d, dict):
        raise JaxplaceError("is not a JSON object", source=source)
    if d.get("format") != PROFILE_FORMAT:
        raise JaxplaceError(f"format must be {PROFILE_FORMAT!r}, got {d.get('format')!r}",
                            source=source, field="format")
    vals = {k: _number(d.get(k), source, k, positive=True) for k in _POSITIVE}
    vals.update({k: _number(d.get(k, 0.0), source, k, positive=False)
                 for k in _NON_NEGATIVE})
    bl = d.get("backward_launch_s")
    return DeviceProfile(
        name=str(d.get("name") or Path(source).stem), description=str(d.get("description", "")),
        matrix=_rate_table(d, "matrix", source), vector=_rate_table(d, "vector", source),
        sources=tuple(str(x) for x in d.get("sources", ())), notes=str(d.get("notes", "")),
        backward_launch_s=None if bl is None else _number(bl, source, "backward_launch_s",
                                                          positive=False),
        calibration=dict(d.get("calibration") or {}), **vals)


def load_profile(path: str | os.PathLike) -> DeviceProfile:
    """The profile saved at `path` (`save_profile`, `jaxplace calibrate -o`)."""
    return profile_from_dict(read_json(str(path)), str(path))


def save_profile(profile: DeviceProfile, path: str | os.PathLike) -> None:
    """Write `profile` as JSON (atomically) for `get_device(path)` and `--device path`."""
    write_json(path, profile.to_dict())


def _is_profile_path(device: Any) -> bool:
    if isinstance(device, os.PathLike):
        return True
    return isinstance(device, str) and (device.endswith(".json") or os.sep in device)


@lru_cache(maxsize=1)
def _load() -> dict[str, DeviceProfile]:
    raw = json.loads(_DATA.read_text())
    out = {}
    for name, d in raw.items():
        if name.startswith("_"):
            continue
        out[name] = DeviceProfile(
            name=name, description=d["description"],
            matrix={k: float(v) for k, v in d["matrix"].items()},
            vector={k: float(v) for k, v in d["vector"].items()},
            mem_bw=float(d["mem_bw"]), link_bw=float(d["link_bw"]),
            launch_s=float(d["launch_s"]), memory_bytes=float(d["memory_bytes"]),
            sources=tuple(d.get("sources", ())), notes=d.get("notes", ""))
    return out


def device_profiles() -> dict[str, DeviceProfile]:
    """The built-in profiles by name (read once from devices.json)."""
    return dict(_load())


def device_names() -> list[str]:
    """Names of the built-in profiles."""
    return list(_load())


def get_device(device: str | DeviceProfile = "h100", *, peak_tflops: float | None = None,
               mem_bw_gbs: float | None = None, link_bw_gbs: float | None = None,
               launch_us: float | None = None) -> DeviceProfile:
    """A profile by name (case-insensitive; "tpu_v4" and "tpuv4" also match "tpu-v4"),
    by the path of a profile JSON (a name ending in .json or holding a path separator),
    or a given profile, with optional overrides.

    Args:
        device: profile name, profile file path, or a DeviceProfile.
        peak_tflops: replace every matrix peak by this many TFLOP/s (vector peaks
            are scaled by the same factor as the profile's fp32 matrix peak).
        mem_bw_gbs: device-memory bandwidth in GB/s (1e9 bytes/s).
        link_bw_gbs: link bandwidth in GB/s.
        launch_us: per-op overhead in microseconds.
    """
    if isinstance(device, DeviceProfile):
        prof = device
    elif _is_profile_path(device):
        prof = load_profile(device)
    else:
        profiles = _load()
        key = str(device).strip().lower().replace("_", "-")
        aliases = {k.replace("-", ""): k for k in profiles}
        key = aliases.get(key.replace("-", ""), key)
        if key not in profiles:
            raise JaxplaceError(f"unknown device {device!r}; valid names: "
                                f"{', '.join(profiles)}", field="device")
        prof = profiles[key]
    changes: dict[str, Any] = {}
    over = dict(prof.overrides)
    for label, val in (("peak_tflops", peak_tflops), ("mem_bw_gbs", mem_bw_gbs),
                       ("link_bw_gbs", link_bw_gbs), ("launch_us", launch_us)):
        if val is None:
            continue
        if not (float(val) > 0 or (label == "launch_us" and float(val) == 0)):
            raise JaxplaceError(f"must be positive, got {val!r}", field=label)
        over[label] = float(val)
    if peak_tflops is not None:
        scale = peak_tflops * 1e12 / prof.peak("fp32", matrix=True)
        changes["matrix"] = {k: peak_tflops * 1e12 for k in prof.matrix}
        changes["vector"] = {k: v * scale for k, v in prof.vector.items()}
    if mem_bw_gbs is not None:
        changes["mem_bw"] = mem_bw_gbs * 1e9
    if link_bw_gbs is not None:
        changes["link_bw"] = link_bw_gbs * 1e9
    if launch_us is not None:
        changes["launch_s"] = launch_us * 1e-6
    return replace(prof, overrides=over, **changes) if changes else prof
