#!/usr/bin/python3
"""Generate the ONNX test fixtures under testdata/models/.

Each fixture is a small PyTorch model with random (seeded) weights that is
exported to ONNX together with a fixed random input and PyTorch's outputs on
that input, which serve as the reference for the runtime's tests.

Layout of testdata/models/<name>/:
    model.onnx      the exported model (weights embedded, static shapes)
    input_<i>.npy   graph inputs, in graph-input order, in the graph's dtype
    output_<i>.npy  PyTorch's outputs (float32), in graph-output order
    meta.json       {"inputs": [...], "outputs": [...], "opset": N,
                     "source": "scripts/gen_fixtures.py"}

Fixtures:
    resnet     ResNet-style CNN (Conv, BatchNormalization, MaxPool, residual
               blocks incl. a strided 1x1 projection, GlobalAveragePool, Gemm),
               opset 13
    bottleneck ResNet-50-style bottleneck blocks (1x1, 3x3, 1x1 with a 1x1
               projection shortcut, the second block strided), exported in
               eval form so that the batch norms fold into the convolutions
               and each block's last convolution and its shortcut meet at
               an Add, opset 13
    resnet_blocked
               ResNet-50's 7×7 stride-2 stem, max pool and bottleneck
               blocks (identity and projection shortcuts, strides 2) at
               widths and plane sizes where the CPU backend holds the
               activations between them in NCHW16c, opset 13
    mobilenet  MobileNetV2-style CNN (inverted residuals, depthwise conv,
               ReLU6/Clip, HardSwish, squeeze-excite with Sigmoid and
               HardSigmoid), opset 13
    mobilenet_pairs
               inverted residuals on 56² planes (expansions to 96
               channels, 3×3 depthwise of strides 1 and 2, a 5×5 of
               stride 2, ReLU6 and SiLU, a squeeze-excite), where the CPU
               backend runs each expansion with its depthwise, opset 13
    bert       BERT-style encoder (Gather embeddings, LayerNormalization,
               2 layers of 4-head attention with an additive padding mask,
               erf GELU), opset 17
    gpt        GPT-style causal decoder (pre-LN, constant causal mask applied
               with Where, tanh GELU, LM head), opset 17
    lstm_if    recurrent model with a data-dependent branch: a TorchScript
               `if x.sum() > 0` choosing between two LSTMs (exported as If
               with LSTM in each branch), then a Linear on the last step,
               opset 13. Besides input_0/output_0 (the then-branch) it saves
               alt_input_0.npy/alt_output_0.npy, an input taking the
               else-branch.
    qdq_cnn    quantised CNN: QuantizeLinear/DequantizeLinear pairs on
               activations (uint8) and weights (int8) around Conv, Relu,
               MaxPool, GlobalAveragePool and Gemm, opset 13

The script fails (non-zero exit) if an exported graph uses an op type outside
the set the runtime supports. If onnxruntime happens to be importable, the
exported models are also run with it and compared against PyTorch.

Run from the repository root (naming fixtures generates only those):
    /usr/bin/python3 scripts/gen_fixtures.py [NAME ...]

Requires the Debian packages python3-torch, python3-onnx and python3-numpy.
"""

import json
import math
import os
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_ROOT = os.path.join(REPO_ROOT, "testdata", "models")
SOURCE = "scripts/gen_fixtures.py"

