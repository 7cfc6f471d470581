#!/usr/bin/python3
"""Generate the fixtures of backend/cpu/quant: ggml's own products.

Regenerate them, from the repository root, with:

    npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
    /usr/bin/python3 scripts/gen_quant_fixtures.py

(Debian's python3-numpy.) The output is the same on every run: the data
come from fixed seeds.

The reference is ggml's CPU backend as llama.cpp runs it on an AVX2
machine: libggml-cpu-haswell.so from the npm package
@node-llama-cpp/linux-x64, loaded with ctypes. For each weight type the
script takes ggml's type traits (ggml_get_type_traits_cpu): from_float of
the type's vec_dot_type quantises the activations (quantize_row_q8_0 and
quantize_row_q8_1 in their AVX2 form, quantize_row_q8_K), and vec_dot
multiplies one weight row by one activation row.

testdata/ggml/vecdot/
    manifest.json   m, k, n and one case per weight type
    x.f32           the activations, m rows of k float32 of different
                    scales, with zero blocks, outliers and values whose
                    quantisation is a tie (x·127/max|x| = i + 0.5)
    <act>.act       ggml's quantisation of x as <act> (q8_0, q8_1, q8_K,
                    f16, bf16), m rows
    <type>.w        n rows of k weights quantised by ggml_quantize_chunk
    <type>.y        ggml's vec_dot of every activation row by every
                    weight row: m×n float32, row-major
"""

import argparse
import ctypes
import json
import os

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "scripts/gen_quant_fixtures.py"
PACKAGE = "@node-llama-cpp/linux-x64@3.22.1"
LIBDIR = os.path.expanduser(
    "~/.cache/berth/llama/3.22.1/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64")

GGML = {"f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "q8_1": 9,
        "q4_K": 12, "q5_K": 13, "q6_K": 14, "q8_K": 15, "bf16": 30}
NAMES = {v: k for k, v in GGML.items()}
WEIGHTS = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_K", "q5_K", "q6_K", "f16", "bf16"]
M, K, N = 3, 512, 5


class Traits(ctypes.Structure):
    _fields_ = [("from_float", ctypes.c_void_p), ("vec_dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_int)


class GGML_CPU:
    def __init__(self, libdir):
        self.base = ctypes.CDLL(os.path.join(libdir, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        self.cpu = ctypes.CDLL(os.path.join(libdir, "libggml-cpu-haswell.so"), mode=ctypes.RTLD_GLOBAL)
        self.cpu.ggml_cpu_init.restype = None
        self.cpu.ggml_cpu_init()
        self.cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(Traits)
        self.cpu.ggml_get_type_traits_cpu.argtypes = [ctypes.c_int]
        self.base.ggml_row_size.restype = ctypes.c_size_t
        self.base.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        self.base.ggml_quantize_chunk.restype = ctypes.c_size_t
        self.base.ggml_quantize_chunk.argtypes = [
            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]

    def traits(self, t):
        return self.cpu.ggml_get_type_traits_cpu(GGML[t]).contents

    def row_size(self, t, n):
        return self.base.ggml_row_size(GGML[t], n)

    def quantise_weights(self, t, w):
        w = np.ascontiguousarray(w, dtype=np.float32)
        rows, n = w.shape
        dst = np.zeros(self.row_size(t, n) * rows, dtype=np.uint8)
        got = self.base.ggml_quantize_chunk(GGML[t], w.ctypes.data, dst.ctypes.data, 0, rows, n, None)
        assert got == dst.size, (t, got, dst.size)
        return dst

    def from_float(self, t, x):
        """ggml's CPU quantisation of the rows of x as type t."""
        rs = self.row_size(t, x.shape[1])
        dst = np.zeros(rs * x.shape[0], dtype=np.uint8)
        fn = FROM_FLOAT(self.traits(t).from_float)
        for i in range(x.shape[0]):
            row = np.ascontiguousarray(x[i], dtype=np.float32)
            fn(row.ctypes.data, dst.ctypes.data + i * rs, x.shape[1])
        return dst

    def vec_dot(self, t, w, act, k):
        fn = VEC_DOT(self.traits(t).vec_dot)
        wrs = self.row_size(t, k)
        ars = self.row_size(NAMES[self.traits(t).vec_dot_type], k)
        m, n = len(act) // ars, len(w) // wrs
        y = np.zeros((m, n), dtype=np.float32)
        s = ctypes.c_float()
        for i in range(m):
            for j in range(n):
                fn(k, ctypes.byref(s), 0, w.ctypes.data + j * wrs, 0, act.ctypes.data + i * ars, 0, 1)
                y[i, j] = s.value
        return y


def activations(rng):
    x = np.empty((M, K), dtype=np.float32)
    x[0] = rng.standard_normal(K)
    x[1] = rng.standard_normal(K) * 1e-3
    x[1, 300] = 0.5  # an outlier
    x[2] = rng.uniform(-1, 1, K) * 40
    x[2, 256:288] = 0  # a block of zeros
    # Ties: with max|x| = 127 in its block of 32 (and of 256), x·127/max|x|
    # (and x·(−127/max)) is x itself.
    x[2, 64:96] = 0.25
    x[2, 64:76] = [-127, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 3.5, -3.5, 0.75, 1]
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libdir", default=LIBDIR)
    args = ap.parse_args()
    g = GGML_CPU(args.libdir)
    rng = np.random.default_rng(20250611)
    out = os.path.join(REPO_ROOT, "testdata", "ggml", "vecdot")
    os.makedirs(out, exist_ok=True)

    x = activations(rng)
    x.astype("<f4").tofile(os.path.join(out, "x.f32"))
    acts = {}
    cases = []
    for t in WEIGHTS:
        w = rng.standard_normal((N, K)).astype(np.float32) * np.array([[1], [0.01], [3], [1], [0.2]], dtype=np.float32)
        wq = g.quantise_weights(t, w)
        act_t = NAMES[g.traits(t).vec_dot_type]
        if act_t not in acts:
            acts[act_t] = g.from_float(act_t, x)
            acts[act_t].tofile(os.path.join(out, act_t + ".act"))
        y = g.vec_dot(t, wq, acts[act_t], K)
        wq.tofile(os.path.join(out, t + ".w"))
        y.astype("<f4").tofile(os.path.join(out, t + ".y"))
        cases.append({"type": t, "weights": t + ".w", "activations": act_t + ".act",
                      "activation_type": act_t, "y": t + ".y"})
    manifest = {"source": SOURCE, "reference": PACKAGE + " libggml-cpu-haswell.so",
                "m": M, "k": K, "n": N, "x": "x.f32", "cases": cases}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
