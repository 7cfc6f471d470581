#!/usr/bin/python3
"""Generate language models with random weights, and their reference logits.

Regenerate the committed fixtures, from the repository root, with:

    /usr/bin/python3 scripts/gen_llm_models.py

and a model of TinyLlama's shape (about 1.1B parameters, never committed)
with:

    /usr/bin/python3 scripts/gen_llm_models.py --size 1b --out DIR [--types f16,q8_0,q4_0]

(--no-reference writes the same files without their float64 reference,
in seconds instead of minutes: for files that are only timed.)

Only Debian's python3-numpy and python3-torch are needed. The output is the
same, byte for byte, on every run: weights and prompts come from fixed
seeds, and the files are written by this script's own GGUF and safetensors
writers (from the GGUF specification and ggml's block layouts in
ggml-common.h; Debian has no python3-gguf).

What is written (testdata/llm/README.md describes every file):

  - GGUF files of three architectures with llama.cpp's metadata keys and
    tensor names: LLaMA (RMSNorm, rotary embeddings, grouped-query
    attention, SwiGLU), Qwen2 (the same with q/k/v biases, rotary
    embeddings in NeoX order, tied output) and GPT-2 (LayerNorm, learned
    positions, GELU, fused attn_qkv, tied output), in F32, F16, Q8_0,
    Q4_0 and Q4_K_M (Q4_K with Q6_K where llama.cpp's quantiser puts it),
    the types mixed as llama-quantize mixes them;
  - the LLaMA and Qwen2 models as Hugging Face folders (config.json and
    safetensors, one of them sharded), in F32, BF16 and F16;
  - for each model, the logits of every position of a fixed prompt and of
    a few greedy decode steps, computed in float64 from the weights exactly
    as the file stores them (dequantised with ggml's block arithmetic,
    float32 operation for operation);
  - manifest.json: every file's metadata, tensors (type, shape, offset,
    SHA-256 of the bytes and of their float32 dequantisation) and
    reference, which the Go tests of weights/gguf and weights/safetensors
    check the readers against.

Conventions. A GGUF LLaMA file holds Q and K weights as llama.cpp's
convert_hf_to_gguf.py writes them: the rows of each head permuted from
Hugging Face's order (first half, second half) to interleaved pairs, so
that rotary embeddings rotate adjacent pairs (x[2i], x[2i+1]) by
pos·base^(-2i/d) (ggml's "normal" RoPE). The safetensors folders keep
Hugging Face's order, where rotate_half pairs x[i] with x[i+d/2]. Qwen2 is
not permuted in either format: llama.cpp runs it with NeoX RoPE, which
pairs x[i] with x[i+d/2] like Hugging Face. GPT-2's GELU is the tanh
approximation (GPT-2's gelu_new, and ggml's ggml_gelu). The GGUF
reference (numpy) follows llama.cpp's conventions; the safetensors
reference (PyTorch) follows Hugging Face's modeling code; on the models
that have the same weights in both formats the script checks that the two
agree.
"""

import argparse
import hashlib
import json
import math
import os
import struct
import sys
import zlib

import numpy as np

from gguf_spec import (GGUF_ARRAY, GGUF_BOOL, GGUF_FLOAT32, GGUF_INT32, GGUF_STRING, GGUF_UINT32, SCALAR,
                       gguf_header, gpt2_byte_chars, pad)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = "scripts/gen_llm_models.py"

# ---- ggml types and their block layouts ------------------------------------

GGML_ID = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 8, "q4_K": 12, "q6_K": 14, "bf16": 30}
GGML_NAME = {v: k for k, v in GGML_ID.items()}
BLOCK = {"f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34),
         "q4_0": (32, 18), "q4_K": (256, 144), "q6_K": (256, 210)}

# llama_ftype, as general.file_type.
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15, "bf16": 32}


def nbytes(t, ne):
    blk, size = BLOCK[t]
    assert ne[0] % blk == 0, (t, ne)
    return ne[0] // blk * size * int(np.prod(ne[1:], dtype=np.int64))


def f16_bits(x):
    return np.asarray(x, dtype=np.float32).astype("<f2").view("<u2")


def f16_value(bits):
    return np.asarray(bits, dtype="<u2").view("<f2").astype(np.float32)


