"""Issue 53's table over all 11 ONNX models from the two halves (A: 2 models, B: 9)
of each run of experiments/bbr_onnx_s25*.sh: geometric means combine exactly as
exp((2 log gA + 9 log gB) / 11) (from the 4-decimal means the halves print), shares
proven add. Usage: python experiments/bbr_onnx_s25_table.py"""

import math
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = {"": "ladder simple, bottleneck, bbr, exact", "C": "MIP rungs alone",
        "D": "BB&R alone (from the simple bound)"}


def issue_rows(path):
    """{k: {rung: (gmean, proven, count)}} from a table's issue layout."""
    lines = open(path).read().splitlines()
    i = next(j for j, line in enumerate(lines) if line.startswith("| k |"))
    head = [c.strip() for c in lines[i].strip("|").split("|")][1:]
    out = {}
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        k, row = int(cells[0]), {}
        for name, cell in zip(head, cells[1:], strict=True):
            m = re.match(r"([\d.]+) \((\d+)/(\d+)", cell) if name != "best bound" else None
            if name == "best bound":
                row[name] = (float(cell), None, None)
            elif m:
                row[name] = (float(m[1]), int(m[2]), int(m[3]))
            elif name == "proven":
                p, c = re.match(r"(\d+)/(\d+)", cell).groups()
                row[name] = (None, int(p), int(c))
        out[k] = row
    return out


for run, what in RUNS.items():
    a = issue_rows(os.path.join(HERE, f"bbr_onnx_s25_{run}A.md" if run else
                                "bbr_onnx_s25_A.md"))
    b = issue_rows(os.path.join(HERE, f"bbr_onnx_s25_{run}B.md" if run else
                                "bbr_onnx_s25_B.md"))
    cols = [c for c in a[4] if c != "proven"]
    print(f"\n{what}:\n")
    print("| k | " + " | ".join(cols) + " | proven |")
    print("|---|" + "---|" * (len(cols) + 1))
    for k in sorted(a):
        cells = []
        for c in cols:
            (ga, pa, na), (gb, pb, nb) = a[k][c], b[k][c]
            na, nb = (na or 2), (nb or 9)
            g = math.exp((na * math.log(ga) + nb * math.log(gb)) / (na + nb))
            cells.append(f"{g:.4f}" + (f" ({pa + pb}/{na + nb})" if pa is not None else ""))
        _, pa, na = a[k]["proven"]
        _, pb, nb = b[k]["proven"]
        print(f"| {k} | " + " | ".join(cells) + f" | {pa + pb}/{na + nb} |")
