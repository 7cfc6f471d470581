#!/usr/bin/python3
"""Export the planner's corpus: real architectures with random weights.

Each model is written as DIR/<name>.onnx (static shapes, batch 1, opset 17
or lower, weights inside the file). Nothing is downloaded: every network is
built with random weights (torchvision's weights=None, or the modules
below). The corpus is not committed; the planner test reads it when
BERTH_CORPUS=DIR is set:

    /usr/bin/python3 scripts/gen_corpus.py [DIR] [--only NAME,NAME]
    BERTH_CORPUS=DIR go test -run TestCorpus -v .

DIR defaults to $HOME/.cache/berth/corpus. A model whose file already
exists is skipped; delete it to export it again. Single operators for
speed comparisons (sgemm_1024: one 1024³ MatMul by constant weights) are
exported only by name, best into a directory of their own:

    /usr/bin/python3 scripts/gen_corpus.py /tmp/ops --only sgemm_1024
    bench/compare_ort.sh --corpus /tmp/ops --models sgemm_1024 --threads 1

Requires the Debian packages python3-torch, python3-torchvision and
python3-onnx.
"""

import argparse
import math
import os
import sys
import time
import warnings

import torch
from torch import nn

OPSET = 17
SEQ = 128


# ---------------------------------------------------------------------------
# Transformer blocks
# ---------------------------------------------------------------------------

class Attention(nn.Module):
    """Multi-head self-attention; rotary embeddings and a causal mask on demand."""

    def __init__(self, hidden, heads, causal, rotary, bias=True, seq=SEQ):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q = nn.Linear(hidden, hidden, bias=bias)
        self.k = nn.Linear(hidden, hidden, bias=bias)
        self.v = nn.Linear(hidden, hidden, bias=bias)
        self.o = nn.Linear(hidden, hidden, bias=bias)
        self.causal, self.rotary = causal, rotary
        # open: slice the mask and the rotary tables to the input's length
        # (exports with an open sequence length); set by open_model.
        self.open = False
        if causal:
            mask = torch.triu(torch.full((seq, seq), -1e9), diagonal=1)
            self.register_buffer("mask", mask.reshape(1, 1, seq, seq))
        if rotary:
            inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
            freqs = torch.outer(torch.arange(seq).float(), inv)
            emb = torch.cat([freqs, freqs], dim=-1)
            self.register_buffer("cos", emb.cos().reshape(1, 1, seq, self.head_dim))
            self.register_buffer("sin", emb.sin().reshape(1, 1, seq, self.head_dim))

    def split(self, x):
        b, s, _ = x.shape
        return x.reshape(b, s, self.heads, self.head_dim).transpose(1, 2)

    def rotate(self, x):
        half = self.head_dim // 2
        x1, x2 = x[..., :half], x[..., half:]
        rotated = torch.cat([-x2, x1], dim=-1)
        cos, sin = self.cos, self.sin
        if self.open:
            s = x.shape[2]
            cos, sin = cos[:, :, :s], sin[:, :, :s]
        return x * cos + rotated * sin

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        if self.rotary:
            q, k = self.rotate(q), self.rotate(k)
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if self.causal:
            att = att + (self.mask[:, :, :s, :s] if self.open else self.mask)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, s, h)
        return self.o(y)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = Attention(hidden, heads, causal=False, rotary=False)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class Bert(nn.Module):
    """A BERT-base-size encoder: 12 layers, 768 wide, 12 heads, FFN 3072."""

    def __init__(self, vocab=30522, hidden=768, heads=12, ffn=3072, layers=12, seq=SEQ):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, ids):
        pos = self.pos[:, :ids.shape[1]] if getattr(self, "open", False) else self.pos
        x = self.ln(self.tok(ids) + pos)
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GptBlock(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, causal=True, rotary=False)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(gelu_tanh(self.fc(self.ln2(x))))


class Gpt2(nn.Module):
    """A GPT-2-small-size decoder: 12 layers, 768 wide, 12 heads, tied LM head."""

    def __init__(self, vocab=50257, hidden=768, heads=12, layers=12, seq=SEQ):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(hidden)

    def forward(self, ids):
        pos = self.pos[:, :ids.shape[1]] if getattr(self, "open", False) else self.pos
        x = self.tok(ids) + pos
        for b in self.blocks:
            x = b(x)
        return torch.matmul(self.ln(x), self.tok.weight.t())


class RMSNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.n1 = RMSNorm(hidden)
        self.attn = Attention(hidden, heads, causal=True, rotary=True, bias=False)
        self.n2 = RMSNorm(hidden)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        h = self.n2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    """A LLaMA-style decoder: RMSNorm, SwiGLU, rotary embeddings, no biases."""

    def __init__(self, vocab=32000, hidden=512, heads=8, ffn=1376, layers=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList(LlamaBlock(hidden, heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        x = self.tok(ids)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


# ---------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------

def vision(name, **kwargs):
    # torchvision is imported on use, so the transformer models export on
    # machines without it.
    def build():
        import torchvision
        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        return model, (torch.randn(1, 3, 224, 224),), ["input"], ["logits"]
    return build


def text(factory, outputs):
    return lambda: (factory(), (torch.randint(0, 1000, (1, SEQ)),), ["input_ids"], outputs)


def sgemm(size):
    # One MatMul of a run-time size×size input by a constant size×size
    # weight (a bias-free Linear): SGEMM at size³ with the weights packed
    # ahead, as both runtimes pack constant operands.
    def build():
        return torch.nn.Linear(size, size, bias=False), (torch.randn(size, size),), ["input"], ["output"]
    return build


CORPUS = {
    "resnet50": vision("resnet50"),
    "mobilenet_v2": vision("mobilenet_v2"),
    "efficientnet_b0": vision("efficientnet_b0"),
    "densenet121": vision("densenet121"),
    "googlenet": vision("googlenet", aux_logits=False, init_weights=True),
    "shufflenet_v2": vision("shufflenet_v2_x1_0"),
    "squeezenet": vision("squeezenet1_1"),
    "bert_base": text(Bert, ["last_hidden_state", "pooler_output"]),
    "gpt2_small": text(Gpt2, ["logits"]),
    "llama_small": text(Llama, ["logits"]),
}

def open_model(name, axes):
    """The corpus model name exported with open dimensions: axes maps each
    input and output name to {axis: symbol}; the transformers slice their
    position tables and masks to the input's length."""
    def build():
        model, inputs, input_names, output_names = CORPUS[name]()
        for m in model.modules():
            if hasattr(m, "open"):
                m.open = True
        model.open = True
        return model, inputs, input_names, output_names, axes
    return build


def detector():
    """torchvision's SSDLite (MobileNetV3 backbone, 320² training size)
    exported with its post-processing (score thresholds, per-class top-k,
    NonMaxSuppression over all classes) and the image's height and width
    open; its normalisations get random statistics so that the scores
    differ from box to box, as a trained model's do."""
    def build():
        import torchvision
        model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.5)
                    m.running_mean.normal_(0.0, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
            # Spread the class logits as training would: near-equal scores
            # make the order of the kept boxes a matter of rounding.
            for p in model.head.classification_head.parameters():
                p.mul_(4)
        axes = {"image": {1: "height", 2: "width"}, "boxes": {0: "n"}, "scores": {0: "n"}, "labels": {0: "n"}}
        return model, ([torch.rand(3, 320, 320)],), ["image"], ["boxes", "scores", "labels"], axes
    return build


# Single operators for speed comparisons (bench/compare_ort.sh --models
# sgemm_1024) and the open-shape variants (resnet50_open: batch, height
# and width open; bert_base_open and gpt2_small_open: batch and sequence
# open; ssdlite320_open: a detector with its NonMaxSuppression, height and
# width open), not architectures of their own: exported only when named with
# --only, best into a directory of their own, which keeps them out of
# the planner's corpus statistics.
_TEXT_AXES = {0: "batch", 1: "seq"}
EXTRAS = {
    "sgemm_1024": sgemm(1024),
    "resnet50_open": open_model("resnet50", {"input": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}}),
    "bert_base_open": open_model("bert_base", {"input_ids": _TEXT_AXES, "last_hidden_state": _TEXT_AXES,
                                               "pooler_output": {0: "batch"}}),
    "gpt2_small_open": open_model("gpt2_small", {"input_ids": _TEXT_AXES, "logits": _TEXT_AXES}),
    "ssdlite320_open": detector(),
}


def export(name, path):
    import onnx
    torch.manual_seed(sum(ord(c) for c in name))
    model, inputs, input_names, output_names, *axes = {**CORPUS, **EXTRAS}[name]()
    model.eval()
    tmp = path + ".tmp"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, tmp, input_names=input_names, output_names=output_names,
                          opset_version=OPSET, do_constant_folding=True,
                          dynamic_axes=axes[0] if axes else None)
    proto = onnx.load(tmp)
    onnx.checker.check_model(proto)
    os.replace(tmp, path)
    ops = sorted({n.op_type for n in proto.graph.node})
    return len(proto.graph.node), ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=os.path.join(os.path.expanduser("~"), ".cache", "berth", "corpus"))
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(CORPUS)
    for n in names:
        if n not in CORPUS and n not in EXTRAS:
            sys.exit(f"unknown model {n!r}; known: {', '.join(CORPUS)}; by name only: {', '.join(EXTRAS)}")
    os.makedirs(args.dir, exist_ok=True)
    torch.set_num_threads(1)
    for name in names:
        path = os.path.join(args.dir, name + ".onnx")
        if os.path.exists(path):
            print(f"{name}: {path} exists, skipped", flush=True)
            continue
        t0 = time.time()
        nodes, ops = export(name, path)
        size = os.path.getsize(path) / 2**20
        print(f"{name}: {nodes} nodes, {size:.0f} MiB, {time.time() - t0:.1f} s; ops: {' '.join(ops)}", flush=True)


if __name__ == "__main__":
    main()