def roundf(x):
    """C's roundf (halves away from zero) of float32 values, exactly."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def bf16_bits(x):
    """float32 → bfloat16 bits, rounding to nearest even."""
    b = np.asarray(x, dtype="<f4").view("<u4").astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype("<u2")


# Quantisers. Q8_0 and Q4_0 are ggml's reference quantisers
# (quantize_row_q8_0_ref, quantize_row_q4_0_ref), float32 step for step;
# Q4_K and Q6_K are simpler than ggml's (no search for the best scales) but
# write the same block layouts. The reference logits never depend on how a
# block was chosen, only on its bytes.

def quant_q8_0(x):
    b = x.reshape(-1, 32).astype(np.float32)
    amax = np.abs(b).max(1)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.zeros_like(d)
    nz = d != 0
    inv[nz] = np.float32(1) / d[nz]
    q = roundf((b * inv[:, None]).astype(np.float32)).astype(np.int8)
    out = np.empty((len(b), 34), dtype=np.uint8)
    out[:, 0:2] = f16_bits(d).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quant_q4_0(x):
    b = x.reshape(-1, 32).astype(np.float32)
    idx = np.argmax(np.abs(b), axis=1)  # the first of equal magnitudes, as ggml
    mx = b[np.arange(len(b)), idx]
    d = (mx / np.float32(-8)).astype(np.float32)
    inv = np.zeros_like(d)
    nz = d != 0
    inv[nz] = np.float32(1) / d[nz]
    v = ((b * inv[:, None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v).astype(np.int64)).astype(np.uint8)
    out = np.empty((len(b), 18), dtype=np.uint8)
    out[:, 0:2] = f16_bits(d).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def quant_q4_K(x):
    b = x.reshape(-1, 8, 32).astype(np.float32)
    lo = np.minimum(b.min(2), 0)
    scale = ((b.max(2) - lo) / np.float32(15)).astype(np.float32)
    mins = -lo
    dbits = f16_bits(scale.max(1) / np.float32(63))
    mbits = f16_bits(mins.max(1) / np.float32(63))
    d, dmin = f16_value(dbits), f16_value(mbits)
    sc = np.where(d[:, None] > 0, np.clip(roundf(scale / np.where(d > 0, d, 1)[:, None]), 0, 63), 0).astype(np.uint8)
    mn = np.where(dmin[:, None] > 0, np.clip(roundf(mins / np.where(dmin > 0, dmin, 1)[:, None]), 0, 63), 0).astype(np.uint8)
    ed = (d[:, None] * sc.astype(np.float32)).astype(np.float32)
    em = (dmin[:, None] * mn.astype(np.float32)).astype(np.float32)
    q = np.where(ed[:, :, None] > 0,
                 np.clip(roundf((b + em[:, :, None]) / np.where(ed > 0, ed, 1)[:, :, None]), 0, 15), 0).astype(np.uint8)
    out = np.empty((len(b), 144), dtype=np.uint8)
    out[:, 0:2] = dbits.view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = mbits.view(np.uint8).reshape(-1, 2)
    s = out[:, 4:16]
    for j in range(4):
        s[:, j] = sc[:, j] | ((sc[:, j + 4] >> 4) << 6)
        s[:, j + 4] = mn[:, j] | ((mn[:, j + 4] >> 4) << 6)
        s[:, j + 8] = (sc[:, j + 4] & 0xF) | ((mn[:, j + 4] & 0xF) << 4)
        out[:, 16 + 32 * j:48 + 32 * j] = q[:, 2 * j] | (q[:, 2 * j + 1] << 4)
    return out.tobytes()


def quant_q6_K(x):
    b = x.reshape(-1, 16, 16).astype(np.float32)
    s = (np.abs(b).max(2) / np.float32(31)).astype(np.float32)
    dbits = f16_bits(s.max(1) / np.float32(127))
    d = f16_value(dbits)
    sc = np.where(d[:, None] > 0, np.clip(roundf(s / np.where(d > 0, d, 1)[:, None]), -128, 127), 0).astype(np.int8)
    e = (d[:, None] * sc.astype(np.float32)).astype(np.float32)
    q = np.where(e[:, :, None] != 0, np.clip(roundf(b / np.where(e != 0, e, 1)[:, :, None]), -32, 31), 0)
    q = (q + 32).astype(np.uint8).reshape(-1, 256)
    out = np.empty((len(b), 210), dtype=np.uint8)
    for n in range(2):
        q1, q2, q3, q4 = (q[:, 128 * n + 32 * k:128 * n + 32 * k + 32] for k in range(4))
        out[:, 64 * n:64 * n + 32] = (q1 & 0xF) | ((q3 & 0xF) << 4)
        out[:, 64 * n + 32:64 * n + 64] = (q2 & 0xF) | ((q4 & 0xF) << 4)
        out[:, 128 + 32 * n:160 + 32 * n] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = dbits.view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def quantise(t, x):
    """float32 values (a multiple of t's block) → t's bytes."""
    x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if t == "f32":
        return x.astype("<f4").tobytes()
    if t == "f16":
        return x.astype("<f2").tobytes()
    if t == "bf16":
        return bf16_bits(x).tobytes()
    return {"q8_0": quant_q8_0, "q4_0": quant_q4_0, "q4_K": quant_q4_K, "q6_K": quant_q6_K}[t](x)


def dequantise(t, data):
    """t's bytes → float32, as ggml's dequantize_row_* computes them (each
    product and sum rounded to float32 in the same order)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    f32 = np.float32
    if t == "f32":
        return raw.view("<f4").astype(np.float32)
    if t == "f16":
        return raw.view("<f2").astype(np.float32)
    if t == "bf16":
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    blk, size = BLOCK[t]
    b = raw.reshape(-1, size)
    if t == "q8_0":
        d = f16_value(b[:, 0:2].copy().view("<u2")[:, 0])
        q = b[:, 2:].view(np.int8).astype(f32)
        return (q * d[:, None]).astype(f32).reshape(-1)
    if t == "q4_0":
        d = f16_value(b[:, 0:2].copy().view("<u2")[:, 0])
        qs = b[:, 2:18]
        q = np.concatenate([(qs & 0xF), (qs >> 4)], axis=1).astype(np.int32) - 8
        return (q.astype(f32) * d[:, None]).astype(f32).reshape(-1)
    if t == "q4_K":
        d = f16_value(b[:, 0:2].copy().view("<u2")[:, 0])
        dmin = f16_value(b[:, 2:4].copy().view("<u2")[:, 0])
        s = b[:, 4:16]
        sc = np.empty((len(b), 8), dtype=f32)
        mn = np.empty((len(b), 8), dtype=f32)
        for j in range(8):
            if j < 4:
                sc[:, j], mn[:, j] = s[:, j] & 63, s[:, j + 4] & 63
            else:
                sc[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4)
                mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
        ds = (d[:, None] * sc).astype(f32)
        ms = (dmin[:, None] * mn).astype(f32)
        y = np.empty((len(b), 8, 32), dtype=f32)
        for j in range(4):
            qs = b[:, 16 + 32 * j:48 + 32 * j]
            y[:, 2 * j] = ((ds[:, 2 * j, None] * (qs & 0xF).astype(f32)).astype(f32) - ms[:, 2 * j, None]).astype(f32)
            y[:, 2 * j + 1] = ((ds[:, 2 * j + 1, None] * (qs >> 4).astype(f32)).astype(f32)
                               - ms[:, 2 * j + 1, None]).astype(f32)
        return y.reshape(-1)
    if t == "q6_K":
        d = f16_value(b[:, 208:210].copy().view("<u2")[:, 0])
        sc = b[:, 192:208].view(np.int8).astype(f32)
        y = np.empty((len(b), 256), dtype=f32)
        for n in range(2):
            ql = b[:, 64 * n:64 * n + 64]
            qh = b[:, 128 + 32 * n:160 + 32 * n]
            qs = [(ql[:, :32] & 0xF) | ((qh & 3) << 4),
                  (ql[:, 32:] & 0xF) | (((qh >> 2) & 3) << 4),
                  (ql[:, :32] >> 4) | (((qh >> 4) & 3) << 4),
                  (ql[:, 32:] >> 4) | (((qh >> 6) & 3) << 4)]
            for k in range(4):
                q = qs[k].astype(np.int32) - 32
                for half in range(2):  # 16 values share a scale
                    scale = (d * sc[:, 8 * n + 2 * k + half]).astype(f32)
                    cols = slice(16 * half, 16 * half + 16)
                    o = 128 * n + 32 * k + 16 * half
                    y[:, o:o + 16] = (scale[:, None] * q[:, cols].astype(f32)).astype(f32)
        return y.reshape(-1)
    raise ValueError(t)


# ---- GGUF, written and read from the specification --------------------------

KIND_NAME = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
             "string", "array", "uint64", "int64", "float64"]
