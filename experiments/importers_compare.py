"""The same module through the two importers: jaxplace.torch (torch.export's ATen graph)
and torch.onnx.export + the ONNX importer, costed on the h100 profile; ops and work per
op type, the ONNX graph with --coarsen (chains) and fusion, and the planned bottleneck
at k = 2 and 4. Writes gpt2.onnx in the current folder.

    python experiments/importers_compare.py      # experiments/importers.md
"""

import collections
import warnings

import torch

import jaxplace as jp
from jaxplace.torch.models import GPT2
from jaxplace.torch.trace import from_torch


def table(g) -> dict:
    by = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for t, w, p in zip(g.op_types, g.work, g.size_param, strict=True):
        by[t][0] += 1
        by[t][1] += w
        by[t][2] += p
    return by


def main() -> None:
    warnings.filterwarnings("ignore")
    model = GPT2(vocab=512, ctx=64, d=64, layers=6, heads=4).eval()
    x = torch.randint(0, 512, (2, 32))
    gt, _ = from_torch(model, (x,), device="h100")
    torch.onnx.export(model, (x,), "gpt2.onnx", dynamo=False, opset_version=17)
    go = jp.formats.load_graph("gpt2.onnx", device="h100")
    for name, g in (("torch", gt), ("onnx", go)):
        print(f"{name}: ops {g.num_nodes}, work {g.work.sum():.2f} us, params "
              f"{g.size_param.sum() / 1e6:.3f} MB, out {g.size_out.sum():.3f}")
        for t, (c, w, p) in sorted(table(g).items(), key=lambda kv: -kv[1][1]):
            print(f"   {t:24s} {c:4d} {w:9.3f} us {p / 1e6:8.3f} MB")
    for mode in (True, "fusion"):
        gf = jp.formats.load_graph("gpt2.onnx", device="h100", coarsen=mode)
        print(f"onnx coarsen={mode}: ops {gf.num_nodes}, work {gf.work.sum():.2f} us, "
              f"out {gf.size_out.sum():.3f}")
    for name, g in (("torch", gt), ("onnx", go)):
        for k in (2, 4):
            r = jp.search(jp.Problem(g, k, capacity=g.meta.get("capacity")), progress=False)
            print(name, k, f"{r.cost:.2f} us")


if __name__ == "__main__":
    main()
