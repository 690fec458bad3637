"""The same PyTorch module through the two importers: `jaxplace.torch` (torch.export's
ATen graph) and torch.onnx.export + the ONNX importer (runtime fusion, its default)
agree within 5% on summed work and on the planned bottleneck at k = 2 and 4, apart
from the differences `importers.agreement` names (exporter folds), and every other op
kind launches as often on both sides. Modules: an MLP, GPT-2, a ViT encoder, a
ResNet, and nn.TransformerEncoder with a padding mask (BERT-like). Both exporters of
torch 2.13: TorchScript (`dynamo=False`, opset 17, and opset 14, where LayerNorm is
9 ops) and dynamo (default opset; needs onnxscript, skipped without it)."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

import jaxplace as jp  # noqa: E402
from jaxplace.importers.agreement import compare, explained_us, table  # noqa: E402
from jaxplace.torch import (  # noqa: E402
    GPT2,
    MaskedEncoder,
    ResNet,
    UnequalMLP,
    ViT,
    from_torch,  # noqa: E402
)

TOL = 0.05


def _case(name: str):
    torch.manual_seed(0)
    if name == "mlp":
        return UnequalMLP(widths=(64, 256, 64, 128, 10)), (torch.randn(8, 64),)
    if name == "gpt2":
        return GPT2(vocab=512, ctx=64, d=64, layers=2, heads=4), (
            torch.randint(0, 512, (2, 32)),)
    if name == "gpt2-6":  # the model of experiments/importers.md
        return GPT2(vocab=512, ctx=64, d=64, layers=6, heads=4), (
            torch.randint(0, 512, (2, 32)),)
    if name == "vit":  # a BERT-like encoder: no mask, a class token
        return ViT(image=32, patch=8, d=64, layers=1, heads=4, classes=10), (
            torch.randn(2, 3, 32, 32),)
    if name == "resnet":
        return ResNet(blocks=(1, 1), width=8, classes=10), (torch.randn(2, 3, 32, 32),)
    if name == "encoder":  # BERT-like: token embeddings, a padding mask, erf GELU
        mask = torch.zeros(2, 16, dtype=torch.bool)
        mask[:, 12:] = True
        return MaskedEncoder(), (torch.randint(0, 100, (2, 16)), mask)
    raise KeyError(name)


def _export(model, args, path, exporter: str) -> None:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            pytest.importorskip("onnxscript")
            torch.onnx.export(model, args, str(path), dynamo=True)
        else:  # torchscript: opset 17; torchscript14: LayerNorm written in 9 pieces
            torch.onnx.export(model, args, str(path), dynamo=False,
                              opset_version=14 if exporter == "torchscript14" else 17)


def _bottleneck(g, k: int) -> float:
    return float(jp.search(jp.Problem(g, k, capacity=g.meta.get("capacity")),
                           progress=False, seed=0).cost)


def _agree(name, exporter, tmp_path):
    model, args = _case(name)
    model.eval()
    gt, _ = from_torch(model, args, device="h100")
    path = tmp_path / f"{name}.onnx"
    _export(model, args, path, exporter)
    go = jp.formats.load_graph(path, device="h100")
    # both sides cost every op by a rule (none by the unknown-op fallback)
    assert gt.meta["unknown_ops"] == [] and go.meta["unknown_ops"] == []
    rows = compare(gt, go)
    msg = f"{name} ({exporter}):\n{table(rows)}"
    # every kind without a named reason launches as often on both sides
    assert not [r for r in rows if r.torch_ops != r.onnx_ops and not r.why], msg
    slack = explained_us(rows)
    wt, wo = float(gt.work.sum()), float(go.work.sum())
    assert abs(wo - wt) <= TOL * wt + slack, f"work {wt:.2f} vs {wo:.2f} us\n{msg}"
    for k in (2, 4):
        bt, bo = _bottleneck(gt, k), _bottleneck(go, k)
        # zeroing the named ops' work moves any stage by at most their sum
        assert abs(bo - bt) <= TOL * bt + slack, f"k={k}: {bt:.2f} vs {bo:.2f} us\n{msg}"
    return rows, go


@pytest.mark.parametrize("exporter", ["torchscript", "torchscript14", "dynamo"])
@pytest.mark.parametrize("name", ["mlp", "gpt2", "vit", "resnet", "encoder"])
def test_importers_agree(name, exporter, tmp_path):
    rows, go = _agree(name, exporter, tmp_path)
    named = {r.kind for r in rows if r.why}
    # what is named is what the exporters fold, nothing else
    assert named <= {"batch_norm", "arange", "gather"}
    if name == "resnet":
        assert named == {"batch_norm"}
    if name in ("mlp", "vit", "encoder"):
        assert not named
    if name in ("gpt2", "encoder", "vit"):
        assert go.meta["runtime_fusion"]["attention"] == (1 if name == "vit" else 2)
        if exporter == "torchscript14":  # opset < 17 has no LayerNormalization op
            assert go.meta["runtime_fusion"]["layer_norm"] == {"gpt2": 5, "vit": 3,
                                                               "encoder": 4}[name]


@pytest.mark.parametrize("exporter", [
    "torchscript", pytest.param("dynamo", marks=pytest.mark.heavy)])  # dynamo: 2.5-5.7 s
def test_importers_agree_gpt2_6_layers(exporter, tmp_path):
    """The issue's model (0.7 s through TorchScript, 2.5 s through dynamo, under load)."""
    rows, go = _agree("gpt2-6", exporter, tmp_path)
    assert go.meta["runtime_fusion"]["gemm"] == 24
    assert go.meta["runtime_fusion"]["attention"] == 6


def test_as_exported_onnx_disagrees(tmp_path):
    """The check can fail: the ONNX graph costed as exported (--fusion none) is far
    from torch's on the GPT-2 (bias adds, GELU pieces, attention pieces, copies)."""
    model, args = _case("gpt2")
    model.eval()
    gt, _ = from_torch(model, args, device="h100")
    path = tmp_path / "gpt2.onnx"
    _export(model, args, path, "torchscript")
    g0 = jp.formats.load_graph(path, device="h100", fusion="none")
    rows = compare(gt, g0)
    assert [r for r in rows if r.torch_ops != r.onnx_ops and not r.why]
    assert g0.work.sum() > 2 * gt.work.sum()