ALIGNMENT = 32


def write_gguf(path, kvs, tensors):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type, ne, produce)],
    where produce() returns the tensor's bytes. The header is written first
    and the data one tensor at a time, so a large model never sits whole in
    memory. Returns the data section's offset and the tensors' offsets."""
    head, offsets = gguf_header(3, kvs, [(name, GGML_ID[t], ne, nbytes(t, ne)) for name, t, ne, _ in tensors],
                                ALIGNMENT)
    data_offset = len(head)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        for (name, t, ne, produce), o in zip(tensors, offsets):
            data = produce()
            assert len(data) == nbytes(t, ne), name
            assert f.tell() == data_offset + o
            f.write(data)
            f.write(bytes(pad(len(data), ALIGNMENT) - len(data)))
    return data_offset, offsets


class GGUFReader:
    """Just enough of GGUF to read back what write_gguf wrote."""

    def __init__(self, path):
        self.mm = np.memmap(path, dtype=np.uint8, mode="r")
        buf = self.mm
        self.pos = 0

        def take(n):
            b = bytes(buf[self.pos:self.pos + n])
            self.pos += n
            return b

        def unpack(fmt):
            return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]

        def string():
            return take(unpack("<Q")).decode("utf-8")

        def value(typ):
            if typ == GGUF_STRING:
                return string()
            if typ == GGUF_ARRAY:
                elem, n = unpack("<I"), unpack("<Q")
                return [value(elem) for _ in range(n)]
            return unpack(SCALAR[typ])

        assert take(4) == b"GGUF"
        self.version = unpack("<I")
        n_tensors, n_kv = unpack("<Q"), unpack("<Q")
        self.kv = {}
        for _ in range(n_kv):
            key = string()
            self.kv[key] = value(unpack("<I"))
        self.infos = []
        for _ in range(n_tensors):
            name = string()
            ne = [unpack("<Q") for _ in range(unpack("<I"))]
            t, off = unpack("<I"), unpack("<Q")
            self.infos.append((name, GGML_NAME[t], ne, off))
        self.data_offset = pad(self.pos, self.kv.get("general.alignment", ALIGNMENT))
        self.by_name = {i[0]: i for i in self.infos}

    def raw(self, name):
        _, t, ne, off = self.by_name[name]
        start = self.data_offset + off
        return self.mm[start:start + nbytes(t, ne)]

    def weight(self, name):
        """The tensor dequantised to float32, shaped as NumPy writes it
        (the reverse of ggml's ne)."""
        _, t, ne, _ = self.by_name[name]
        return dequantise(t, self.raw(name)).reshape(list(reversed(ne)))


# ---- safetensors, written and read from the specification -------------------

ST_DTYPE = {"f32": ("F32", "<f4"), "f16": ("F16", "<f2"), "bf16": ("BF16", "<u2")}


def safetensors_bytes(tensors):
    """tensors: [(name, dtype name, shape, bytes)] in this order."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (pad(len(h), 8) - len(h))
    return struct.pack("<Q", len(h)) + h + b"".join(d for *_, d in tensors)


def read_safetensors(path):
    """name → float32 array, from one file."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        data = raw[8 + n + a:8 + n + b]
        t = {"F32": "f32", "F16": "f16", "BF16": "bf16"}[e["dtype"]]
        out[name] = dequantise(t, data).reshape(e["shape"])
    return out


def read_checkpoint(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    out = {}
    for name in files:
        out.update(read_safetensors(os.path.join(folder, name)))
    return out


# ---- vocabularies ------------------------------------------------------------

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6

SPM_PIECES = ["▁t", "he", "▁a", "in", "er", "on", "▁the", "re", "at", "en", "▁s",
              "▁w", "or", "is", "▁o", "es", "▁c", "it", "an", "▁b", "ing", "ed",
              "▁f", "▁p", "ar", "▁m", "▁of", "al", "le", "▁an", "▁and", "▁to", "ou"]

BPE_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġ", "a"), ("i", "n"), ("Ġt", "he"), ("e", "r"),
              ("o", "n"), ("Ġ", "s"), ("r", "e"), ("a", "t"), ("e", "n"), ("Ġ", "w"),
              ("o", "r"), ("i", "s"), ("Ġ", "o"), ("e", "s"), ("Ġ", "c"), ("i", "t"),
              ("a", "n"), ("Ġ", "b"), ("in", "g"), ("e", "d"), ("Ġ", "f"), ("Ġ", "p"),
              ("a", "r"), ("Ġ", "m"), ("Ġo", "f"), ("a", "l"), ("l", "e"), ("Ġa", "n"),
              ("Ġan", "d"), ("Ġt", "o"), ("o", "u")]


def synthetic_pieces(n, prefix):
    """n distinct made-up pieces, for large vocabularies."""
    out, letters, k = [], "abcdefghijklmnopqrstuvwxyz", 1
    while len(out) < n:
        for i in range(26 ** k):
            w = "".join(letters[(i // 26 ** p) % 26] for p in reversed(range(k)))
            out.append(w)
            out.append(prefix + w)
        k += 1
    return out[:n]


def spm_vocab(size):
    """SentencePiece-style (tokenizer.ggml.model "llama"): <unk> <s> </s>,
    the 256 byte tokens, then pieces with falling scores."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL] + [TOKEN_BYTE] * 256
    need = size - len(tokens)
    pieces = SPM_PIECES[:need] if need <= len(SPM_PIECES) else \
        SPM_PIECES + [p for p in synthetic_pieces(need + len(SPM_PIECES), "▁") if p not in SPM_PIECES][:need - len(SPM_PIECES)]
    assert len(pieces) == need and len(set(pieces)) == need
    tokens += pieces
    types += [TOKEN_NORMAL] * need
    scores = [0.0] * 259 + [float(-i) for i in range(need)]
    return {"model": "llama", "pre": "default", "tokens": tokens, "scores": scores,
            "types": types, "bos": 1, "eos": 2, "unk": 0, "add_bos": True, "merges": None}


def bpe_vocab(size, specials, pre):
    """Byte-level BPE (tokenizer.ggml.model "gpt2"): the 256 byte characters,
    merges and their results, then the special tokens."""
    tokens = gpt2_byte_chars()
    need = size - 256 - len(specials)
    assert 0 <= need <= len(BPE_MERGES)
    merges = BPE_MERGES[:need]
    for a, b in merges:
        assert a in tokens and b in tokens and a + b not in tokens, (a, b)
        tokens.append(a + b)
    first_special = len(tokens)
    tokens += specials
    types = [TOKEN_NORMAL] * first_special + [TOKEN_CONTROL] * len(specials)
    return {"model": "gpt2", "pre": pre, "tokens": tokens, "scores": None, "types": types,
            "bos": first_special, "eos": first_special, "unk": None, "add_bos": False,
            "merges": [a + " " + b for a, b in merges]}


def tokenizer_kvs(v):
    kvs = [("tokenizer.ggml.model", GGUF_STRING, v["model"]),
           ("tokenizer.ggml.pre", GGUF_STRING, v["pre"]),
           ("tokenizer.ggml.tokens", (GGUF_ARRAY, GGUF_STRING), v["tokens"])]
    if v["scores"] is not None:
        kvs.append(("tokenizer.ggml.scores", (GGUF_ARRAY, GGUF_FLOAT32), v["scores"]))
    kvs.append(("tokenizer.ggml.token_type", (GGUF_ARRAY, GGUF_INT32), v["types"]))
    if v["merges"] is not None:
        kvs.append(("tokenizer.ggml.merges", (GGUF_ARRAY, GGUF_STRING), v["merges"]))
    kvs.append(("tokenizer.ggml.bos_token_id", GGUF_UINT32, v["bos"]))
    kvs.append(("tokenizer.ggml.eos_token_id", GGUF_UINT32, v["eos"]))
    if v["unk"] is not None:
        kvs.append(("tokenizer.ggml.unknown_token_id", GGUF_UINT32, v["unk"]))
    kvs.append(("tokenizer.ggml.add_bos_token", GGUF_BOOL, v["add_bos"]))
    kvs.append(("tokenizer.ggml.add_eos_token", GGUF_BOOL, False))
    return kvs


# ---- models --------------------------------------------------------------------

class Model:
    """A model's shape and its random weights. Weights are float32 in
    NumPy's [out, in] order with Hugging Face's row order, named as
    llama.cpp names them; each comes from its own seed, so any one can be
    made again without the others."""

    def __init__(self, name, arch, dim, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx,
                 tied, seed, rope_base=10000.0, eps=1e-5):
        self.name, self.arch = name, arch
        self.dim, self.n_layer, self.n_head, self.n_head_kv = dim, n_layer, n_head, n_head_kv
        self.n_ff, self.n_vocab, self.n_ctx, self.tied, self.seed = n_ff, n_vocab, n_ctx, tied, seed
        self.rope_base, self.eps = rope_base, eps
        self.head_dim = dim // n_head
        self.kv_dim = self.head_dim * n_head_kv
        if arch == "llama":
            self.vocab = spm_vocab(n_vocab)
        elif arch == "qwen2":
            self.vocab = bpe_vocab(n_vocab, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], "qwen2")
        else:
            self.vocab = bpe_vocab(n_vocab, ["<|endoftext|>"], "gpt-2")

    def hparams(self):
        return {"arch": self.arch, "n_embd": self.dim, "n_layer": self.n_layer,
                "n_head": self.n_head, "n_head_kv": self.n_head_kv, "head_dim": self.head_dim,
                "n_ff": self.n_ff, "n_vocab": self.n_vocab, "n_ctx": self.n_ctx,
                "rope_freq_base": self.rope_base if self.arch != "gpt2" else None,
                "norm_eps": self.eps, "tied_output": self.tied}

    def shapes(self):
        """[(name, numpy shape)] in the order llama.cpp's converter writes."""
        d, f, kv = self.dim, self.n_ff, self.kv_dim
        out = [("token_embd.weight", (self.n_vocab, d))]
        if self.arch == "gpt2":
            out.append(("position_embd.weight", (self.n_ctx, d)))
        for i in range(self.n_layer):
            p = f"blk.{i}."
            out.append((p + "attn_norm.weight", (d,)))
            if self.arch == "gpt2":
                out += [(p + "attn_norm.bias", (d,)),
                        (p + "attn_qkv.weight", (d + 2 * kv, d)), (p + "attn_qkv.bias", (d + 2 * kv,)),
                        (p + "attn_output.weight", (d, d)), (p + "attn_output.bias", (d,)),
                        (p + "ffn_norm.weight", (d,)), (p + "ffn_norm.bias", (d,)),
                        (p + "ffn_up.weight", (f, d)), (p + "ffn_up.bias", (f,)),
                        (p + "ffn_down.weight", (d, f)), (p + "ffn_down.bias", (d,))]
                continue
            out.append((p + "attn_q.weight", (d, d)))
            if self.arch == "qwen2":
                out.append((p + "attn_q.bias", (d,)))
            out.append((p + "attn_k.weight", (kv, d)))
            if self.arch == "qwen2":
                out.append((p + "attn_k.bias", (kv,)))
            out.append((p + "attn_v.weight", (kv, d)))
            if self.arch == "qwen2":
                out.append((p + "attn_v.bias", (kv,)))
            out += [(p + "attn_output.weight", (d, d)), (p + "ffn_norm.weight", (d,)),
                    (p + "ffn_gate.weight", (f, d)), (p + "ffn_up.weight", (f, d)),
                    (p + "ffn_down.weight", (d, f))]
        out.append(("output_norm.weight", (d,)))
        if self.arch == "gpt2":
            out.append(("output_norm.bias", (d,)))
        if not self.tied:
            out.append(("output.weight", (self.n_vocab, d)))
        return out

    def weight(self, name, shape):
        rng = np.random.default_rng([self.seed, zlib.crc32(name.encode())])
        x = rng.standard_normal(shape, dtype=np.float32)
        # Logits of a few units. With a tied output the token's own
        # embedding, still in the residual stream, would outscore every
        # other token and greedy decoding would repeat the prompt's last
        # token: the embeddings are small and the final norm's gain large.
        gain = np.float32(8 if self.tied else 1)
        embd_std = np.float32((0.3 if self.tied else 2.5) / math.sqrt(self.dim))
        if name == "output_norm.weight":
            return (gain * (np.float32(1) + np.float32(0.1) * x)).astype(np.float32)
        if name.endswith("norm.weight"):
            return (np.float32(1) + np.float32(0.1) * x).astype(np.float32)
        if name.endswith(".bias"):
            return (np.float32(0.05) * x).astype(np.float32)
        if name in ("token_embd.weight", "output.weight", "position_embd.weight"):
            return (x * embd_std).astype(np.float32)
        return (x / np.float32(math.sqrt(shape[1]))).astype(np.float32)


def permute_rows(w, n_head):
    """convert_hf_to_gguf.py's LlamaModel.permute: each head's rows go from
    Hugging Face's halves to interleaved pairs."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def ggml_type_of(ftype, name, shape, model):
    """The type llama-quantize (llama_tensor_get_type) gives a tensor of a
    file of this ftype, for the tensors these models have."""
    if len(shape) == 1:
        return "f32"
    if ftype in ("f32", "f16", "bf16"):
        return ftype
    if name == "position_embd.weight":
        return "f32"  # llama-quantize leaves positional embeddings alone
    ncols = shape[-1]
    is_output = name == "output.weight" or (model.tied and name == "token_embd.weight")
    if ftype == "q8_0":
        return "q8_0"
    if ftype == "q4_0":
        if is_output:
            return "q6_K" if ncols % 256 == 0 else "q8_0"
        return "q4_0"
    if ftype == "q4_k_m":
        assert ncols % 256 == 0, name
        if is_output:
            return "q6_K"
        layer = int(name.split(".")[1]) if name.startswith("blk.") else -1
        if name.endswith("attn_v.weight") or name.endswith("ffn_down.weight"):
            return "q6_K" if use_more_bits(layer, model.n_layer) else "q4_K"
        return "q4_K"
    raise ValueError(ftype)


def gguf_kvs(model, ftype):
    a = model.arch
    kvs = [("general.architecture", GGUF_STRING, a),
           ("general.name", GGUF_STRING, f"berth test {model.name} {ftype}"),
           ("general.file_type", GGUF_UINT32, FILE_TYPE[ftype])]
    if ftype not in ("f32", "f16", "bf16"):
        kvs.append(("general.quantization_version", GGUF_UINT32, 2))
    kvs += [(f"{a}.vocab_size", GGUF_UINT32, model.n_vocab),
            (f"{a}.context_length", GGUF_UINT32, model.n_ctx),
            (f"{a}.embedding_length", GGUF_UINT32, model.dim),
            (f"{a}.block_count", GGUF_UINT32, model.n_layer),
            (f"{a}.feed_forward_length", GGUF_UINT32, model.n_ff),
            (f"{a}.attention.head_count", GGUF_UINT32, model.n_head),
            (f"{a}.attention.head_count_kv", GGUF_UINT32, model.n_head_kv)]
    if a == "gpt2":
        kvs.append((f"{a}.attention.layer_norm_epsilon", GGUF_FLOAT32, model.eps))
    else:
        kvs += [(f"{a}.rope.dimension_count", GGUF_UINT32, model.head_dim),
                (f"{a}.rope.freq_base", GGUF_FLOAT32, model.rope_base),
                (f"{a}.attention.layer_norm_rms_epsilon", GGUF_FLOAT32, model.eps)]
    return kvs + tokenizer_kvs(model.vocab)


def gguf_tensors(model, ftype):
    """[(name, type, ne, produce)] of the model's GGUF file."""
    out = []
    for name, shape in model.shapes():
        t = ggml_type_of(ftype, name, shape, model)

        def produce(name=name, shape=shape, t=t):
            w = model.weight(name, shape)
            if model.arch == "llama" and name.endswith("attn_q.weight"):
                w = permute_rows(w, model.n_head)
            elif model.arch == "llama" and name.endswith("attn_k.weight"):
                w = permute_rows(w, model.n_head_kv)
            return quantise(t, w)
        out.append((name, t, list(reversed(shape)), produce))
    return out


HF_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
            "output.weight": "lm_head.weight"}
HF_LAYER = {"attn_norm.weight": "input_layernorm.weight", "ffn_norm.weight": "post_attention_layernorm.weight",
            "attn_q.weight": "self_attn.q_proj.weight", "attn_q.bias": "self_attn.q_proj.bias",
            "attn_k.weight": "self_attn.k_proj.weight", "attn_k.bias": "self_attn.k_proj.bias",
            "attn_v.weight": "self_attn.v_proj.weight", "attn_v.bias": "self_attn.v_proj.bias",
            "attn_output.weight": "self_attn.o_proj.weight", "ffn_gate.weight": "mlp.gate_proj.weight",
            "ffn_up.weight": "mlp.up_proj.weight", "ffn_down.weight": "mlp.down_proj.weight"}


def hf_name(name):
    if name in HF_NAMES:
        return HF_NAMES[name]
    _, i, rest = name.split(".", 2)
    return f"model.layers.{i}.{HF_LAYER[rest]}"


def hf_config(model, dtype):
    v = model.vocab
    c = {"architectures": ["LlamaForCausalLM" if model.arch == "llama" else "Qwen2ForCausalLM"],
         "model_type": model.arch, "hidden_size": model.dim, "intermediate_size": model.n_ff,
         "num_hidden_layers": model.n_layer, "num_attention_heads": model.n_head,
         "num_key_value_heads": model.n_head_kv, "head_dim": model.head_dim,
         "max_position_embeddings": model.n_ctx, "rms_norm_eps": model.eps,
         "rope_theta": model.rope_base, "vocab_size": model.n_vocab, "hidden_act": "silu",
         "tie_word_embeddings": model.tied, "bos_token_id": v["bos"], "eos_token_id": v["eos"],
         "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype]}
    if model.arch == "llama":
        c["attention_bias"] = False
    else:
        c["use_sliding_window"] = False
    return c


def write_hf(model, folder, dtype, shards):
    """A Hugging Face folder: config.json and the weights in `shards`
    safetensors files (an index when more than one)."""
    dt, _ = ST_DTYPE[dtype]
    tensors = sorted((hf_name(n), s, n) for n, s in model.shapes())
    entries = [(hn, dt, s, quantise(dtype, model.weight(n, s))) for hn, s, n in tensors]
    os.makedirs(folder, exist_ok=True)
    files = []
    if shards == 1:
        files.append(("model.safetensors", entries))
    else:
        per = -(-len(entries) // shards)
        for k in range(shards):
            files.append((f"model-{k + 1:05d}-of-{shards:05d}.safetensors", entries[k * per:(k + 1) * per]))
    for fname, es in files:
        write(os.path.join(folder, fname), safetensors_bytes(es))
    if shards > 1:
        index = {"metadata": {"total_size": sum(len(e[3]) for e in entries)},
                 "weight_map": {e[0]: fname for fname, es in files for e in es}}
        write(os.path.join(folder, "model.safetensors.index.json"), (json.dumps(index, indent=2) + "\n").encode())
    write(os.path.join(folder, "config.json"), (json.dumps(hf_config(model, dtype), indent=2) + "\n").encode())
    return [{"file": fname, "name": e[0], "dtype": e[1], "shape": list(e[2]), "sha256": sha(e[3])}
            for fname, es in files for e in es]


# ---- the reference forward passes ------------------------------------------------

def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def rope(x, base, neox, pos0=0):
    """x: [T, heads, d] at positions pos0…; position p rotates pair i by
    p·base^(-2i/d). ggml's normal mode pairs (x[2i], x[2i+1]); NeoX mode
    pairs (x[i], x[i+d/2])."""
    T, _, d = x.shape
    theta = np.arange(pos0, pos0 + T, dtype=np.float64)[:, None] * \
        base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    cos, sin = np.cos(theta)[:, None, :], np.sin(theta)[:, None, :]
    if neox:
        a, b = x[..., :d // 2], x[..., d // 2:]
        return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def attention(q, k, v, n_head, n_head_kv):
    """Causal attention of the last len(q) positions of k and v; query head
    h reads key/value head h // (n_head/n_head_kv)."""
    T, _, d = q.shape
    S = k.shape[0]
    rep = n_head // n_head_kv
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.einsum("thd,shd->hts", q, k) / math.sqrt(d)
    s = s + np.triu(np.full((T, S), -np.inf), S - T + 1)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", s, v).reshape(T, -1)


def forward_gguf(model, get, tokens, cache=None):
    """The logits of every position, in float64, as llama.cpp's graph for
    the architecture computes them; get(name) gives a weight dequantised
    from the file, in NumPy's [out, in] order. With a cache (a list, empty
    at first) the tokens follow those already in it, whose keys and values
    it keeps per layer."""
    m = model
    W = lambda n: get(n).astype(np.float64)  # noqa: E731
    T = len(tokens)
    p0 = cache[0][0].shape[0] if cache else 0
    x = W("token_embd.weight")[tokens]
    if m.arch == "gpt2":
        x = x + W("position_embd.weight")[p0:p0 + T]
    for i in range(m.n_layer):
        p = f"blk.{i}."
        if m.arch == "gpt2":
            h = layer_norm(x, W(p + "attn_norm.weight"), W(p + "attn_norm.bias"), m.eps)
            qkv = h @ W(p + "attn_qkv.weight").T + W(p + "attn_qkv.bias")
            q, k, v = qkv[:, :m.dim], qkv[:, m.dim:m.dim + m.kv_dim], qkv[:, m.dim + m.kv_dim:]
        else:
            h = rms_norm(x, W(p + "attn_norm.weight"), m.eps)
            q, k, v = (h @ W(p + f"attn_{n}.weight").T for n in "qkv")
            if m.arch == "qwen2":
                q, k, v = q + W(p + "attn_q.bias"), k + W(p + "attn_k.bias"), v + W(p + "attn_v.bias")
        q = q.reshape(T, m.n_head, m.head_dim)
        k = k.reshape(T, m.n_head_kv, m.head_dim)
        v = v.reshape(T, m.n_head_kv, m.head_dim)
        if m.arch != "gpt2":
            q, k = rope(q, m.rope_base, m.arch == "qwen2", p0), rope(k, m.rope_base, m.arch == "qwen2", p0)
        if cache is not None:
            if len(cache) <= i:
                cache.append((k[:0], v[:0]))
            k, v = np.concatenate([cache[i][0], k]), np.concatenate([cache[i][1], v])
            cache[i] = (k, v)
        o = attention(q, k, v, m.n_head, m.n_head_kv) @ W(p + "attn_output.weight").T
        if m.arch == "gpt2":
            o = o + W(p + "attn_output.bias")
        x = x + o
        if m.arch == "gpt2":
            h = layer_norm(x, W(p + "ffn_norm.weight"), W(p + "ffn_norm.bias"), m.eps)
            f = gelu_tanh(h @ W(p + "ffn_up.weight").T + W(p + "ffn_up.bias"))
            x = x + f @ W(p + "ffn_down.weight").T + W(p + "ffn_down.bias")
        else:
            h = rms_norm(x, W(p + "ffn_norm.weight"), m.eps)
            g = h @ W(p + "ffn_gate.weight").T
            f = g / (1 + np.exp(-g)) * (h @ W(p + "ffn_up.weight").T)
            x = x + f @ W(p + "ffn_down.weight").T
    if m.arch == "gpt2":
        x = layer_norm(x, W("output_norm.weight"), W("output_norm.bias"), m.eps)
    else:
        x = rms_norm(x, W("output_norm.weight"), m.eps)
    return x @ W("token_embd.weight" if m.tied else "output.weight").T


def forward_hf(model, weights, tokens):
    """The logits of every position, in float64, as Hugging Face's
    LlamaForCausalLM / Qwen2ForCausalLM compute them (rotate_half, repeat_kv)
    from a safetensors folder's weights."""
    import torch
    m = model
    W = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in weights.items()}

    def norm(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + m.eps))

    def rotate_half(x):
        x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def linear(x, name):
        y = x @ W[name + ".weight"].T
        return y + W[name + ".bias"] if name + ".bias" in W else y

    T = len(tokens)
    inv_freq = 1.0 / (m.rope_base ** (torch.arange(0, m.head_dim, 2, dtype=torch.float64) / m.head_dim))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None], emb.sin()[None]  # [1, T, d]
    mask = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), 1)
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    rep = m.n_head // m.n_head_kv
    for i in range(m.n_layer):
        p = f"model.layers.{i}."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = linear(h, p + "self_attn.q_proj").view(T, m.n_head, m.head_dim).transpose(0, 1)
        k = linear(h, p + "self_attn.k_proj").view(T, m.n_head_kv, m.head_dim).transpose(0, 1)
        v = linear(h, p + "self_attn.v_proj").view(T, m.n_head_kv, m.head_dim).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(rep, dim=0)
        v = v.repeat_interleave(rep, dim=0)
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(m.head_dim) + mask, dim=-1) @ v
        x = x + linear(a.transpose(0, 1).reshape(T, m.dim), p + "self_attn.o_proj")
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        g = torch.nn.functional.silu(linear(h, p + "mlp.gate_proj")) * linear(h, p + "mlp.up_proj")
        x = x + linear(g, p + "mlp.down_proj")
    x = norm(x, W["model.norm.weight"])
    head = W["model.embed_tokens.weight"] if m.tied else W["lm_head.weight"]
    return (x @ head.T).numpy()


