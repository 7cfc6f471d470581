#!/usr/bin/python3
"""Generate the ONNX fixtures whose reference outputs come from ONNX Runtime.

The models are built node by node with onnx.helper (Debian's python3-onnx,
ONNX 1.12, knows opsets up to 17 and has no reference evaluator, so the
models of opsets 18 to 20 are written without its checker). Each input set
is run once by ONNX Runtime (the npm package onnxruntime-node, CPU
execution provider, through bench/ort_runner.js), whose outputs are the
reference the tests compare with.

testdata/open/<name>/ (the layout of scripts/gen_open_fixtures.py: model.onnx,
set_<k>/input_<i>.npy, set_<k>/output_<i>.npy, meta.json), models with open
dimensions whose If nodes need the value of their condition:

    ifrate   x [batch, n] float and sr int64 scalar. y = If(sr == 16000):
             the mean of groups of 4 along n, else of groups of 3; at the
             shapes of one rate the other branch cannot be inferred (n not
             divisible) or gives another shape. z = If(sum(x) > 0): 2x,
             else -x (a condition computed at run time, both branches of
             one shape). Sets at 16000 and 8000, batch 1 and 2.
    ifstage  x [batch, n] float. y = If(sum(x) > 0): the row sums
             [batch, 1], else 2x [batch, n]: the condition is computed, and
             the output's shape follows from it.

testdata/opset/<name>/ (the layout of ONNX's backend tests: model.onnx,
test_data_set_0/input_<i>.pb, test_data_set_0/output_<i>.pb), one operator
each at the opset where its definition changed (18: reductions with axes
as an input, Split's num_outputs, Pad's axes, Resize's axes and
keep_aspect_ratio_policy, ScatterElements and ScatterND with max and min,
the bitwise operators; 19: Pad's wrap mode, Resize's half_pixel_symmetric,
AveragePool's dilations; 20: Gelu, DFT's axis input, GridSample's mode
names).

testdata/scalar/<name>/ (the same layout, several data sets): models with
an input declared a scalar, fed as a scalar and as [1], [1, 1] or [3],
which ONNX Runtime takes (scalar_fixed and scalar_open: y = x·s and
w = s + s; scalar_rate: ifrate's model at fixed shapes, sr fed as [1]).

testdata/opset/refused/<name>.onnx: models of those opsets that berth
refuses (operators or options it does not implement); the tests expect an
error naming the operator and the opset. No reference: ONNX Runtime is
not run.

Run from the repository root (naming fixtures generates only those):

    /usr/bin/python3 scripts/gen_ort_fixtures.py [--ort DIR] [NAME ...]

DIR is the folder whose node_modules holds onnxruntime-node (default
~/.cache/berth/ort/1.30.0, where bench/compare_ort.sh installs it).
Requires node, and the Debian packages python3-onnx and python3-numpy.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_VERSION = "1.30.0"
SOURCE = "scripts/gen_ort_fixtures.py"
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, outputs, opset, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name=SOURCE)
    m.ir_version = 8  # what ONNX 1.13-1.15 write for opsets 18-20
    return m


def tensor_in(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def out(name, elem=F):
    return helper.make_tensor_value_info(name, elem, None)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def ort_run(ort_dir, path, feeds):
    """Runs the model at path once in ONNX Runtime on feeds (name → array)
    and returns its outputs by name."""
    with tempfile.TemporaryDirectory() as tmp:
        args = ["node", os.path.join(REPO_ROOT, "bench", "ort_runner.js"), path, "--ort", ort_dir,
                "--threads", "1", "--warmup", "0", "--iters", "1", "--output-dir", os.path.join(tmp, "out")]
        for name, a in feeds.items():
            p = os.path.join(tmp, f"in_{len(args)}.npy")
            np.save(p, a)
            args += ["--input", f"{name}={p}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{path}: ONNX Runtime failed: {r.stderr.strip()}")
        return {f[:-len(".npy")]: np.load(os.path.join(tmp, "out", f)) for f in os.listdir(os.path.join(tmp, "out"))}


# ---------------------------------------------------------------------------
# Open models whose If needs its condition's value
# ---------------------------------------------------------------------------

def group_mean(prefix, x, k):
    """Nodes for the mean of groups of k along axis 1 of x [batch, n]."""
    return [
        helper.make_node("Reshape", [x, prefix + "_shape"], [prefix + "_groups"]),
        helper.make_node("ReduceMean", [prefix + "_groups"], [prefix + "_mean"], axes=[2], keepdims=0),
    ], [const(prefix + "_shape", np.array([0, -1, k], dtype=np.int64))]


def ifrate():
    then_nodes, then_inits = group_mean("t", "x", 4)
    else_nodes, else_inits = group_mean("e", "x", 3)
    rate_then = helper.make_graph(then_nodes, "rate_then", [], [out("t_mean")], initializer=then_inits)
    rate_else = helper.make_graph(else_nodes, "rate_else", [], [out("e_mean")], initializer=else_inits)
    sign_then = helper.make_graph([helper.make_node("Add", ["x", "x"], ["twice"])], "sign_then", [], [out("twice")])
    sign_else = helper.make_graph([helper.make_node("Neg", ["x"], ["neg"])], "sign_else", [], [out("neg")])
    nodes = [
        helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
        helper.make_node("If", ["is16k"], ["y"], then_branch=rate_then, else_branch=rate_else),
        helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        helper.make_node("Greater", ["sum", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["z"], then_branch=sign_then, else_branch=sign_else),
    ]
    m = model(nodes, [tensor_in("x", F, ["batch", "n"]), tensor_in("sr", I64, [])], [out("y"), out("z")], 13,
              [const("rate", np.array(16000, dtype=np.int64)), const("zero", np.array(0, dtype=np.float32))])
    rng = np.random.default_rng(18)
    sets = []
    for batch, n, sr in [(1, 8, 16000), (2, 12, 16000), (1, 6, 8000), (2, 9, 8000)]:
        sets.append({"x": rng.standard_normal((batch, n)).astype(np.float32), "sr": np.array(sr, dtype=np.int64)})
    return m, sets, {"x": {"0": "batch", "1": "n"}}


def ifstage():
    then = helper.make_graph([helper.make_node("ReduceSum", ["x", "axis1"], ["rows"], keepdims=1)], "rows", [],
                             [out("rows")], initializer=[const("axis1", np.array([1], dtype=np.int64))])
    els = helper.make_graph([helper.make_node("Add", ["x", "x"], ["twice"])], "twice", [], [out("twice")])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        helper.make_node("Greater", ["sum", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["y"], then_branch=then, else_branch=els),
    ]
    m = model(nodes, [tensor_in("x", F, ["batch", "n"])], [out("y")], 13,
              [const("zero", np.array(0, dtype=np.float32))])
    rng = np.random.default_rng(13)
    sets = []
    for batch, n, positive in [(1, 5, True), (1, 5, False), (3, 4, False), (2, 7, True)]:
        x = rng.standard_normal((batch, n)).astype(np.float32)
        if (x.sum() > 0) != positive:
            x = -x
        sets.append({"x": x})
    return m, sets, {"x": {"0": "batch", "1": "n"}}


OPEN = {"ifrate": ifrate, "ifstage": ifstage}


def write_open(name, ort_dir):
    m, sets, axes = OPEN[name]()
    d = os.path.join(REPO_ROOT, "testdata", "open", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    inputs = [i.name for i in m.graph.input]
    outputs = [o.name for o in m.graph.output]
    shapes = []
    for k, feeds in enumerate(sets):
        got = ort_run(ort_dir, path, feeds)
        sd = os.path.join(d, f"set_{k}")
        os.makedirs(sd)
        for i, in_name in enumerate(inputs):
            np.save(os.path.join(sd, f"input_{i}.npy"), feeds[in_name])
        for i, out_name in enumerate(outputs):
            np.save(os.path.join(sd, f"output_{i}.npy"), got[out_name])
        shapes.append([list(feeds[in_name].shape) for in_name in inputs])
    meta = {"inputs": inputs, "outputs": outputs, "opset": m.opset_import[0].version, "dynamic_axes": axes,
            "sets": shapes, "value_dependent": True, "source": SOURCE,
            "reference": f"onnxruntime-node {ORT_VERSION}"}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"open/{name}: {len(sets)} sets", flush=True)


# ---------------------------------------------------------------------------
# One operator at a newer opset
# ---------------------------------------------------------------------------

def rng_of(name):
    return np.random.default_rng(sum(map(ord, name)))


def single(op, inputs, attrs=None, outputs=1, inits=(), opset=18):
    """A model of one node: inputs are (name, array) pairs, fed at run
    time unless listed in inits (names of constant inputs); "" skips an
    optional input."""
    names = [n for n, _ in inputs]
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, **(attrs or {}))
    feeds = {n: a for n, a in inputs if n and n not in inits}
    graph_in = [tensor_in(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape)) for n, a in feeds.items()]
    consts = [const(n, a) for n, a in inputs if n in inits]
    elem = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[inputs[0][1].dtype]  # every output is of the first input's type
    return model([node], graph_in, [out(o, elem) for o in outs], opset, consts), feeds


def reduce_cases():
    cases = {}
    x = rng_of("reduce").random((3, 4, 5)).astype(np.float32) + 0.5
    for op in ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
               "ReduceLogSumExp", "ReduceMean"]:
        snake = "reduce_" + op[len("Reduce"):].lower()
        cases[snake + "_axes_input"] = single(op, [("x", x), ("axes", np.array([0, -1], dtype=np.int64))],
                                              {"keepdims": 1}, inits={"axes"})
        cases[snake + "_axes_input_drop"] = single(op, [("x", x), ("axes", np.array([1], dtype=np.int64))],
                                                   {"keepdims": 0}, inits={"axes"})
    cases["reduce_max_all"] = single("ReduceMax", [("x", x)], {"keepdims": 0})
    cases["reduce_mean_empty_axes_noop"] = single("ReduceMean", [("x", x), ("axes", np.array([], dtype=np.int64))],
                                                  {"noop_with_empty_axes": 1}, inits={"axes"})
    return cases


def split_cases():
    r = rng_of("split")
    return {
        "split_num_outputs_uneven": single("Split", [("x", r.standard_normal((2, 10)).astype(np.float32))],
                                           {"axis": 1, "num_outputs": 3}, outputs=3),
        "split_num_outputs_even": single("Split", [("x", r.standard_normal((8, 3)).astype(np.float32))],
                                         {"num_outputs": 4}, outputs=4),
        "split_num_outputs_last_axis": single("Split", [("x", r.standard_normal((2, 3, 7)).astype(np.float32))],
                                              {"axis": -1, "num_outputs": 2}, outputs=2),
    }


def pad_cases():
    x = rng_of("pad").standard_normal((2, 3, 4)).astype(np.float32)
    pads = np.array([1, 2, 0, 3], dtype=np.int64)
    axes = np.array([1, -1], dtype=np.int64)
    cases = {}
    for mode in ["constant", "reflect", "edge"]:
        ins = [("x", x), ("pads", pads), ("value", np.array(0.5, dtype=np.float32)), ("axes", axes)]
        if mode != "constant":
            ins[2] = ("", None)
        cases[f"pad_axes_{mode}"] = single("Pad", ins, {"mode": mode}, inits={"pads", "value", "axes"})
    cases["pad_wrap"] = single("Pad", [("x", x), ("pads", np.array([0, 1, 2, 0, 2, 3], dtype=np.int64))],
                               {"mode": "wrap"}, inits={"pads"}, opset=19)
    cases["pad_wrap_axes"] = single("Pad", [("x", x), ("pads", np.array([2, -1], dtype=np.int64)), ("", None),
                                            ("axes", np.array([2], dtype=np.int64))],
                                    {"mode": "wrap"}, inits={"pads", "axes"}, opset=19)
    return cases


def resize_cases():
    x = rng_of("resize").standard_normal((1, 2, 4, 6)).astype(np.float32)
    cases = {
        "resize_axes_scales_linear": single("Resize", [("x", x), ("", None), ("scales", np.array([1.5, 0.5], dtype=np.float32))],
                                            {"mode": "linear", "axes": [2, 3]}, inits={"scales"}),
        "resize_axes_sizes_nearest": single("Resize", [("x", x), ("", None), ("", None), ("sizes", np.array([9, 5], dtype=np.int64))],
                                            {"mode": "nearest", "axes": [3, 2]}, inits={"sizes"}),
        "resize_axes_sizes_cubic_crop": single("Resize", [("x", x), ("roi", np.array([0.1, 0.8], dtype=np.float32)), ("", None),
                                                          ("sizes", np.array([7], dtype=np.int64))],
                                               {"mode": "cubic", "axes": [3], "coordinate_transformation_mode": "tf_crop_and_resize"},
                                               inits={"roi", "sizes"}),
    }
    for policy in ["not_larger", "not_smaller"]:
        for mode in ["nearest", "linear"]:
            cases[f"resize_keep_aspect_{policy}_{mode}"] = single(
                "Resize", [("x", x), ("", None), ("", None), ("sizes", np.array([7, 7], dtype=np.int64))],
                {"mode": mode, "axes": [2, 3], "keep_aspect_ratio_policy": policy}, inits={"sizes"})
    for mode in ["nearest", "linear", "cubic"]:
        cases[f"resize_half_pixel_symmetric_{mode}"] = single(
            "Resize", [("x", x), ("", None), ("scales", np.array([1, 1, 1.7, 0.6], dtype=np.float32))],
            {"mode": mode, "coordinate_transformation_mode": "half_pixel_symmetric"}, inits={"scales"}, opset=19)
    return cases


def scatter_cases():
    r = rng_of("scatter")
    data = r.standard_normal((4, 5)).astype(np.float32)
    cases = {}
    for red in ["max", "min"]:
        ind = np.array([[0, 1, 1, 3, 3], [0, 1, 1, 3, 3], [2, 2, 0, 0, 1]], dtype=np.int64)
        upd = r.standard_normal((3, 5)).astype(np.float32)
        cases[f"scatter_elements_{red}"] = single("ScatterElements", [("data", data), ("indices", ind), ("updates", upd)],
                                                  {"axis": 0, "reduction": red})
        ind = np.array([[1], [3], [1], [0], [3]], dtype=np.int64)
        upd = r.standard_normal((5, 5)).astype(np.float32)
        cases[f"scatternd_{red}"] = single("ScatterND", [("data", data), ("indices", ind), ("updates", upd)],
                                           {"reduction": red})
    return cases


def bitwise_cases():
    r = rng_of("bitwise")
    cases = {}
    for dt in [np.int32, np.uint8, np.int64, np.uint16]:
        info = np.iinfo(dt)
        a = r.integers(info.min, info.max, size=(3, 4), dtype=dt, endpoint=True)
        b = r.integers(info.min, info.max, size=(4,), dtype=dt, endpoint=True)
        name = np.dtype(dt).name
        for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
            cases[f"bitwise_{op[len('Bitwise'):].lower()}_{name}"] = single(op, [("a", a), ("b", b)])
        cases[f"bitwise_not_{name}"] = single("BitwiseNot", [("a", a)])
    return cases


def pool_cases():
    x = rng_of("pool").standard_normal((1, 2, 9, 8)).astype(np.float32)
    return {
        "averagepool_dilations": single("AveragePool", [("x", x)], {"kernel_shape": [3, 2], "dilations": [2, 3]}, opset=19),
        "averagepool_dilations_pads": single("AveragePool", [("x", x)],
                                             {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [1, 2, 2, 1],
                                              "strides": [2, 1], "count_include_pad": 1}, opset=19),
        "averagepool_dilations_ceil": single("AveragePool", [("x", x)],
                                             {"kernel_shape": [2, 2], "dilations": [2, 2], "strides": [2, 2],
                                              "ceil_mode": 1}, opset=19),
    }


def opset20_cases():
    r = rng_of("opset20")
    x = (r.standard_normal((3, 7)) * 3).astype(np.float32)
    sig = r.standard_normal((2, 6, 5, 2)).astype(np.float32)
    img = r.standard_normal((1, 2, 5, 6)).astype(np.float32)
    grid = (r.random((1, 4, 3, 2)) * 2.4 - 1.2).astype(np.float32)
    return {
        "gelu": single("Gelu", [("x", x)], opset=20),
        "gelu_tanh": single("Gelu", [("x", x)], {"approximate": "tanh"}, opset=20),
        "dft_axis_input": single("DFT", [("x", sig), ("", None), ("axis", np.array(2, dtype=np.int64))],
                                 inits={"axis"}, opset=20),
        "dft_default_axis_inverse": single("DFT", [("x", sig)], {"inverse": 1}, opset=20),
        # A complex signal: the imaginary parts of a real one's DC and
        # Nyquist bins are zeros that ORT computes as rounding noise.
        "dft_axis_input_length": single("DFT", [("x", sig), ("len", np.array(4, dtype=np.int64)),
                                                ("axis", np.array(-3, dtype=np.int64))],
                                        inits={"len", "axis"}, opset=20),
        "gridsample_linear": single("GridSample", [("x", img), ("grid", grid)], {"mode": "linear"}, opset=20),
        "gridsample_cubic_border": single("GridSample", [("x", img), ("grid", grid)],
                                          {"mode": "cubic", "padding_mode": "border", "align_corners": 1}, opset=20),
        "gridsample_cubic_reflection": single("GridSample", [("x", img), ("grid", grid)],
                                              {"mode": "cubic", "padding_mode": "reflection"}, opset=20),
        "gridsample_linear_reflection": single("GridSample", [("x", img), ("grid", grid)],
                                               {"padding_mode": "reflection", "align_corners": 1}, opset=20),
    }


CASES = {}
for fn in [reduce_cases, split_cases, pad_cases, resize_cases, scatter_cases, bitwise_cases, pool_cases, opset20_cases]:
    CASES.update(fn())


def write_case(name, ort_dir):
    m, feeds = CASES[name]
    got = write_sets(os.path.join(REPO_ROOT, "testdata", "opset", name), m, [feeds], ort_dir)
    print(f"opset/{name}: opset {m.opset_import[0].version}, outputs {[tuple(got[o.name].shape) for o in m.graph.output]}",
          flush=True)


# ---------------------------------------------------------------------------
# Inputs declared scalars, fed with other shapes
# ---------------------------------------------------------------------------

def scalar_cases():
    """Models with an input declared a scalar, each with data sets that
    feed it as a scalar and as [1], [1, 1] and [3] (where the model
    allows): ONNX Runtime takes any shape for a declared scalar."""
    r = rng_of("scalar")
    cases = {}
    for name, batch in [("scalar_fixed", 2), ("scalar_open", "batch")]:
        m = model([helper.make_node("Mul", ["x", "s"], ["y"]), helper.make_node("Add", ["s", "s"], ["w"])],
                  [tensor_in("x", F, [batch, 3]), tensor_in("s", F, [])], [out("y"), out("w")], 13)
        sets = []
        for k, shape in enumerate([(), (1,), (1, 1), (3,)]):
            rows = 2 if name == "scalar_fixed" else k + 1
            sets.append({"x": r.standard_normal((rows, 3)).astype(np.float32),
                         "s": r.standard_normal(shape).astype(np.float32)})
        cases[name] = (m, sets)
    # An If on a rate, as Silero VAD has: sr fed as [1].
    rate, _, _ = ifrate()
    for v in rate.graph.input:
        if v.name == "x":
            for d, size in zip(v.type.tensor_type.shape.dim, [1, 12]):
                d.Clear()
                d.dim_value = size
    sets = []
    for sr, shape in [(16000, ()), (16000, (1,)), (8000, (1,)), (8000, (1, 1))]:
        sets.append({"x": r.standard_normal((1, 12)).astype(np.float32), "sr": np.full(shape, sr, dtype=np.int64)})
    cases["scalar_rate"] = (rate, sets)
    return cases


SCALAR = scalar_cases()


def write_sets(d, m, sets, ort_dir):
    """Writes m and its data sets in the layout of ONNX's backend tests,
    with ONNX Runtime's outputs."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")
    onnx.save(m, path)
    for k, feeds in enumerate(sets):
        got = ort_run(ort_dir, path, feeds)
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd)
        for i, (n, a) in enumerate(feeds.items()):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(sd, f"input_{i}.pb"))
        for i, o in enumerate(m.graph.output):
            onnx.save_tensor(numpy_helper.from_array(got[o.name], o.name), os.path.join(sd, f"output_{i}.pb"))
    return got


