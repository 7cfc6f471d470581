#!/usr/bin/python3
"""Cross-check the generated ONNX fixtures with a small numpy interpreter.

For every fixture under testdata/models/ (and the demo model under
internal/demo/data/), this evaluates model.onnx node by node with plain numpy,
following the ONNX operator definitions, and compares the result with the
PyTorch reference outputs stored next to the model. It checks that the
exported graphs mean what PyTorch computed, independently of onnxruntime,
and exits non-zero on a mismatch or an op it does not implement.

Only the op types and attribute combinations the fixtures use are covered;
a fixture with an op the interpreter lacks (lstm_if's If and LSTM,
qdq_cnn's QuantizeLinear) is reported as not checked, counts as a
failure, and the other fixtures are still checked.

Run from the repository root, after scripts/gen_fixtures.py and
scripts/train_demo.py:
    /usr/bin/python3 scripts/check_fixtures.py

Requires the Debian packages python3-onnx and python3-numpy.
"""

import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pad_spatial(x, pads, value):
    n = x.ndim - 2
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)]
    return np.pad(x, width, mode="constant", constant_values=value)


def _windows(x, kernel, strides, dilations):
    """Return a view [N, C, OH, OW, KH, KW] of 2-D sliding windows."""
    n, c, h, w = x.shape
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    oh = (h - (dh * (kh - 1) + 1)) // sh + 1
    ow = (w - (dw * (kw - 1) + 1)) // sw + 1
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x, shape=(n, c, oh, ow, kh, kw),
        strides=(s[0], s[1], s[2] * sh, s[3] * sw, s[2] * dh, s[3] * dw))