def run_cached(forward, prompt, steps):
    """run_reference's results with a KV cache: one token a step."""
    cache = []
    prefill = forward(prompt, cache)
    greedy, decode = [int(np.argmax(prefill[-1]))], []
    for k in range(steps):
        decode.append(forward(greedy[-1:], cache)[-1])
        if k < steps - 1:
            greedy.append(int(np.argmax(decode[-1])))
    return prefill, np.array(decode), greedy


def run_reference(forward, prompt, steps):
    """Prefill logits [P, V], decode logits [steps, V] and the greedy
    continuation: greedy[0] is the argmax of the prompt's last logits,
    decode[k] the logits after greedy[k] is fed, greedy[k+1] its argmax.
    Each step runs the whole sequence again (the prefix's logits do not
    change under causal attention), so there is no cache to get wrong."""
    prefill = forward(prompt)
    greedy = [int(np.argmax(prefill[-1]))]
    for _ in range(steps - 1):
        greedy.append(int(np.argmax(forward(prompt + greedy)[-1])))
    full = forward(prompt + greedy)
    decode = full[len(prompt):]
    assert [int(np.argmax(r)) for r in decode[:-1]] == greedy[1:]
    return prefill, decode, greedy


def margin(logits):
    """The smallest gap between the top two logits over the rows."""
    s = np.sort(logits, axis=-1)
    return float((s[:, -1] - s[:, -2]).min())


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ---- output ----------------------------------------------------------------------

