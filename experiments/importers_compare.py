"""The same module through the two importers: jaxplace.torch (torch.export's ATen graph)
and torch.onnx.export + the ONNX importer (runtime fusion, its default; and as
exported, `fusion="none"`), costed on the h100 profile, for both exporters of torch
2.13 (TorchScript, `dynamo=False`, opset 17, and opset 14, where LayerNorm is 9 ops;
dynamo, its default opset 20, which needs onnxscript). Per module: ops, summed work,
the planned bottleneck at k = 2 and 4, what the pass fused, and the op kinds whose
launches differ, with the reason. Writes <module>_<exporter>.onnx in the current
folder.

    python experiments/importers_compare.py      # experiments/importers.md
"""

import collections
import contextlib
import io
import warnings

import onnx
import torch

import jaxplace as jp
from jaxplace import importers
from jaxplace.torch import GPT2, MaskedEncoder, ResNet, UnequalMLP, ViT, from_torch


def modules():
    torch.manual_seed(0)
    yield "GPT-2 6x64", GPT2(vocab=512, ctx=64, d=64, layers=6, heads=4), (
        torch.randint(0, 512, (2, 32)),)
    yield "MLP", UnequalMLP(widths=(64, 256, 64, 128, 10)), (torch.randn(8, 64),)
    yield "ViT encoder", ViT(image=32, patch=8, d=64, layers=2, heads=4, classes=10), (
        torch.randn(2, 3, 32, 32),)
    yield "ResNet 2 blocks", ResNet(blocks=(1, 1), width=8, classes=10), (
        torch.randn(2, 3, 32, 32),)
    mask = torch.zeros(2, 16, dtype=torch.bool)
    mask[:, 12:] = True  # 4 padding tokens per sequence
    yield "Masked encoder", MaskedEncoder(), (torch.randint(0, 100, (2, 16)), mask)


def export(model, args, path, exporter) -> bool:
    with contextlib.redirect_stdout(io.StringIO()):
        if exporter == "dynamo":
            try:
                import onnxscript  # noqa: F401
            except ImportError:
                return False
            torch.onnx.export(model, args, path, dynamo=True)
        else:
            torch.onnx.export(model, args, path, dynamo=False,
                              opset_version=14 if exporter == "torchscript14" else 17)
    return True


def slug(name: str) -> str:
    return name.split()[0].lower().replace("-", "")


def bottleneck(g, k) -> float:
    return float(jp.search(jp.Problem(g, k, capacity=g.meta.get("capacity")),
                           progress=False, seed=0).cost)


def row(label, g, ref=None) -> str:
    w = float(g.work.sum())
    b = [bottleneck(g, k) for k in (2, 4)]
    if ref is None:
        return f"| {label} | {g.num_nodes} | {w:.2f} | {b[0]:.2f} / {b[1]:.2f} | |"
    rw, rb = ref
    d = f"{w / rw - 1:+.1%}; {b[0] / rb[0] - 1:+.1%} / {b[1] / rb[1] - 1:+.1%}"
    return f"| {label} | {g.num_nodes} | {w:.2f} | {b[0]:.2f} / {b[1]:.2f} | {d} |"


def main() -> None:
    warnings.filterwarnings("ignore")
    print("| module / importer | nodes | summed work (us) | bottleneck k=2 / k=4 (us) | "
          "vs torch: work; k=2 / k=4 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    notes = []
    for name, model, args in modules():
        model.eval()
        gt, _ = from_torch(model, args, device="h100")
        ref = (float(gt.work.sum()), [bottleneck(gt, k) for k in (2, 4)])
        print(row(f"{name}: jaxplace.torch", gt))
        for exporter in ("torchscript", "dynamo", "torchscript14"):
            path = f"{slug(name)}_{exporter}.onnx"
            if not export(model, args, path, exporter):
                notes.append(f"{name} {exporter}: skipped (no onnxscript)")
                continue
            ops = collections.Counter(n.op_type for n in onnx.load(path).graph.node)
            go = jp.formats.load_graph(path, device="h100")
            print(row(f"{name}: ONNX {exporter}", go, ref))
            if exporter == "torchscript14":  # opset 14: LayerNorm in pieces
                notes.append(f"{name}, {exporter}:\n  "
                             f"{importers.runtime_fusion.summary_line(go.meta)}")
                continue
            g0 = jp.formats.load_graph(path, device="h100", fusion="none")
            print(row(f"{name}: ONNX {exporter}, as exported", g0, ref))
            rows = importers.agreement.compare(gt, go)
            notes.append(f"{name}, {exporter} (ONNX op types {dict(ops)}):\n  "
                         f"{importers.runtime_fusion.summary_line(go.meta)}\n"
                         f"{importers.agreement.table(rows)}")
        if name.startswith("GPT-2"):
            for mode in (True, "fusion"):
                gf = jp.formats.load_graph(f"{slug(name)}_torchscript.onnx", device="h100",
                                           coarsen=mode)
                print(row(f"{name}: ONNX torchscript, --coarsen {mode}", gf, ref))
    print()
    for n in notes:
        print(n, end="\n\n")


if __name__ == "__main__":
    main()
