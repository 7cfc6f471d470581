#!/usr/bin/python3
"""Generate the weight-file fixtures: ggml block formats, GGUF and safetensors.

Regenerate them, from the repository root, with:

    npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
    /usr/bin/python3 scripts/gen_ggml_fixtures.py

(Debian's python3-numpy; --lib PATH names another libggml-base.so.) The
output is the same on every run: the data come from fixed seeds.

The reference is ggml itself: llama.cpp's prebuilt CPU library
libggml-base.so from the npm package @node-llama-cpp/linux-x64, loaded with
ctypes. It is only needed to regenerate; the Go tests read the committed
files.

testdata/ggml/
    types.json        ggml's own table: name, block size and type size of
                      every type id below GGML_TYPE_COUNT
    manifest.json     one case per file pair below
    <type>_quantised.bin / .f32
                      a fixed random float32 matrix (4 rows of 256, rows of
                      very different scales) quantised by ggml_quantize_chunk
                      (quantize_row_q8_K_ref for Q8_K), and ggml's own
                      dequantisation of it (dequantize_row_*,
                      ggml_fp16_to_fp32_row, ggml_bf16_to_fp32_row)
    <type>_random.bin / .f32
                      random block bytes (every scale a finite f16 of
                      moderate size, including subnormals; for F32, F16 and
                      BF16 every bit pattern, NaNs included) and ggml's
                      dequantisation of them
    The .f32 files are little-endian float32, compared bit for bit.

testdata/gguf/
    small.gguf        GGUF v3 written by this script's own writer (from the
                      GGUF specification): metadata of every scalar type,
                      string/float/int/bool arrays, general.alignment = 64,
                      and tensors of several ggml types. The script checks
                      that ggml's gguf reader accepts it with the same keys,
                      tensors and offsets, and that ggml's gguf writer,
                      given the same contents (less general.alignment,
                      which its writer does not follow), writes the same
                      bytes as this writer.
    nested.gguf       a GGUF v2 file with an array of arrays of strings
                      (ggml's API cannot write one; this writer can)
    manifest.json     the tensors of both: name, type, ne, offset, bytes,
                      SHA-256 of the bytes and of ggml's dequantisation

testdata/safetensors/
    single/model.safetensors
                      one tensor of each of F64, F32, F16, BF16, I64, I32,
                      I16, I8, U8, BOOL, a 0-d scalar and an empty tensor,
                      with __metadata__
    sharded/          two shards, model.safetensors.index.json, config.json
    manifest.json     every tensor: file, dtype, shape, SHA-256 of its bytes
"""

import argparse
import ctypes
import hashlib
import json
import os
import struct
import sys

import numpy as np

from gguf_spec import (GGUF_ARRAY, GGUF_BOOL, GGUF_FLOAT32, GGUF_FLOAT64, GGUF_INT8, GGUF_INT16,
                       GGUF_INT32, GGUF_INT64, GGUF_STRING, GGUF_UINT8, GGUF_UINT16, GGUF_UINT32,
                       GGUF_UINT64, SCALAR, gguf_header, pad)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "scripts/gen_ggml_fixtures.py"
PACKAGE = "@node-llama-cpp/linux-x64@3.22.1"
DEFAULT_LIB = os.path.expanduser(
    "~/.cache/berth/llama/3.22.1/node_modules/@node-llama-cpp/linux-x64/"
    "bins/linux-x64/libggml-base.so")

# ggml's enum ggml_type.
GGML = {
    "f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7,
    "q8_0": 8, "q4_K": 12, "q5_K": 13, "q6_K": 14, "q8_K": 15, "bf16": 30,
}
GGML_TYPE_COUNT = 43

# Where the f16 scales of each block lie (byte offsets), for random blocks.
HALF_SCALES = {
    "q4_0": [0], "q4_1": [0, 2], "q5_0": [0], "q5_1": [0, 2], "q8_0": [0],
    "q4_K": [0, 2], "q5_K": [0, 2], "q6_K": [208],
}