def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def save_npy(path, a):
    with open(path, "wb") as f:
        np.save(f, a, allow_pickle=False)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def write_manifest(path, entries):
    """manifest.json, one line per tensor and metadata key."""
    lines = {}

    def compact(x):
        key = f"@{len(lines)}@"
        lines[key] = json.dumps(x, ensure_ascii=False)
        return key
    models = [dict(e, metadata=[compact(k) for k in e.get("metadata", [])],
                   tensors=[compact(t) for t in e["tensors"]]) for e in entries]
    text = json.dumps({"source": SOURCE, "models": models}, indent=1, ensure_ascii=False)
    for key, line in lines.items():
        text = text.replace(json.dumps(key), line, 1)
    write(path, (text + "\n").encode())


def kv_manifest(kvs):
    out = []
    for key, typ, v in kvs:
        if isinstance(typ, tuple):
            out.append({"key": key, "kind": "array", "elem": KIND_NAME[typ[1]], "len": len(v)})
        else:
            if typ == GGUF_FLOAT32:
                v = float(np.float32(v))
            out.append({"key": key, "kind": KIND_NAME[typ], "value": v})
    return out


def save_reference(out, stem, prompt, prefill, decode, greedy):
    files = {}
    for part, a in (("tokens", np.asarray(prompt, dtype="<i4")), ("prefill", prefill.astype("<f4")),
                    ("decode", decode.astype("<f4")), ("greedy", np.asarray(greedy, dtype="<i4"))):
        files[part] = f"{stem}.{part}.npy"
        save_npy(os.path.join(out, files[part]), a)
    files.update({"prompt_len": len(prompt), "decode_steps": len(greedy), "greedy_tokens": greedy,
                  "prefill_min_top2_margin": margin(prefill), "decode_min_top2_margin": margin(decode)})
    return files