def write_scalar(name, ort_dir):
    m, sets = SCALAR[name]
    write_sets(os.path.join(REPO_ROOT, "testdata", "scalar", name), m, sets, ort_dir)
    print(f"scalar/{name}: {len(sets)} sets", flush=True)


# ---------------------------------------------------------------------------
# What berth refuses
# ---------------------------------------------------------------------------

def refused():
    r = rng_of("refused")
    img = r.standard_normal((1, 4, 5, 6)).astype(np.float32)
    return {
        "group_normalization": single("GroupNormalization", [("x", img), ("scale", np.ones(2, np.float32)),
                                                             ("bias", np.zeros(2, np.float32))],
                                      {"num_groups": 2}, inits={"scale", "bias"}),
        "col2im": single("Col2Im", [("x", r.standard_normal((1, 4, 6)).astype(np.float32)),
                                    ("image_shape", np.array([3, 4], dtype=np.int64)),
                                    ("block_shape", np.array([2, 2], dtype=np.int64))],
                         inits={"image_shape", "block_shape"}),
        "center_crop_pad": single("CenterCropPad", [("x", img), ("shape", np.array([3, 7], dtype=np.int64))],
                                  {"axes": [2, 3]}, inits={"shape"}),
        "resize_antialias": single("Resize", [("x", img), ("", None), ("scales", np.array([1, 1, 0.5, 0.5], np.float32))],
                                   {"mode": "linear", "antialias": 1}, inits={"scales"}),
        "gridsample_volume": single("GridSample", [("x", r.standard_normal((1, 1, 2, 3, 4)).astype(np.float32)),
                                                   ("grid", r.random((1, 2, 2, 2, 3)).astype(np.float32))], opset=20),
        "deform_conv": single("DeformConv", [("x", img), ("w", np.ones((2, 4, 1, 1), np.float32)),
                                             ("offset", np.zeros((1, 2, 5, 6), np.float32))],
                              inits={"w"}, opset=19),
        "pad_wrap_opset18": single("Pad", [("x", img), ("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))],
                                   {"mode": "wrap"}, inits={"pads"}),
    }


def write_refused():
    d = os.path.join(REPO_ROOT, "testdata", "opset", "refused")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, (m, _) in refused().items():
        onnx.save(m, os.path.join(d, name + ".onnx"))
    print(f"opset/refused: {len(refused())} models", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort", default=os.path.join(os.path.expanduser("~"), ".cache", "berth", "ort", ORT_VERSION),
                    help="folder whose node_modules holds onnxruntime-node")
    ap.add_argument("names", nargs="*", help="fixtures to generate (default: all)")
    args = ap.parse_args()
    names = args.names or list(OPEN) + list(CASES) + list(SCALAR) + ["refused"]
    for n in names:
        if n not in OPEN and n not in CASES and n not in SCALAR and n != "refused":
            sys.exit(f"unknown fixture {n!r}")
    if not os.path.isfile(os.path.join(args.ort, "node_modules", "onnxruntime-node", "package.json")):
        sys.exit(f"no onnxruntime-node under {args.ort}: run bench/compare_ort.sh once, or pass --ort")
    if not args.names:
        for d in ("opset", "scalar"):
            shutil.rmtree(os.path.join(REPO_ROOT, "testdata", d), ignore_errors=True)
    for n in names:
        if n in OPEN:
            write_open(n, args.ort)
        elif n in CASES:
            write_case(n, args.ort)
        elif n in SCALAR:
            write_scalar(n, args.ort)
        else:
            write_refused()


if __name__ == "__main__":
    main()