class Lib:
    """The few functions of libggml-base.so the fixtures need."""

    def __init__(self, path):
        L = ctypes.CDLL(path)
        self.L = L
        L.ggml_type_name.restype = ctypes.c_char_p
        L.ggml_type_name.argtypes = [ctypes.c_int]
        L.ggml_blck_size.restype = ctypes.c_int64
        L.ggml_blck_size.argtypes = [ctypes.c_int]
        L.ggml_type_size.restype = ctypes.c_size_t
        L.ggml_type_size.argtypes = [ctypes.c_int]
        L.ggml_row_size.restype = ctypes.c_size_t
        L.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
        L.ggml_quantize_chunk.restype = ctypes.c_size_t
        L.ggml_quantize_chunk.argtypes = [
            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
            ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
        L.quantize_row_q8_K_ref.restype = None
        L.quantize_row_q8_K_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        for name in ["ggml_fp16_to_fp32_row", "ggml_bf16_to_fp32_row"] + [
                "dequantize_row_" + t for t in GGML if t not in ("f32", "f16", "bf16")]:
            fn = getattr(L, name)
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def table(self):
        out = []
        for i in range(GGML_TYPE_COUNT):
            blck = self.L.ggml_blck_size(i)
            if blck == 0:
                continue  # a removed type id
            out.append({"id": i, "name": self.L.ggml_type_name(i).decode(),
                        "block_size": blck, "type_size": self.L.ggml_type_size(i)})
        return out

    def row_size(self, t, n):
        return self.L.ggml_row_size(GGML[t], n)

    def quantise(self, t, x):
        """x: float32 [rows, n] → the row-major quantised bytes."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        rows, n = x.shape
        dst = np.zeros(self.row_size(t, n) * rows, dtype=np.uint8)
        if t == "q8_K":
            self.L.quantize_row_q8_K_ref(x.ctypes.data, dst.ctypes.data, x.size)
            return dst.tobytes()
        got = self.L.ggml_quantize_chunk(GGML[t], x.ctypes.data, dst.ctypes.data,
                                         0, rows, n, None)
        assert got == dst.size, (t, got, dst.size)
        return dst.tobytes()

    def dequantise(self, t, data, n):
        """ggml's own conversion of n elements of type t to float32."""
        src = np.frombuffer(data, dtype=np.uint8).copy()
        assert src.size == self.row_size(t, n), (t, src.size, n)
        y = np.zeros(n, dtype=np.float32)
        if t == "f32":
            return src.view(np.float32).copy()
        fn = {"f16": self.L.ggml_fp16_to_fp32_row,
              "bf16": self.L.ggml_bf16_to_fp32_row}.get(t) or getattr(self.L, "dequantize_row_" + t)
        fn(src.ctypes.data, y.ctypes.data, n)
        return y


def source_matrix(rng):
    """4 rows of 256 of very different scales."""
    x = np.empty((4, 256), dtype=np.float32)
    x[0] = rng.standard_normal(256)
    x[1] = rng.standard_normal(256) * 1e-3  # small scales: f16 subnormals
    x[2] = rng.standard_normal(256) * 300
    x[2, ::37] *= 20  # outliers
    x[3] = rng.uniform(-1, 1, 256)
    x[3, :40] = 0  # whole zero blocks
    x[3, 40:48] = [1, -1, 0.5, -0.5, 2, -2, 0.25, 7]
    return x


def with_specials(x):
    """The matrix with float edge cases, for F32, F16 and BF16."""
    x = x.copy()
    x[3, 48:60] = [np.inf, -np.inf, -0.0, 65504, 65520, 1e-7, -6e-8, 3e-5,
                   1e38, 70000, np.nan, 1.00048828125]
    return x


def random_blocks(rng, t, lib, n):
    """n elements' worth of random blocks whose scales are finite."""
    size = lib.row_size(t, n)
    b = rng.integers(0, 256, size, dtype=np.uint8)
    if t in ("f32", "f16", "bf16"):
        return b.tobytes()
    tsize = lib.L.ggml_type_size(GGML[t])
    blocks = b.reshape(-1, tsize)
    if t == "q8_K":
        d = (rng.standard_normal(len(blocks)) * 0.05).astype(np.float32)
        blocks[:, 0:4] = d.view(np.uint8).reshape(-1, 4)
        return blocks.tobytes()
    for off in HALF_SCALES[t]:
        # sign, exponent 0..22 (subnormals up to 2^7), any mantissa
        h = (rng.integers(0, 2, len(blocks)) << 15) | (rng.integers(0, 23, len(blocks)) << 10) \
            | rng.integers(0, 1024, len(blocks))
        blocks[:, off:off + 2] = h.astype("<u2").view(np.uint8).reshape(-1, 2)
    return blocks.tobytes()


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def gen_ggml(lib, out):
    rng = np.random.default_rng(20240611)
    x = source_matrix(rng)
    cases = []
    for t in GGML:
        src = with_specials(x) if t in ("f32", "f16", "bf16") else x
        for kind, data in (("quantised", lib.quantise(t, src)),
                           ("random", random_blocks(rng, t, lib, x.size))):
            y = lib.dequantise(t, data, x.size)
            name = f"{t}_{kind}"
            write(os.path.join(out, name + ".bin"), data)
            write(os.path.join(out, name + ".f32"), y.astype("<f4").tobytes())
            cases.append({"name": name, "type": t, "type_id": GGML[t],
                          "elements": int(x.size), "data": name + ".bin",
                          "expected": name + ".f32"})
    manifest = {"source": SOURCE, "reference": PACKAGE + " libggml-base.so", "cases": cases}
    write(os.path.join(out, "manifest.json"), (json.dumps(manifest, indent=1) + "\n").encode())
    write(os.path.join(out, "types.json"), (json.dumps(
        {"source": SOURCE, "reference": PACKAGE + " libggml-base.so", "types": lib.table()},
        indent=1) + "\n").encode())


# ---- GGUF, written from the specification ----------------------------------

def gguf_bytes(version, kvs, tensors, alignment):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type, ne, data)].
    Tensor data follow each other in order, each padded to the alignment."""
    head, offsets = gguf_header(version, kvs, [(name, GGML[t], ne, len(data)) for name, t, ne, data in tensors],
                                alignment)
    out = bytearray(head)
    data_offset = len(out)
    for (_, _, _, data), o in zip(tensors, offsets):
        assert len(out) == data_offset + o
        out += data + bytes(pad(len(data), alignment) - len(data))
    return bytes(out), data_offset, offsets


def small_gguf_contents(lib, rng):
    tokens = ["<s>", "</s>", "hello", "wörld", "▁the", "", "日本語", "\u2581\u2581"]
    kvs = [
        ("general.architecture", GGUF_STRING, "llama"),
        ("general.name", GGUF_STRING, "berth fixture ✓"),
        ("general.alignment", GGUF_UINT32, 64),
        ("test.u8", GGUF_UINT8, 200),
        ("test.i8", GGUF_INT8, -100),
        ("test.u16", GGUF_UINT16, 60000),
        ("test.i16", GGUF_INT16, -30000),
        ("test.u32", GGUF_UINT32, 4000000000),
        ("test.i32", GGUF_INT32, -2000000000),
        ("test.f32", GGUF_FLOAT32, 0.5),
        ("test.bool", GGUF_BOOL, True),
        ("test.u64", GGUF_UINT64, 2**63 + 5),
        ("test.i64", GGUF_INT64, -2**62),
        ("test.f64", GGUF_FLOAT64, 3.141592653589793),
        ("test.empty_string", GGUF_STRING, ""),
        ("tokenizer.ggml.tokens", (GGUF_ARRAY, GGUF_STRING), tokens),
        ("tokenizer.ggml.scores", (GGUF_ARRAY, GGUF_FLOAT32),
         [float(np.float32(-i * 0.25)) for i in range(len(tokens))]),
        ("tokenizer.ggml.token_type", (GGUF_ARRAY, GGUF_INT32), [3, 3, 1, 1, 1, 2, 1, 6]),
        ("test.bools", (GGUF_ARRAY, GGUF_BOOL), [True, False, True]),
        ("test.u64s", (GGUF_ARRAY, GGUF_UINT64), [0, 1, 2**64 - 1]),
        ("test.f64s", (GGUF_ARRAY, GGUF_FLOAT64), [1.5, -2.25]),
        ("test.empty_u8s", (GGUF_ARRAY, GGUF_UINT8), []),
    ]
    specs = [
        ("token_embd.weight", "q8_0", [64, 3]),
        ("blk.0.attn_q.weight", "q4_K", [256, 2]),
        ("blk.0.ffn_down.weight", "q6_K", [256, 2]),
        ("output_norm.weight", "f32", [16]),
        ("blk.0.attn_k.weight", "f16", [32, 2]),
        ("blk.0.bias", "bf16", [8]),
        ("cube", "f32", [4, 3, 2]),
        ("blk.0.ffn_gate.weight", "q5_1", [32, 2, 1, 2]),
        ("blk.0.ffn_up.weight", "q5_K", [256, 3]),
        ("blk.0.attn_v.weight", "q4_0", [32, 4]),
    ]
    tensors = []
    for name, t, ne in specs:
        rows = int(np.prod(ne[1:])) if len(ne) > 1 else 1
        x = rng.standard_normal((rows, ne[0])).astype(np.float32)
        tensors.append((name, t, ne, lib.quantise(t, x)))
    return kvs, tensors


def ggml_writes_same(lib, kvs, tensors, want, tmp):
    """Have ggml's own gguf writer write the same contents; compare bytes."""
    L = lib.L

    class InitParams(ctypes.Structure):
        _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p),
                    ("no_alloc", ctypes.c_bool)]

    L.ggml_init.restype = ctypes.c_void_p
    L.ggml_init.argtypes = [InitParams]
    L.ggml_new_tensor.restype = ctypes.c_void_p
    L.ggml_new_tensor.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
    L.ggml_set_name.restype = ctypes.c_void_p
    L.ggml_set_name.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    L.ggml_get_data.restype = ctypes.c_void_p
    L.ggml_get_data.argtypes = [ctypes.c_void_p]
    L.ggml_nbytes.restype = ctypes.c_size_t
    L.ggml_nbytes.argtypes = [ctypes.c_void_p]
    L.ggml_free.argtypes = [ctypes.c_void_p]
    L.gguf_init_empty.restype = ctypes.c_void_p
    L.gguf_free.argtypes = [ctypes.c_void_p]
    L.gguf_add_tensor.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    L.gguf_write_to_file.restype = ctypes.c_bool
    L.gguf_write_to_file.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_bool]
    L.gguf_set_val_str.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    L.gguf_set_arr_str.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]
    L.gguf_set_arr_data.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    setters = {GGUF_UINT8: ("u8", ctypes.c_uint8), GGUF_INT8: ("i8", ctypes.c_int8),
               GGUF_UINT16: ("u16", ctypes.c_uint16), GGUF_INT16: ("i16", ctypes.c_int16),
               GGUF_UINT32: ("u32", ctypes.c_uint32), GGUF_INT32: ("i32", ctypes.c_int32),
               GGUF_FLOAT32: ("f32", ctypes.c_float), GGUF_BOOL: ("bool", ctypes.c_bool),
               GGUF_UINT64: ("u64", ctypes.c_uint64), GGUF_INT64: ("i64", ctypes.c_int64),
               GGUF_FLOAT64: ("f64", ctypes.c_double)}
    g = L.gguf_init_empty()
    for key, typ, v in kvs:
        k = key.encode()
        if typ == GGUF_STRING:
            L.gguf_set_val_str(g, k, v.encode())
        elif isinstance(typ, tuple) and typ[1] == GGUF_STRING:
            arr = (ctypes.c_char_p * len(v))(*[s.encode() for s in v])
            L.gguf_set_arr_str(g, k, arr, len(v))
        elif isinstance(typ, tuple):
            fmt = SCALAR[typ[1]]
            raw = b"".join(struct.pack(fmt, e) for e in v)
            buf = ctypes.create_string_buffer(raw, max(len(raw), 1))
            L.gguf_set_arr_data(g, k, typ[1], buf, len(v))
        else:
            suffix, ct = setters[typ]
            fn = getattr(L, "gguf_set_val_" + suffix)
            fn.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ct]
            fn(g, k, v)
    size = sum(len(d) for *_, d in tensors) + 1024 * len(tensors) + 4096
    ctx = L.ggml_init(InitParams(size, None, False))
    for name, t, ne, data in tensors:
        nes = (ctypes.c_int64 * len(ne))(*ne)
        tensor = L.ggml_new_tensor(ctx, GGML[t], len(ne), nes)
        L.ggml_set_name(tensor, name.encode())
        assert L.ggml_nbytes(tensor) == len(data), name
        ctypes.memmove(L.ggml_get_data(tensor), data, len(data))
        L.gguf_add_tensor(g, tensor)
    ok = L.gguf_write_to_file(g, tmp.encode(), False)
    L.gguf_free(g)
    L.ggml_free(ctx)
    assert ok, "ggml could not write " + tmp
    with open(tmp, "rb") as f:
        got = f.read()
    os.remove(tmp)
    if got != want:
        n = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
        sys.exit(f"ggml's gguf writer disagrees with this script's at byte {n} "
                 f"({len(got)} vs {len(want)} bytes)")