def make_gguf(model, ftype, out, stem, prompt, steps, log, reference=True):
    """The GGUF file and its manifest entry; with reference, the float64
    forward pass of its weights too (minutes for a large model): without,
    the entry has no reference and the tensors no dequantised hashes, for
    files that are only timed."""
    path = os.path.join(out, stem + ".gguf")
    kvs, tensors = gguf_kvs(model, ftype), gguf_tensors(model, ftype)
    data_offset, offsets = write_gguf(path, kvs, tensors)
    r = GGUFReader(path)
    assert [i[0] for i in r.infos] == [t[0] for t in tensors]
    assert r.data_offset == data_offset

    def entry(ref):
        """The manifest entry; the tensors' hashes with a reference."""
        tinfo = []
        for (name, t, ne, _), off in zip(tensors, offsets):
            raw = r.raw(name)
            info = {"name": name, "type": t, "ne": ne, "offset": off, "bytes": int(raw.size)}
            if ref is not None:
                info["sha256"] = sha(raw.tobytes())
                info["dequantised_sha256"] = sha(dequantise(t, raw).astype("<f4").tobytes())
            tinfo.append(info)
        return {"name": stem, "format": "gguf", "path": stem + ".gguf", "ftype": ftype,
                "hparams": model.hparams(), "version": 3, "alignment": ALIGNMENT,
                "data_offset": data_offset, "metadata": kv_manifest(kvs), "tensors": tinfo,
                "reference": ref}

    if not reference:
        log(f"{stem}.gguf: {os.path.getsize(path)} bytes, no reference")
        return entry(None), None
    large = model.n_vocab * model.dim > 1 << 24
    weights = {}

    def get(name):
        if name not in weights:
            w = r.weight(name)
            if large:  # dequantised again at each use
                return w
            weights[name] = w
        return weights[name]

    forward = lambda toks, cache=None: forward_gguf(model, get, toks, cache)  # noqa: E731
    if large:
        # Each run of a large model takes minutes here: one token a step.
        prefill, decode, greedy = run_cached(forward, prompt, steps)
    else:
        prefill, decode, greedy = run_reference(forward, prompt, steps)
        p2, d2, g2 = run_cached(forward, prompt, steps)
        assert g2 == greedy and rel_l2(p2, prefill) < 1e-12 and rel_l2(d2, decode) < 1e-12, stem
    ref = save_reference(out, stem, prompt, prefill, decode, greedy)
    log(f"{stem}.gguf: {os.path.getsize(path)} bytes, greedy {greedy}, "
        f"top-2 margin {ref['prefill_min_top2_margin']:.3g}")
    return entry(ref), prefill


