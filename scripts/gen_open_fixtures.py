#!/usr/bin/python3
"""Generate the ONNX fixtures with open dimensions under testdata/open/.

Each fixture is a small PyTorch model with random (seeded) weights,
exported with dynamic axes (the file names its open dimensions "batch",
"seq", "height", "width"), together with several input sets of different
shapes and PyTorch's outputs for each, which serve as the reference for
the runtime's tests.

Layout of testdata/open/<name>/:
    model.onnx              the exported model (weights embedded)
    set_<k>/input_<i>.npy   graph inputs of input set k, in graph-input order
    set_<k>/output_<i>.npy  PyTorch's outputs (float32) for set k
    meta.json               {"inputs": [...], "outputs": [...], "opset": N,
                             "dynamic_axes": {...}, "sets": [[shapes], ...],
                             "value_dependent": true when output sizes
                             follow from computed values,
                             "source": "scripts/gen_open_fixtures.py"}

Fixtures:
    gpt   GPT-style causal decoder (the blocks of scripts/gen_fixtures.py):
          batch and sequence open; the position embeddings and the causal
          mask are sliced to the sequence length the input gives, opset 17
    bert  BERT-style encoder with an attention mask: batch and sequence
          open, position ids sliced to the sequence, opset 17
    cnn   ResNet-style CNN (stem, residual blocks with a strided projection,
          max pooling, global average pooling, a linear head): batch,
          height and width open, run at odd image sizes, opset 13
    select  the values of a computed tensor above a threshold and their
          positions (NonZero on a computed mask): the outputs' length
          follows from the values, opset 13
    nms   a toy detector head: boxes and scores computed from features,
          NonMaxSuppression, then the kept boxes and scores, opset 13

Run from the repository root (naming fixtures generates only those):

    /usr/bin/python3 scripts/gen_open_fixtures.py [NAME ...]

Requires the Debian packages python3-torch, python3-torchvision,
python3-onnx and python3-numpy.
"""

import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as base  # noqa: E402  (the shared model blocks)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_ROOT = os.path.join(REPO_ROOT, "testdata", "open")
SOURCE = "scripts/gen_open_fixtures.py"


class OpenBert(base.Bert):
    """Bert whose position ids follow the input's sequence length."""

    def positions(self, seq):
        return self.position_ids[:seq]


class Cnn(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.blocks = nn.Sequential(base.BasicBlock(16, 16, 1), base.BasicBlock(16, 32, 2), base.BasicBlock(32, 32, 1))
        self.head = nn.Linear(32, classes)

    def forward(self, image):
        x = self.blocks(self.pool(self.stem(image)))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


def ids(batch, seq, vocab):
    return torch.randint(0, vocab, (batch, seq), dtype=torch.int64)


def make_gpt():
    model = base.Gpt(vocab=200, max_len=32, hidden=32, heads=4, mlp=64, layers=2)
    sets = [(ids(1, 7, 200),), (ids(2, 16, 200),), (ids(3, 32, 200),)]
    return dict(model=model, sets=sets, input_names=["input_ids"], output_names=["logits"],
                dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
                opset=17)


def make_bert():
    model = OpenBert(vocab=200, max_len=32, hidden=32, heads=4, ffn=64, layers=2)
    sets = []
    for batch, seq, pad in ((1, 5, 0), (2, 12, 4), (3, 32, 9)):
        mask = torch.ones(batch, seq, dtype=torch.int64)
        x = ids(batch, seq, 200)
        if pad:
            mask[-1, seq - pad:] = 0
            x[-1, seq - pad:] = 0
        sets.append((x, mask))
    return dict(model=model, sets=sets, input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state", "pooler_output"],
                dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                              "last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}},
                opset=17)


def make_cnn():
    model = Cnn()
    sets = [(torch.randn(1, 3, 32, 32),), (torch.randn(2, 3, 29, 41),), (torch.randn(1, 3, 17, 23),)]
    return dict(model=model, sets=sets, input_names=["image"], output_names=["logits"],
                dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}},
                opset=13)