def ggml_reads_same(lib, path, kvs, tensors, data_offset, offsets):
    """ggml's gguf reader must accept the file and see the same layout."""
    L = lib.L

    class GGUFParams(ctypes.Structure):
        _fields_ = [("no_alloc", ctypes.c_bool), ("ctx", ctypes.c_void_p)]

    L.gguf_init_from_file.restype = ctypes.c_void_p
    L.gguf_init_from_file.argtypes = [ctypes.c_char_p, GGUFParams]
    for fn, res in (("gguf_get_n_tensors", ctypes.c_int64), ("gguf_get_n_kv", ctypes.c_int64),
                    ("gguf_get_data_offset", ctypes.c_size_t), ("gguf_get_alignment", ctypes.c_size_t)):
        getattr(L, fn).restype = res
        getattr(L, fn).argtypes = [ctypes.c_void_p]
    L.gguf_get_tensor_name.restype = ctypes.c_char_p
    L.gguf_get_tensor_name.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    L.gguf_get_tensor_offset.restype = ctypes.c_size_t
    L.gguf_get_tensor_offset.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    L.gguf_get_tensor_type.restype = ctypes.c_int
    L.gguf_get_tensor_type.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    L.gguf_get_key.restype = ctypes.c_char_p
    L.gguf_get_key.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    L.gguf_free.argtypes = [ctypes.c_void_p]
    g = L.gguf_init_from_file(path.encode(), GGUFParams(True, None))
    assert g, "ggml refuses " + path
    assert L.gguf_get_n_kv(g) == len(kvs)
    assert [L.gguf_get_key(g, i).decode() for i in range(len(kvs))] == [k for k, _, _ in kvs]
    assert L.gguf_get_n_tensors(g) == len(tensors)
    assert L.gguf_get_data_offset(g) == data_offset, (L.gguf_get_data_offset(g), data_offset)
    for i, (name, t, _, _) in enumerate(tensors):
        assert L.gguf_get_tensor_name(g, i).decode() == name
        assert L.gguf_get_tensor_type(g, i) == GGML[t]
        assert L.gguf_get_tensor_offset(g, i) == offsets[i]
    L.gguf_free(g)