def op_conv(node, x, w, b=None):
    a = _attrs(node)
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("Conv auto_pad")
    group = a.get("group", 1)
    kernel = w.shape[2:]
    pads = a.get("pads", [0] * 4)
    strides = a.get("strides", [1, 1])
    dil = a.get("dilations", [1, 1])
    xp = np.ascontiguousarray(_pad_spatial(x.astype(np.float64), pads, 0.0))
    win = _windows(xp, kernel, strides, dil)  # N,C,OH,OW,KH,KW
    cin_g = x.shape[1] // group
    cout_g = w.shape[0] // group
    outs = []
    for g in range(group):
        wg = w[g * cout_g:(g + 1) * cout_g].astype(np.float64)  # Co,Ci,KH,KW
        xg = win[:, g * cin_g:(g + 1) * cin_g]
        outs.append(np.einsum("ncyxij,ocij->noyx", xg, wg, optimize=True))
    y = np.concatenate(outs, axis=1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


def op_maxpool(node, x):
    a = _attrs(node)
    if a.get("ceil_mode", 0) or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise NotImplementedError("MaxPool ceil_mode/auto_pad")
    xp = np.ascontiguousarray(_pad_spatial(x, a.get("pads", [0] * 4), -np.inf))
    win = _windows(xp, a["kernel_shape"], a.get("strides", [1, 1]), a.get("dilations", [1, 1]))
    return win.max(axis=(4, 5)).astype(x.dtype)


def op_batchnorm(node, x, scale, bias, mean, var):
    eps = _attrs(node).get("epsilon", 1e-5)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(np.float32)


def op_layernorm(node, x, scale, bias=None):
    a = _attrs(node)
    axis = a.get("axis", -1) % x.ndim
    eps = a.get("epsilon", 1e-5)
    axes = tuple(range(axis, x.ndim))
    xd = x.astype(np.float64)
    mean = xd.mean(axis=axes, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (xd - mean) / np.sqrt(var + eps) * scale
    if bias is not None:
        y = y + bias
    return y.astype(np.float32)


def op_gemm(node, a_, b_, c=None):
    a = _attrs(node)
    if a.get("transA", 0):
        a_ = a_.T
    if a.get("transB", 0):
        b_ = b_.T
    y = a.get("alpha", 1.0) * (a_.astype(np.float64) @ b_.astype(np.float64))
    if c is not None:
        y = y + a.get("beta", 1.0) * c
    return y.astype(np.float32)


def op_softmax(node, x):
    axis = _attrs(node).get("axis", -1)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(np.float32)


def op_clip(node, x, lo=None, hi=None):
    y = x
    if lo is not None:
        y = np.maximum(y, lo)
    if hi is not None:
        y = np.minimum(y, hi)
    return y.astype(x.dtype)


def op_hardsigmoid(node, x):
    a = _attrs(node)
    alpha, beta = a.get("alpha", 0.2), a.get("beta", 0.5)
    return np.clip(alpha * x + beta, 0.0, 1.0).astype(x.dtype)


def op_reshape(node, x, shape):
    shape = [int(s) for s in shape]
    if not _attrs(node).get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def op_split(node, x, split=None):
    a = _attrs(node)
    axis = a.get("axis", 0)
    if split is None:
        k = len(node.output)
        split = [x.shape[axis] // k] * k
    idx = np.cumsum(split)[:-1]
    return tuple(np.split(x, idx, axis=axis))


def op_gather(node, data, idx):
    axis = _attrs(node).get("axis", 0)
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return np.take(data, idx, axis=axis)


def op_unsqueeze(node, x, axes):
    out_rank = x.ndim + len(axes)
    for ax in sorted(int(a) % out_rank for a in axes):
        x = np.expand_dims(x, ax)
    return x


def op_cast(node, x):
    return x.astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[_attrs(node)["to"]])


def op_flatten(node, x):
    axis = _attrs(node).get("axis", 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


def op_constant(node):
    a = _attrs(node)
    if "value" not in a:
        raise NotImplementedError("Constant without 'value'")
    return numpy_helper.to_array(a["value"])



OPS = {
    "Conv": op_conv,
    "MaxPool": op_maxpool,
    "BatchNormalization": op_batchnorm,
    "LayerNormalization": op_layernorm,
    "Gemm": op_gemm,
    "Softmax": op_softmax,
    "Clip": op_clip,
    "HardSigmoid": op_hardsigmoid,
    "Reshape": op_reshape,
    "Split": op_split,
    "Gather": op_gather,
    "Unsqueeze": op_unsqueeze,
    "Cast": op_cast,
    "Flatten": op_flatten,
    "Constant": op_constant,
    "GlobalAveragePool": lambda n, x: x.mean(axis=tuple(range(2, x.ndim)), keepdims=True).astype(x.dtype),
    "Transpose": lambda n, x: np.transpose(x, _attrs(n).get("perm")),
    "Identity": lambda n, x: x,
    "Relu": lambda n, x: np.maximum(x, 0).astype(x.dtype),
    "Sigmoid": lambda n, x: (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype),
    "Tanh": lambda n, x: np.tanh(x),
    "Erf": lambda n, x: _erf(x).astype(x.dtype),
    "Add": lambda n, a, b: a + b,
    "Sub": lambda n, a, b: a - b,
    "Mul": lambda n, a, b: a * b,
    "Div": lambda n, a, b: a / b,
    "Pow": lambda n, a, b: np.power(a, b).astype(a.dtype),
    "MatMul": lambda n, a, b: np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32),
    "Where": lambda n, c, a, b: np.where(c, a, b),
}


def run_model(path, feeds):
    model = onnx.load(path)
    env = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    env.update(feeds)
    for node in model.graph.node:
        if node.op_type not in OPS:
            raise NotImplementedError(f"op {node.op_type}")
        args = [env[name] if name else None for name in node.input]
        while args and args[-1] is None:
            args.pop()
        out = OPS[node.op_type](node, *args)
        outs = out if isinstance(out, tuple) else (out,)
        for name, value in zip(node.output, outs):
            env[name] = np.asarray(value)
    return [env[o.name] for o in model.graph.output]


def check(label, path, feeds, expected):
    try:
        got = run_model(path, feeds)
    except NotImplementedError as e:
        # Reported and counted as a failure, but the other fixtures are
        # still checked.
        print(f"{label}: NOT CHECKED, the interpreter lacks {e}")
        return False
    ok = True
    for i, (g, e) in enumerate(zip(got, expected)):
        if g.shape != e.shape:
            print(f"{label}: output {i} shape {g.shape} != {e.shape}")
            ok = False
            continue
        err = float(np.max(np.abs(g.astype(np.float64) - e)))
        scale = float(np.max(np.abs(e)))
        good = np.allclose(g, e, rtol=1e-4, atol=1e-4 * max(1.0, scale))
        print(f"{label}: output_{i} {list(e.shape)} max|ref| {scale:.3g}, max abs diff {err:.3g} "
              f"{'ok' if good else 'MISMATCH'}")
        ok = ok and good
    return ok


def main():
    ok = True
    root = os.path.join(REPO_ROOT, "testdata", "models")
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
        feeds = {n: np.load(os.path.join(d, f"input_{i}.npy")) for i, n in enumerate(meta["inputs"])}
        expected = [np.load(os.path.join(d, f"output_{i}.npy")) for i in range(len(meta["outputs"]))]
        ok = check(name, os.path.join(d, "model.onnx"), feeds, expected) and ok

    demo = os.path.join(REPO_ROOT, "internal", "demo", "data")
    if os.path.exists(os.path.join(demo, "model.onnx")):
        feeds = {"image": np.load(os.path.join(demo, "images.npy"))}
        expected = [np.load(os.path.join(demo, "logits.npy"))]
        ok = check("demo", os.path.join(demo, "model.onnx"), feeds, expected) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
