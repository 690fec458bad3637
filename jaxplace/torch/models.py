"""Plain-PyTorch models to plan and run (no downloads, random weights): a GPT-2-like
decoder, a ResNet-50-like CNN, an MLP stack of unequal layers, a small ViT and a BERT-like
encoder with a key padding mask. The
defaults are the published sizes (GPT-2 small: 12 layers, width 768, 12 heads,
vocabulary 50257; ResNet-50: bottleneck blocks [3, 4, 6, 3], width 64); tests shrink
them. Module names follow the originals (`transformer.h.0.attn.c_attn`, `layer1.0`)
so split points read the same."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, d: int, heads: int, causal: bool = True):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.c_fc = nn.Linear(d, hidden)
        self.c_proj = nn.Linear(hidden, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    """Pre-norm transformer block (GPT-2, ViT)."""

    def __init__(self, d: int, heads: int, causal: bool = True):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, causal)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = MLP(d, 4 * d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, vocab: int, ctx: int, d: int, layers: int, heads: int):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)


class GPT2(nn.Module):
    """GPT-2 (Radford et al. 2019) with an untied LM head: input token ids (B, T),
    output logits (B, T, vocab)."""

    def __init__(self, vocab: int = 50257, ctx: int = 1024, d: int = 768, layers: int = 12,
                 heads: int = 12):
        super().__init__()
        self.transformer = Transformer(vocab, ctx, d, layers, heads)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        tr = self.transformer
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = tr.wte(idx) + tr.wpe(pos)
        for block in tr.h:
            x = block(x)
        return self.lm_head(tr.ln_f(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin: int, width: int, stride: int = 1):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        idt = x if self.downsample is None else self.downsample(x)
        return self.relu(out + idt)


class ResNet(nn.Module):
    """ResNet-50 (He et al. 2016) layout: stem, four stages of bottleneck blocks,
    global pooling, classifier. Input images (B, 3, H, W), output logits."""

    def __init__(self, blocks=(3, 4, 6, 3), width: int = 64, classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = width
        for i, n in enumerate(blocks):
            w = width * 2 ** i
            layer = []
            for j in range(n):
                layer.append(Bottleneck(cin, w, 2 if (j == 0 and i > 0) else 1))
                cin = w * Bottleneck.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*layer))
        self.num_stages = len(blocks)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(self.num_stages):
            x = getattr(self, f"layer{i + 1}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


class UnequalMLP(nn.Module):
    """A stack of Linear + GELU layers of unequal widths (`widths[i] -> widths[i+1]`)."""

    def __init__(self, widths=(512, 4096, 512, 2048, 2048, 256, 4096, 1024, 512, 10)):
        super().__init__()
        self.layers = nn.Sequential(*(nn.Sequential(nn.Linear(a, b), nn.GELU())
                                      for a, b in zip(widths[:-1], widths[1:], strict=True)))

    def forward(self, x):
        return self.layers(x)


class ViT(nn.Module):
    """A small Vision Transformer (Dosovitskiy et al. 2021): patch embedding, class
    token, pre-norm blocks, classifier on the class token."""

    def __init__(self, image: int = 224, patch: int = 16, d: int = 384, layers: int = 12,
                 heads: int = 6, classes: int = 1000):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        n = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads, causal=False) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


class MaskedEncoder(nn.Module):
    """BERT-like: token embeddings, nn.TransformerEncoder (2 layers, d 64, 4 heads, erf
    GELU) with a key padding mask (the ONNX exporters write the mask as Cast, Where,
    Expand). Call with (ids (B, S) int64, mask (B, S) bool)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, batch_first=True,
                                           activation="gelu")
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, ids, mask):
        return self.enc(self.emb(ids), src_key_padding_mask=mask)