def gen_gguf(lib, out):
    rng = np.random.default_rng(20240612)
    kvs, tensors = small_gguf_contents(lib, rng)
    small, data_offset, offsets = gguf_bytes(3, kvs, tensors, 64)
    path = os.path.join(out, "small.gguf")
    write(path, small)
    ggml_reads_same(lib, path, kvs, tensors, data_offset, offsets)
    # ggml's writer lays tensors out at its default alignment whatever
    # general.alignment says, so compare the writers without that key.
    plain = [kv for kv in kvs if kv[0] != "general.alignment"]
    ggml_writes_same(lib, plain, tensors, gguf_bytes(3, plain, tensors, 32)[0],
                     os.path.join(out, "ggml-written.tmp"))

    nested_kvs = [
        ("general.architecture", GGUF_STRING, "test"),
        ("test.nested", (GGUF_ARRAY, (GGUF_ARRAY, GGUF_STRING)), [["a", "b"], ["ç"], []]),
        ("test.nested_ints", (GGUF_ARRAY, (GGUF_ARRAY, GGUF_INT16)), [[1, -2], [3]]),
    ]
    nested_tensors = [("one", "f32", [2, 1], np.array([1.5, -2], dtype="<f4").tobytes())]
    nested, nested_data_offset, nested_offsets = gguf_bytes(2, nested_kvs, nested_tensors, 32)
    write(os.path.join(out, "nested.gguf"), nested)

    def describe(ts, offs, data_off):
        return [{"name": name, "type": t, "ne": ne, "offset": o, "bytes": len(data),
                 "sha256": sha(data),
                 "dequantised_sha256": sha(lib.dequantise(t, data, int(np.prod(ne))).astype("<f4").tobytes())}
                for (name, t, ne, data), o in zip(ts, offs)]

    manifest = {
        "source": SOURCE, "reference": PACKAGE + " libggml-base.so",
        "files": {
            "small.gguf": {"version": 3, "alignment": 64, "data_offset": data_offset,
                           "keys": [k for k, _, _ in kvs],
                           "tensors": describe(tensors, offsets, data_offset)},
            "nested.gguf": {"version": 2, "alignment": 32, "data_offset": nested_data_offset,
                            "keys": [k for k, _, _ in nested_kvs],
                            "tensors": describe(nested_tensors, nested_offsets, nested_data_offset)},
        },
    }
    write(os.path.join(out, "manifest.json"), (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode())


# ---- safetensors, written from the specification ---------------------------

def bf16_bits(x):
    """float32 → bfloat16 bits, rounding to nearest even."""
    b = np.asarray(x, dtype="<f4").view("<u4").astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype("<u2")


def safetensors_bytes(tensors, metadata):
    """tensors: [(name, dtype, shape, data)], laid out in this order."""
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    h += b" " * (pad(len(h), 8) - len(h))
    return struct.pack("<Q", len(h)) + h + b"".join(d for *_, d in tensors)


def gen_safetensors(out):
    rng = np.random.default_rng(20240613)
    single = [
        ("f64", "F64", [2, 3], np.arange(6, dtype="<f8").tobytes()),
        ("f32", "F32", [3, 4], (np.arange(12, dtype="<f4") * 0.5).tobytes()),
        ("f16", "F16", [5], np.array([1, -2, 0.5, 65504, 6e-8], dtype="<f2").tobytes()),
        ("bf16", "BF16", [2, 2], bf16_bits([1, -2, 3.14159, 1e30]).tobytes()),
        ("i64", "I64", [3], np.array([-1, 2**40, 7], dtype="<i8").tobytes()),
        ("i32", "I32", [2, 2], np.array([1, -2, 3, -4], dtype="<i4").tobytes()),
        ("i16", "I16", [4], np.array([1, -2, 300, -32768], dtype="<i2").tobytes()),
        ("i8", "I8", [5], np.array([1, -2, 3, -128, 127], dtype="i1").tobytes()),
        ("u8", "U8", [6], np.array([0, 1, 2, 253, 254, 255], dtype="u1").tobytes()),
        ("bool", "BOOL", [3], np.array([1, 0, 1], dtype="u1").tobytes()),
        ("scalar", "F32", [], np.array([42.5], dtype="<f4").tobytes()),
        ("empty", "F32", [0, 4], b""),
        ("weight.ünï", "F32", [2, 2, 2], rng.standard_normal(8).astype("<f4").tobytes()),
    ]
    meta = {"format": "pt", "note": "ünïcode"}
    write(os.path.join(out, "single", "model.safetensors"), safetensors_bytes(single, meta))

    shard1 = [
        ("model.embed_tokens.weight", "F32", [4, 8], rng.standard_normal(32).astype("<f4").tobytes()),
        ("model.layers.0.weight", "BF16", [8, 8], bf16_bits(rng.standard_normal(64)).tobytes()),
    ]
    shard2 = [
        ("lm_head.weight", "F16", [4, 8], rng.standard_normal(32).astype("<f2").tobytes()),
        ("model.norm.weight", "F32", [8], np.ones(8, dtype="<f4").tobytes()),
    ]
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    sharded = os.path.join(out, "sharded")
    write(os.path.join(sharded, names[0]), safetensors_bytes(shard1, {"format": "pt"}))
    write(os.path.join(sharded, names[1]), safetensors_bytes(shard2, {"format": "pt"}))
    weight_map = {n: names[0] for n, *_ in shard1}
    weight_map.update({n: names[1] for n, *_ in shard2})
    index = {"metadata": {"total_size": sum(len(d) for *_, d in shard1 + shard2)},
             "weight_map": dict(sorted(weight_map.items()))}
    write(os.path.join(sharded, "model.safetensors.index.json"), (json.dumps(index, indent=2) + "\n").encode())
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "vocab_size": 4,
              "num_hidden_layers": 1, "rms_norm_eps": 1e-5, "torch_dtype": "bfloat16"}
    write(os.path.join(sharded, "config.json"), (json.dumps(config, indent=2) + "\n").encode())

    def describe(file, ts):
        return [{"file": file, "name": n, "dtype": dt, "shape": s, "sha256": sha(d)} for n, dt, s, d in ts]

    manifest = {"source": SOURCE,
                "single": describe("single/model.safetensors", single),
                "sharded": describe("sharded/" + names[0], shard1) + describe("sharded/" + names[1], shard2)}
    write(os.path.join(out, "manifest.json"), (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=DEFAULT_LIB, help="path of libggml-base.so")
    args = ap.parse_args()
    if not os.path.exists(args.lib):
        sys.exit(f"{args.lib} is missing; install it with\n"
                 f"  npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 {PACKAGE}")
    lib = Lib(args.lib)
    testdata = os.path.join(REPO_ROOT, "testdata")
    gen_ggml(lib, os.path.join(testdata, "ggml"))
    gen_gguf(lib, os.path.join(testdata, "gguf"))
    gen_safetensors(os.path.join(testdata, "safetensors"))


if __name__ == "__main__":
    main()