# CORE_OPS are the operators the exported models may hold, here and in
# scripts/train_demo.py.
CORE_OPS = {
    "Conv", "BatchNormalization", "Relu", "Clip", "LeakyRelu", "Sigmoid",
    "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Neg",
    "Abs", "Pow", "Add", "Sub", "Mul", "Div", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Flatten", "Gemm", "MatMul", "Reshape", "Transpose",
    "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Shape",
    "Constant", "ConstantOfShape", "Identity", "Softmax",
    "LayerNormalization", "ReduceMean", "ReduceSum", "Cast", "Where",
    "Expand", "Equal", "Pad",
}
SUPPORTED_OPS = CORE_OPS | {
    # lstm_if: a scripted data-dependent branch around LSTMs.
    "If", "LSTM", "Greater",
    # qdq_cnn: fake-quantised activations and weights.
    "QuantizeLinear", "DequantizeLinear",
}


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def randomize_norms(model):
    """Give every BatchNorm/LayerNorm non-trivial parameters (and stats).

    Besides making the normalization layers non-identity, this keeps the
    exporter from deduplicating identical all-ones/all-zeros initializers.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


# ---------------------------------------------------------------------------
# resnet
# ---------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, 0, bias=False),
                nn.BatchNorm2d(cout),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.shortcut is None else self.shortcut(x)
        return F.relu(out + identity)


class ResNet(nn.Module):
    """A stem, residual blocks, a global average pool and a classifier
    (layers builds the blocks; features is the last block's width)."""

    def __init__(self, num_classes=10, pool_stem=True, layers=None, features=32, stem=None):
        super().__init__()
        if stem is None:
            stem = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
            if pool_stem:
                stem.append(nn.MaxPool2d(3, 2, 1))
        self.stem = nn.Sequential(*stem)
        self.layers = (layers or (lambda: nn.Sequential(
            BasicBlock(16, 16, 1),
            BasicBlock(16, 32, 2),
            BasicBlock(32, 32, 1),
        )))()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(features, num_classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class Bottleneck(nn.Module):
    """ResNet-50's block: 1×1, 3×3 (with the stride), 1×1, and a 1×1
    projection shortcut added to the last convolution (the input itself
    with identity, which needs cin == cout and stride 1)."""

    def __init__(self, cin, mid, cout, stride, identity=False):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity() if identity else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + self.shortcut(x))


# ---------------------------------------------------------------------------
# mobilenet
# ---------------------------------------------------------------------------

class SqueezeExcite(nn.Module):
    def __init__(self, channels, reduced, gate):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)
        self.gate = gate

    def forward(self, x):
        s = self.pool(x)
        s = F.relu(self.reduce(s))
        s = self.gate(self.expand(s))
        return x * s


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand, act, se_gate=None, kernel=3):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        layers = [
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
            nn.Conv2d(hidden, hidden, kernel, stride, kernel // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            act(),
        ]
        if se_gate is not None:
            layers.append(SqueezeExcite(hidden, max(8, hidden // 4), se_gate))
        layers += [
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        out = self.block(x)
        if self.use_residual:
            out = out + x
        return out


def conv_bn(cin, cout, kernel, stride, act):
    """A convolution without bias, its batch norm and act."""
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False),
        nn.BatchNorm2d(cout),
        act(),
    )


class MobileNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, nn.Hardswish)
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 1, 4, nn.ReLU6),
            InvertedResidual(16, 24, 2, 4, nn.ReLU6, se_gate=nn.Sigmoid()),
            InvertedResidual(24, 24, 1, 3, nn.Hardswish, se_gate=nn.Hardsigmoid()),
        )
        self.head = conv_bn(24, 96, 1, 1, nn.Hardswish)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(96, num_classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class MobileNetPairs(nn.Module):
    """Inverted residuals on 56² planes, where the CPU backend runs each
    expansion and the depthwise convolution after it a group of channels
    at a time: ReLU6 with a 3×3 depthwise of stride 1, SiLU with a 3×3 of
    stride 2 and a squeeze-excite reading the depthwise's output, SiLU
    with a 5×5 of stride 2."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2, nn.ReLU6)
        self.blocks = nn.Sequential(
            InvertedResidual(16, 16, 1, 6, nn.ReLU6),
            InvertedResidual(16, 24, 2, 6, nn.SiLU, se_gate=nn.Sigmoid()),
        )
        self.wide = InvertedResidual(16, 24, 2, 6, nn.SiLU, kernel=5)
        self.head = conv_bn(48, 64, 1, 1, nn.ReLU6)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.stem(x)
        x = torch.cat([self.blocks(x), self.wide(x)], 1)
        x = self.head(x)
        return self.fc(torch.flatten(self.pool(x), 1))


def make_mobilenet_pairs():
    return image_fixture(MobileNetPairs(), 112)


# ---------------------------------------------------------------------------
# bert
# ---------------------------------------------------------------------------

class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, x, batch, seq):
        x = x.reshape(batch, seq, self.heads, self.head_dim)
        return x.transpose(1, 2)  # [B, H, L, D]

    def forward(self, x, mask_bias, batch, seq):
        q = self.split_heads(self.query(x), batch, seq)
        k = self.split_heads(self.key(x), batch, seq)
        v = self.split_heads(self.value(x), batch, seq)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + mask_bias
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v)  # [B, H, L, D]
        ctx = ctx.transpose(1, 2).reshape(batch, seq, self.heads * self.head_dim)
        return self.out(ctx)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = BertSelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn_in = nn.Linear(hidden, ffn)
        self.act = nn.GELU()
        self.ffn_out = nn.Linear(ffn, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_bias, batch, seq):
        x = self.ln1(x + self.attn(x, mask_bias, batch, seq))
        x = self.ln2(x + self.ffn_out(self.act(self.ffn_in(x))))
        return x


class Bert(nn.Module):
    def __init__(self, vocab=500, max_len=16, hidden=64, heads=4, ffn=256, layers=2):
        super().__init__()
        self.max_len = max_len
        self.tok_emb = nn.Embedding(vocab, hidden)
        self.pos_emb = nn.Embedding(max_len, hidden)
        self.register_buffer("position_ids", torch.arange(max_len, dtype=torch.int64))
        self.emb_ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def positions(self, seq):
        """The position ids of seq tokens: all max_len of them, the length
        of every sequence this model sees."""
        return self.position_ids

    def forward(self, input_ids, attention_mask):
        batch, seq = input_ids.shape[0], input_ids.shape[1]
        x = self.tok_emb(input_ids) + self.pos_emb(self.positions(seq))
        x = self.emb_ln(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias, batch, seq)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


# ---------------------------------------------------------------------------
# gpt
# ---------------------------------------------------------------------------

def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden, heads, max_len):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        causal = torch.tril(torch.ones(max_len, max_len)).reshape(1, 1, max_len, max_len)
        self.register_buffer("causal", causal)

    def forward(self, x):
        batch, seq, hidden = x.shape[0], x.shape[1], x.shape[2]
        q, k, v = self.qkv(x).split(hidden, dim=2)
        q = q.reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = k.reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        v = v.reshape(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        att = att.masked_fill(self.causal[:, :, :seq, :seq] == 0, -1e9)
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(batch, seq, hidden)
        return self.proj(y)


class GptBlock(nn.Module):
    def __init__(self, hidden, heads, mlp, max_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, max_len)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, mlp)
        self.proj = nn.Linear(mlp, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.proj(gelu_tanh(self.fc(self.ln2(x))))
        return x


class Gpt(nn.Module):
    def __init__(self, vocab=500, max_len=16, hidden=64, heads=4, mlp=256, layers=2):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, hidden)
        self.pos_emb = nn.Parameter(torch.randn(1, max_len, hidden) * 0.02)
        self.blocks = nn.ModuleList(GptBlock(hidden, heads, mlp, max_len) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        x = self.tok_emb(input_ids) + self.pos_emb[:, :seq, :]
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---------------------------------------------------------------------------
# lstm_if
# ---------------------------------------------------------------------------

class LstmIf(nn.Module):
    def __init__(self, features=8, hidden=16, num_classes=4):
        super().__init__()
        self.lstm_a = nn.LSTM(features, hidden, batch_first=True)
        self.lstm_b = nn.LSTM(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, x):
        if bool(x.sum() > 0):
            y, _ = self.lstm_a(x)
        else:
            y, _ = self.lstm_b(x)
        return self.fc(y[:, -1])


# ---------------------------------------------------------------------------
# qdq_cnn
# ---------------------------------------------------------------------------

def fq_act(x, scale, zero_point):
    return torch.fake_quantize_per_tensor_affine(x, scale, zero_point, 0, 255)


def weight_scale(w):
    return float(w.detach().abs().max()) / 127.0


def fq_weight(w, scale):
    return torch.fake_quantize_per_tensor_affine(w, scale, 0, -128, 127)


class QdqCnn(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 2, 1)
        self.fc = nn.Linear(16, num_classes)
        # Symmetric per-tensor int8 weight scales, fixed at construction.
        self.w_scales = [weight_scale(m.weight) for m in (self.conv1, self.conv2, self.fc)]

    def forward(self, x):
        s1, s2, s3 = self.w_scales
        x = fq_act(x, 0.03, 128)
        x = F.relu(F.conv2d(x, fq_weight(self.conv1.weight, s1), self.conv1.bias, 1, 1))
        x = fq_act(x, 0.02, 0)
        x = F.max_pool2d(x, 2)
        x = F.relu(F.conv2d(x, fq_weight(self.conv2.weight, s2), self.conv2.bias, 2, 1))
        x = fq_act(x, 0.02, 0)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        x = fq_act(x, 0.01, 0)
        return F.linear(x, fq_weight(self.fc.weight, s3), self.fc.bias)


# ---------------------------------------------------------------------------
# Fixture definitions
# ---------------------------------------------------------------------------

def image_fixture(model, size, randomize=True, training=torch.onnx.TrainingMode.EVAL):
    """A classifier of one image [1, 3, size, size] → logits at opset 13,
    its norms given non-trivial parameters unless randomize is false."""
    if randomize:
        randomize_norms(model)
    x = torch.randn(1, 3, size, size)
    return dict(model=model, inputs=(x,), input_names=["image"],
                output_names=["logits"], opset=13, training=training)


def make_resnet():
    # PRESERVE keeps BatchNormalization nodes in the graph (inference form)
    # instead of folding them into the preceding Conv.
    return image_fixture(ResNet(), 32, training=torch.onnx.TrainingMode.PRESERVE)


def make_bottleneck():
    model = ResNet(pool_stem=False, features=64, layers=lambda: nn.Sequential(
        Bottleneck(16, 8, 32, 1),
        Bottleneck(32, 16, 64, 2),
    ))
    # Exported in eval form: the batch norms fold into the convolutions,
    # so each block's last convolution and its shortcut meet at an Add.
    return image_fixture(model, 16)


def make_resnet_blocked():
    # ResNet-50's stem and blocks at widths and plane sizes where the CPU
    # backend holds the activations between them with sixteen channels of
    # a position side by side: a 7×7 stride-2 stem and a max pool onto
    # 32², identity shortcuts, Winograd F(4×4) at 32² and F(2×2) at 16²,
    # stride-2 3×3 layers and shortcuts onto 16² and 8² (blocked), a 3×3
    # layer at 8², and a last block onto 4² (read blocked, written in
    # planes).
    stem = [nn.Conv2d(3, 32, 7, 2, 3, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(3, 2, 1)]
    model = ResNet(features=128, stem=stem, layers=lambda: nn.Sequential(
        Bottleneck(32, 32, 64, 1),
        Bottleneck(64, 32, 64, 1, identity=True),
        Bottleneck(64, 32, 128, 2),
        Bottleneck(128, 32, 128, 1, identity=True),
        Bottleneck(128, 32, 128, 2),
        Bottleneck(128, 32, 128, 1, identity=True),
        Bottleneck(128, 32, 128, 2),
    ))
    return image_fixture(model, 128)


def make_mobilenet():
    return image_fixture(MobileNet(), 32)


def make_bert():
    model = Bert()
    randomize_norms(model)
    input_ids = torch.randint(0, 500, (2, 16), dtype=torch.int64)
    attention_mask = torch.ones(2, 16, dtype=torch.int64)
    attention_mask[1, 11:] = 0
    input_ids[1, 11:] = 0  # padding token
    return dict(model=model, inputs=(input_ids, attention_mask),
                input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state", "pooler_output"], opset=17,
                training=torch.onnx.TrainingMode.EVAL)


def make_gpt():
    model = Gpt()
    randomize_norms(model)
    input_ids = torch.randint(0, 500, (1, 16), dtype=torch.int64)
    return dict(model=model, inputs=(input_ids,), input_names=["input_ids"],
                output_names=["logits"], opset=17,
                training=torch.onnx.TrainingMode.EVAL)


def make_lstm_if():
    model = torch.jit.script(LstmIf().eval())
    x = torch.randn(1, 6, 8)
    # input_0 takes the then-branch (positive sum), alt_input_0 the else-branch.
    x = x - x.mean() + 0.1
    alt = -x
    return dict(model=model, inputs=(x,), alt_inputs=(alt,),
                input_names=["x"], output_names=["logits"], opset=13,
                training=torch.onnx.TrainingMode.EVAL)


def make_qdq_cnn():
    return image_fixture(QdqCnn(), 16, randomize=False)


FIXTURES = [
    ("resnet", make_resnet),
    ("bottleneck", make_bottleneck),
    ("resnet_blocked", make_resnet_blocked),
    ("mobilenet", make_mobilenet),
    ("mobilenet_pairs", make_mobilenet_pairs),
    ("bert", make_bert),
    ("gpt", make_gpt),
    ("lstm_if", make_lstm_if),
    ("qdq_cnn", make_qdq_cnn),
]


# ---------------------------------------------------------------------------
# Export and checks
# ---------------------------------------------------------------------------

def maybe_check_onnxruntime(path, feeds, expected, name):
    try:
        import onnxruntime as ort  # optional, not a dependency
    except ImportError:
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    for i, (g, e) in enumerate(zip(got, expected)):
        err = float(np.max(np.abs(g - e)))
        print(f"  onnxruntime output_{i}: max abs diff {err:.3g}")
        if not np.allclose(g, e, rtol=1e-3, atol=1e-4):
            raise SystemExit(f"{name}: onnxruntime output_{i} differs from PyTorch (max abs diff {err})")


def all_nodes(graph):
    """Yield the nodes of graph and of every subgraph (If/Loop/Scan bodies)."""
    for n in graph.node:
        yield n
        for attr in n.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from all_nodes(g)


def generate(name, factory):
    seed = sum(ord(c) for c in name)
    torch.manual_seed(seed)
    spec = factory()
    model = spec["model"].eval()
    inputs = spec["inputs"]
    out_dir = os.path.join(OUT_ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")

    with torch.no_grad():
        outputs = model(*inputs)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)

    with warnings.catch_warnings():
        # The PRESERVE/constant-folding advice only concerns models left in
        # training mode; every model here is in eval mode.
        warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
        # lstm_if: the batch size is fixed at 1 and h0/c0 are zeros; the
        # exporter's missing shape inference for scripted prim::Constant
        # nodes is covered by the full ONNX check (with shape inference)
        # below.
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")
        warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")
        torch.onnx.export(
            model, inputs, path,
            input_names=spec["input_names"],
            output_names=spec["output_names"],
            opset_version=spec["opset"],
            do_constant_folding=True,
            training=spec["training"],
            export_params=True,
        )

    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)

    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    if graph_inputs != spec["input_names"]:
        raise SystemExit(f"{name}: graph inputs {graph_inputs} != {spec['input_names']}")
    if graph_outputs != spec["output_names"]:
        raise SystemExit(f"{name}: graph outputs {graph_outputs} != {spec['output_names']}")
    if any(init.data_location == onnx.TensorProto.EXTERNAL for init in proto.graph.initializer):
        raise SystemExit(f"{name}: model uses external data")
    opsets = {o.domain: o.version for o in proto.opset_import}
    opset = opsets.get("", opsets.get("ai.onnx"))
    if opset != spec["opset"]:
        raise SystemExit(f"{name}: opset {opset} != {spec['opset']}")

    op_types = sorted({(n.domain, n.op_type) for n in all_nodes(proto.graph)})
    bad = [f"{d}:{t}" if d else t for d, t in op_types
           if d not in ("", "ai.onnx") or t not in SUPPORTED_OPS]
    print(f"{name}: opset {opset}, ops: {', '.join(t for _, t in op_types)}")
    if bad:
        raise SystemExit(f"{name}: unsupported op types in exported graph: {', '.join(bad)}")

    feeds = dict(zip(graph_inputs, save_npy(out_dir, "input", inputs[:len(graph_inputs)])))
    for i, (n, arr) in enumerate(feeds.items()):
        print(f"  input_{i}  {n}: {arr.dtype} {list(arr.shape)}")
    expected = save_npy(out_dir, "output", outputs[:len(graph_outputs)], np.float32)
    for i, (n, arr) in enumerate(zip(graph_outputs, expected)):
        print(f"  output_{i} {n}: {arr.dtype} {list(arr.shape)}")

    meta = {"inputs": graph_inputs, "outputs": graph_outputs, "opset": opset, "source": SOURCE}
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")

    maybe_check_onnxruntime(path, feeds, expected, name)

    # An alternative input set (e.g. one taking the other branch of an If),
    # saved as alt_input_<i>.npy/alt_output_<i>.npy with PyTorch's outputs.
    alt_inputs = spec.get("alt_inputs")
    if alt_inputs is not None:
        with torch.no_grad():
            alt_outputs = model(*alt_inputs)
        if isinstance(alt_outputs, torch.Tensor):
            alt_outputs = (alt_outputs,)
        alt_feeds = dict(zip(graph_inputs, save_npy(out_dir, "alt_input", alt_inputs[:len(graph_inputs)])))
        alt_expected = save_npy(out_dir, "alt_output", alt_outputs, np.float32)
        print(f"  alt_input_*/alt_output_*: {len(alt_feeds)} inputs, {len(alt_expected)} outputs")
        maybe_check_onnxruntime(path, alt_feeds, alt_expected, name + " (alt)")


def save_npy(out_dir, prefix, tensors, dtype=None):
    """Saves the tensors as prefix_0.npy, prefix_1.npy, … (cast to dtype
    where given) and returns the arrays saved."""
    arrays = []
    for i, t in enumerate(tensors):
        arr = t.numpy() if dtype is None else t.numpy().astype(dtype)
        arr = np.ascontiguousarray(arr)
        np.save(os.path.join(out_dir, f"{prefix}_{i}.npy"), arr)
        arrays.append(arr)
    return arrays


def generate_named(fixtures, generate):
    """Runs generate on each (name, factory) of fixtures named on the
    command line, or on all of them when none is."""
    only = set(sys.argv[1:])
    for name, factory in fixtures:
        if not only or name in only:
            generate(name, factory)
    return 0


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return generate_named(FIXTURES, generate)


if __name__ == "__main__":
    sys.exit(main())