class Select(nn.Module):
    """Keeps the values a computed mask selects: the output's length is
    known only once the values are (NonZero, Compress-style indexing)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.fc(x))
        keep = y > 0.25
        return y[keep], torch.nonzero(keep)


class Nms(nn.Module):
    """A toy detector head: boxes and scores computed from features, then
    non-maximum suppression and the kept boxes and scores."""

    def __init__(self):
        super().__init__()
        self.box = nn.Linear(16, 4)
        self.score = nn.Linear(16, 1)

    def forward(self, feats):
        raw = self.box(feats)
        xy = torch.sigmoid(raw[:, :2]) * 100
        wh = torch.sigmoid(raw[:, 2:]) * 40 + 1
        boxes = torch.cat([xy, xy + wh], dim=1)
        scores = torch.sigmoid(self.score(feats))[:, 0]
        keep = torchvision.ops.nms(boxes, scores, 0.3)
        return boxes[keep], scores[keep]


def make_select():
    sets = [(torch.randn(3, 8),), (torch.randn(5, 8),), (torch.randn(1, 8),)]
    return dict(model=Select(), sets=sets, input_names=["x"], output_names=["kept", "where"],
                dynamic_axes={"x": {0: "rows"}, "kept": {0: "n"}, "where": {0: "n"}}, opset=13,
                value_dependent=True)


def make_nms():
    sets = [(torch.randn(20, 16),), (torch.randn(64, 16),), (torch.randn(7, 16),)]
    return dict(model=Nms(), sets=sets, input_names=["feats"], output_names=["boxes", "scores"],
                dynamic_axes={"feats": {0: "anchors"}, "boxes": {0: "kept"}, "scores": {0: "kept"}}, opset=13,
                value_dependent=True)


def make_cnn_external():
    """The CNN with its weights in a data file beside the model (external
    data), as exporters write large models: every import of the open model
    must read them from one mapping."""
    spec = make_cnn()
    spec["sets"] = spec["sets"][:2]
    spec["external"] = True
    return spec


FIXTURES = [("gpt", make_gpt), ("bert", make_bert), ("cnn", make_cnn), ("select", make_select), ("nms", make_nms),
            ("cnnext", make_cnn_external)]


def generate(name, factory):
    torch.manual_seed(1000 + sum(ord(c) for c in name))
    spec = factory()
    model = spec["model"].eval()
    base.randomize_norms(model)
    out_dir = os.path.join(OUT_ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, spec["sets"][0], path,
                          input_names=spec["input_names"], output_names=spec["output_names"],
                          dynamic_axes=spec["dynamic_axes"], opset_version=spec["opset"],
                          do_constant_folding=True, export_params=True)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    if spec.get("external"):
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data", size_threshold=0)
    shapes = []
    for k, inputs in enumerate(spec["sets"]):
        set_dir = os.path.join(out_dir, f"set_{k}")
        os.makedirs(set_dir, exist_ok=True)
        with torch.no_grad():
            outputs = model(*inputs)
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        base.save_npy(set_dir, "input", inputs)
        base.save_npy(set_dir, "output", outputs, np.float32)
        shapes.append([list(t.shape) for t in inputs])
        print(f"{name} set_{k}: inputs {shapes[-1]}, outputs {[list(t.shape) for t in outputs]}")
    meta = {"inputs": spec["input_names"], "outputs": spec["output_names"], "opset": spec["opset"],
            "dynamic_axes": {k: {str(a): s for a, s in v.items()} for k, v in spec["dynamic_axes"].items()},
            "sets": shapes, "value_dependent": spec.get("value_dependent", False), "source": SOURCE}
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


def main():
    torch.set_num_threads(1)
    return base.generate_named(FIXTURES, generate)


if __name__ == "__main__":
    sys.exit(main())
