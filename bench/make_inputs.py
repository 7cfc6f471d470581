#!/usr/bin/python3
"""Write one fixed-seed input per graph input of an ONNX model, as .npy.

    /usr/bin/python3 bench/make_inputs.py MODEL DIR [--seed N] [--int-high N]

For every graph input (initializers excluded) it writes DIR/<name>.npy and
prints one line NAME=PATH, ready for `berth bench --input` and
bench/ort_runner.js. Floating-point inputs are N(0, 1) samples; integer
inputs are uniform in [0, V), where V is the first dimension (along the
Gather axis) of the initializer that a Gather indexes with the input — the
vocabulary of an embedding — or --int-high when no such Gather exists.
Bool inputs are all false. An open dimension takes the size --dim gives
its symbol (--dim seq=64, repeatable), else 1.

Requires python3-numpy and python3-onnx (Debian), as scripts/gen_corpus.py.
"""

import argparse
import os
import re
import sys

import numpy as np
import onnx
from onnx import helper


def index_bound(graph, name, default):
    """The exclusive upper bound of valid indices for integer input name."""
    inits = {t.name: t for t in graph.initializer}
    bounds = []
    for node in graph.node:
        if node.op_type != "Gather" or len(node.input) < 2 or node.input[1] != name:
            continue
        data = inits.get(node.input[0])
        if data is None:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if axis < 0:
            axis += len(data.dims)
        bounds.append(data.dims[axis])
    return (min(bounds), True) if bounds else (default, False)


def np_dtype(elem_type):
    """The numpy dtype of an ONNX TensorProto element type."""
    if hasattr(helper, "tensor_dtype_to_np_dtype"):  # onnx ≥ 1.13
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    return np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])


def file_name(name):
    """<name>.npy with the characters berth's CLI replaces replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dim", action="append", default=[], metavar="SYMBOL=N",
                    help="the size of an open dimension (repeatable)")
    ap.add_argument("--int-high", type=int, default=1000,
                    help="bound for integer inputs that index no initializer (default 1000)")
    args = ap.parse_args()

    dims = {}
    for d in args.dim:
        sym, _, n = d.partition("=")
        if not sym or not n.isdigit():
            sys.exit(f"--dim {d!r}: want SYMBOL=N")
        dims[sym] = int(n)
    graph = onnx.load(args.model, load_external_data=False).graph
    init_names = {t.name for t in graph.initializer}
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.dir, exist_ok=True)
    for vi in graph.input:
        if vi.name in init_names:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            sys.exit(f"{args.model}: input {vi.name!r} is not a tensor")
        dtype = np_dtype(tt.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 1) for d in tt.shape.dim]
        if np.issubdtype(dtype, np.floating):
            a = rng.standard_normal(shape, dtype=np.float64).astype(dtype)
        elif np.issubdtype(dtype, np.integer):
            high, found = index_bound(graph, vi.name, args.int_high)
            if not found:
                print(f"make_inputs: {vi.name}: no Gather on an initializer uses it; integers in [0, {high})",
                      file=sys.stderr)
            a = rng.integers(0, high, size=shape).astype(dtype)
        elif dtype == np.bool_:
            a = np.zeros(shape, dtype=np.bool_)
        else:
            sys.exit(f"{args.model}: input {vi.name!r} has unsupported dtype {dtype}")
        path = os.path.join(args.dir, file_name(vi.name))
        np.save(path, np.ascontiguousarray(a))
        print(f"{vi.name}={path}")


if __name__ == "__main__":
    main()
