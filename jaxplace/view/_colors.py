"""Stage colours and number formats shared by the HTML and matplotlib views."""

from __future__ import annotations

import colorsys
import math

# Tableau's 10 then their light partners: distinct for the usual k <= 20.
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac", "#a0cbe8", "#ffbe7d", "#8cd17d", "#ff9d9a",
            "#86bcb6", "#f1ce63", "#d4a6c8", "#fabfd2", "#d7b5a6", "#79706e")


def stage_color(stage: int) -> str:
    """A hex colour per stage (grey for -1: no stage); past 20 stages, hues by the
    golden angle so neighbours still differ."""
    if stage < 0:
        return "#cccccc"
    if stage < len(_PALETTE):
        return _PALETTE[stage]
    h = (stage * 0.618033988749895) % 1.0
    r, g, b = colorsys.hls_to_rgb(h, 0.55, 0.6)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def fmt_time(x: float, unit: str) -> str:
    """A time for a label: seconds scaled to s/ms/us, other units as given."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if unit == "s":
        for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(x) >= scale or name == "us":
                return f"{x / scale:.4g} {name}"
    return f"{x:.4g}{(' ' + unit) if unit else ''}"


def fmt_bytes(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "n/a"
    for scale, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {name}"
    return f"{x:.3g} B"
