#!/usr/bin/python3
"""Generate the small ONNX files that the tests of package onnx import.

Written with the onnx Python package (Debian's python3-onnx), so that the
importer is tested against files from the reference writer, not only
against protobufs that the Go tests build themselves.

Files, under onnx/testdata/:
    mixed.onnx          a small conv net, opset 11, whose initializers use
                        every encoding: raw_data, float_data, int64_data,
                        int32_data (float16, int8, bool), double_data;
                        Constant nodes with value, value_float(s) and
                        value_int(s); an initializer also listed as a graph
                        input (IR version 3 style); nodes stored out of
                        topological order; an omitted optional input
                        (Clip's min) and an omitted optional output.
    external/model.onnx the same kind of net with its weights saved as
                        external data in external/weights.bin (written by
                        onnx.save_model with save_as_external_data).

Run from the repository root:
    /usr/bin/python3 scripts/gen_onnx_testdata.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "onnx", "testdata")


def typed(name, data_type, dims, field, values):
    """A TensorProto whose values are stored in a typed field (not raw)."""
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    getattr(t, field).extend(values)
    return t


def mixed():
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    inits = [
        numpy_helper.from_array(w, "conv.w"),  # raw_data
        typed("conv.b", TensorProto.FLOAT, [4], "float_data", [0.5, -0.5, 1.0, 2.0]),
        typed("shape", TensorProto.INT64, [2], "int64_data", [1, -1]),
        typed("half", TensorProto.FLOAT16, [2], "int32_data",
              [int(np.float16(1.5).view(np.uint16)), int(np.float16(-2.0).view(np.uint16))]),
        typed("small", TensorProto.INT8, [3], "int32_data", [-1, 0, 127]),
        typed("flags", TensorProto.BOOL, [2], "int32_data", [1, 0]),
        typed("wide", TensorProto.DOUBLE, [2], "double_data", [0.25, -8.0]),
        typed("big", TensorProto.UINT64, [1], "uint64_data", [2**63 + 5]),
        typed("empty", TensorProto.FLOAT, [0, 3], "float_data", []),
    ]
    nodes = [
        # Out of order on purpose: the importer sorts them.
        helper.make_node("Reshape", ["pooled", "shape"], ["flat"], name="flatten"),
        helper.make_node("Conv", ["image", "conv.w", "conv.b"], ["conv"], name="conv",
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Clip", ["conv", "", "six"], ["clipped"], name="relu6"),
        helper.make_node("MaxPool", ["clipped"], ["pooled", ""], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Constant", [], ["six"], name="six",
                         value=numpy_helper.from_array(np.array(6.0, dtype=np.float32))),
        helper.make_node("Constant", [], ["alpha"], value_float=0.5),
        helper.make_node("Constant", [], ["alphas"], value_floats=[1.0, 2.0]),
        helper.make_node("Constant", [], ["k"], value_int=3),
        helper.make_node("Constant", [], ["ks"], value_ints=[4, 5, 6]),
        helper.make_node("Mul", ["flat", "alpha"], ["logits"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes, "mixed",
        inputs=[helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 8, 8]),
                helper.make_tensor_value_info("conv.b", TensorProto.FLOAT, [4])],
        outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, None),
                 helper.make_tensor_value_info("ks", TensorProto.INT64, [3])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="gen_onnx_testdata",
                              opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 6
    helper.set_model_props(model, {"purpose": "test"})
    onnx.save_model(model, os.path.join(OUT, "mixed.onnx"))


def external():
    rng = np.random.default_rng(11)
    w1 = rng.standard_normal((8, 4)).astype(np.float32)
    w2 = rng.standard_normal((2, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2"], ["y"], transB=1)],
        "external",
        inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
        initializer=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )
    model = helper.make_model(graph, producer_name="gen_onnx_testdata",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    d = os.path.join(OUT, "external")
    os.makedirs(d, exist_ok=True)
    onnx.save_model(model, os.path.join(d, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin",
                    size_threshold=0)


def main():
    os.makedirs(OUT, exist_ok=True)
    mixed()
    external()


if __name__ == "__main__":
    main()