def make_hf(model, dtype, shards, out, stem, prompt, steps, log, twin=None):
    """A Hugging Face folder. twin: (name, prefill logits, reference) of a
    GGUF file holding the same values (F32: llama.cpp's converter keeps
    norms and biases in F32, so an F16 file and an F16 folder differ), whose
    reference this folder shares once the two forward passes agree."""
    folder = os.path.join(out, stem)
    tinfo = write_hf(model, folder, dtype, shards)
    weights = read_checkpoint(folder)
    prefill, decode, greedy = run_reference(lambda toks: forward_hf(model, weights, toks), prompt, steps)
    if twin is not None:
        err = rel_l2(prefill, twin[1])
        assert err < 1e-10, f"{stem}: Hugging Face and llama.cpp conventions disagree ({err})"
        log(f"{stem}/: the same logits as {twin[0]}.gguf (rel L2 {err:.1e})")
        ref = dict(twin[2])
    else:
        ref = save_reference(out, stem, prompt, prefill, decode, greedy)
        log(f"{stem}/: greedy {greedy}")
    files = sorted({t["file"] for t in tinfo})
    return {"name": stem, "format": "safetensors", "path": stem, "dtype": dtype,
            "hparams": model.hparams(), "files": files + (["model.safetensors.index.json"] if shards > 1 else []),
            "config": hf_config(model, dtype), "tensors": tinfo, "reference": ref}


