"""The plan view picture of the README (docs/plan_view.png).

    python experiments/plan_view.py docs/plan_view.png

A generated 8-layer transformer split into k = 4 stages (`jaxplace partition --certify`),
drawn by `jaxplace.view` with the 1F1B schedule of its stage times (backward = 2 x
forward, 8 microbatches) as the timeline, screenshot by headless Chromium.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np


def main(out: str) -> None:
    from jaxplace.pipeline import simulate_schedule
    from jaxplace.view import plan_view, save_html

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        sys.exit("no chromium on PATH (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        cli = [sys.executable, "-m", "jaxplace"]
        subprocess.run([*cli, "generate", "transformer", "--layers", "8", "--d-model",
                        "2048", "--seq", "1024", "-o", str(d / "tr8.json")], check=True)
        subprocess.run([*cli, "partition", str(d / "tr8.json"), "-k", "4", "--certify",
                        "-q", "-o", str(d / "result.json")], check=True)
        data = json.loads((d / "result.json").read_text())
        blocks = sorted(data["blocks"], key=lambda b: b["block"])
        fwd = np.array([b["work"] for b in blocks]) * 1e-6  # graph unit: us
        send = np.array([b["io_out"] for b in blocks[:-1]]) * 1e-6
        tl = simulate_schedule("1f1b", fwd, 2 * fwd, 8, send=send)
        view = plan_view(d / "result.json", timeline=tl)
        view = replace(view, title="A generated 8-layer transformer in 4 stages")
        save_html(view, d / "plan.html")
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--user-data-dir={d / 'profile'}",
                        f"--screenshot={Path(out).resolve()}", "--window-size=1240,830",
                        (d / "plan.html").as_uri()], check=True, capture_output=True,
                       timeout=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/plan_view.png")