def prompt_for(model, n, seed):
    rng = np.random.default_rng(seed)
    v = model.vocab
    special = {i for i, t in enumerate(v["types"]) if t in (TOKEN_CONTROL, TOKEN_UNKNOWN)}
    ids = [int(i) for i in rng.integers(0, model.n_vocab, 4 * n) if int(i) not in special]
    return ([v["bos"]] if v["add_bos"] else []) + ids[:n - (1 if v["add_bos"] else 0)]


def small(out, log):
    P, N = 32, 8
    llama = Model("llama", "llama", 64, 2, 4, 2, 128, 288, 64, tied=False, seed=1001)
    llama256 = Model("llama256", "llama", 256, 1, 4, 2, 256, 288, 64, tied=False, seed=1002)
    qwen2 = Model("qwen2", "qwen2", 64, 2, 4, 2, 128, 288, 64, tied=True, seed=1003,
                  rope_base=1000000.0, eps=1e-6)
    gpt2 = Model("gpt2", "gpt2", 64, 2, 4, 4, 128, 288, 64, tied=True, seed=1004)
    entries, twins = [], {}
    for model, ftype in [(llama, "f32"), (llama, "f16"), (llama, "q8_0"), (llama, "q4_0"),
                         (llama256, "q4_k_m"), (qwen2, "f16"), (gpt2, "f16"), (gpt2, "q8_0")]:
        stem = f"{model.name}-{ftype}"
        entry, prefill = make_gguf(model, ftype, out, stem, prompt_for(model, P, model.seed), N, log)
        entries.append(entry)
        twins[stem] = (stem, prefill, entry["reference"])
    for model, dtype, shards, twin in [(llama, "f32", 1, "llama-f32"), (llama, "bf16", 2, None),
                                       (qwen2, "f16", 1, None)]:
        entries.append(make_hf(model, dtype, shards, out, f"{model.name}-hf-{dtype}",
                               prompt_for(model, P, model.seed), N, log, twins.get(twin)))
    # How far each quantised file's logits are from the F32 model's: the
    # error its weights alone bring, before any kernel's.
    base = {"llama": "llama-f32", "gpt2": "gpt2-f16", "qwen2": "qwen2-f16"}
    for e in entries:
        b = base.get(e["hparams"]["arch"] if e["hparams"]["n_embd"] == 64 else "")
        if b and e["name"] != b:
            mine = np.load(os.path.join(out, e["reference"]["prefill"]))
            theirs = np.load(os.path.join(out, twins[b][2]["prefill"]))
            e["reference"]["rel_l2_to_" + b] = rel_l2(mine, theirs)
            e["reference"]["argmax_agreement_with_" + b] = float(np.mean(mine.argmax(-1) == theirs.argmax(-1)))
    write_manifest(os.path.join(out, "manifest.json"), entries)


SIZES = {
    # TinyLlama 1.1B's shape.
    "1b": dict(dim=2048, n_layer=22, n_head=32, n_head_kv=4, n_ff=5632, n_vocab=32000, n_ctx=2048),
    # A ~110M LLaMA (the shape of llama2.c's stories110M).
    "110m": dict(dim=768, n_layer=12, n_head=12, n_head_kv=12, n_ff=2048, n_vocab=32000, n_ctx=1024),
}


def large(size, out, types, log, prompt_len, steps, reference=True):
    s = SIZES[size]
    model = Model(f"llama-{size}", "llama", s["dim"], s["n_layer"], s["n_head"], s["n_head_kv"],
                  s["n_ff"], s["n_vocab"], s["n_ctx"], tied=False, seed=2000)
    prompt = prompt_for(model, prompt_len, model.seed)
    entries = []
    for ftype in types:
        stem = f"llama-{size}-{ftype}"
        log(f"writing {stem}.gguf")
        entries.append(make_gguf(model, ftype, out, stem, prompt, steps, log, reference)[0])
    write_manifest(os.path.join(out, "manifest.json"), entries)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["small"] + sorted(SIZES), default="small",
                    help="small: the committed fixtures; 1b, 110m: one large LLaMA shape")
    ap.add_argument("--out", help="output folder (small: testdata/llm; required otherwise)")
    ap.add_argument("--types", default="f16,q8_0,q4_0", help="file types of a large model")
    ap.add_argument("--prompt-len", type=int, default=64, help="prompt tokens of a large model's reference")
    ap.add_argument("--steps", type=int, default=4, help="greedy steps of a large model's reference")
    ap.add_argument("--no-reference", action="store_true",
                    help="a large model's files alone, without the float64 reference (for timing)")
    args = ap.parse_args()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.size == "small":
        small(args.out or os.path.join(REPO_ROOT, "testdata", "llm"), log)
        return
    if not args.out:
        sys.exit("--out DIR is required with --size " + args.size)
    types = args.types.split(",")
    for t in types:
        if t not in FILE_TYPE:
            sys.exit(f"unknown type {t}; known: {', '.join(FILE_TYPE)}")
    large(args.size, args.out, types, log, args.prompt_len, args.steps, not args.no_reference)


if __name__ == "__main__":
    main()
