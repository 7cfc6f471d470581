#!/usr/bin/python3
"""Check the language-model fixtures against llama.cpp.

For every GGUF model of a manifest written by scripts/gen_llm_models.py
(testdata/llm/manifest.json unless --dir says otherwise), this

  1. dequantises every tensor with ggml's own dequantize_row_* (and
     ggml_fp16_to_fp32_row, ggml_bf16_to_fp32_row) and checks that the
     generator's numpy dequantisation, from which the reference logits
     were computed, gives the same float32 values bit for bit;
  2. loads the file with llama.cpp (llama_model_load_from_file), decodes
     the reference's prompt in one batch with logits for every position,
     then feeds the reference's greedy tokens one at a time, and compares
     llama.cpp's logits (llama_get_logits_ith) with the reference's:
     largest absolute difference, relative L2 distance ‖a−b‖/‖b‖, and the
     share of positions where the argmax is the same.

llama.cpp runs on the CPU with an F32 KV cache and flash attention off, so
that what differs is its arithmetic: activations rounded to F16 for F16
weights, to Q8_0/Q8_K blocks for quantised ones, and GELU looked up in an
F16 table.

Run from the repository root:

    npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
    /usr/bin/python3 scripts/check_llm_models.py [--dir testdata/llm] [--json]

It exits non-zero when a dequantisation differs or llama.cpp's logits are
further from the reference than --max-rel (default: 2e-3 for F32/F16/BF16
files, 5e-2 for quantised ones).
"""

import argparse
import ctypes
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_llm_models as gen  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBDIR = os.path.expanduser(
    "~/.cache/berth/llama/3.22.1/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64")

GGML_TYPE_F32 = 0


class Llama:
    """The few functions of llama.cpp's C API the check needs."""

    def __init__(self, libdir, threads):
        self.threads = threads
        flags = ctypes.RTLD_GLOBAL
        self.base = ctypes.CDLL(os.path.join(libdir, "libggml-base.so"), mode=flags)
        self.ggml = ctypes.CDLL(os.path.join(libdir, "libggml.v0.5.0.so"), mode=flags)
        L = ctypes.CDLL(os.path.join(libdir, "libllama.v0.5.0.so"), mode=flags)
        self.L = L
        LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
        self._quiet = LOG(lambda level, text, user: None)
        L.llama_log_set.argtypes = [LOG, ctypes.c_void_p]
        L.llama_log_set(self._quiet, None)
        self.ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        self.ggml.ggml_backend_load_all_from_path(libdir.encode())
        L.llama_backend_init()

        # struct llama_model_params (80 bytes) and llama_context_params
        # (160 bytes) of this build, as raw bytes; check_layouts compares
        # the defaults with the fields this script sets.
        class ModelParams(ctypes.Structure):
            _fields_ = [("raw", ctypes.c_uint8 * 80)]

        class ContextParams(ctypes.Structure):
            _fields_ = [("raw", ctypes.c_uint8 * 160)]

        class Batch(ctypes.Structure):
            _fields_ = [("n_tokens", ctypes.c_int32), ("token", ctypes.POINTER(ctypes.c_int32)),
                        ("embd", ctypes.c_void_p), ("pos", ctypes.POINTER(ctypes.c_int32)),
                        ("n_seq_id", ctypes.POINTER(ctypes.c_int32)),
                        ("seq_id", ctypes.POINTER(ctypes.POINTER(ctypes.c_int32))),
                        ("logits", ctypes.POINTER(ctypes.c_int8))]

        self.ModelParams, self.ContextParams, self.Batch = ModelParams, ContextParams, Batch
        vp = ctypes.c_void_p
        L.llama_model_default_params.restype = ModelParams
        L.llama_context_default_params.restype = ContextParams
        L.llama_model_load_from_file.restype = vp
        L.llama_model_load_from_file.argtypes = [ctypes.c_char_p, ModelParams]
        L.llama_model_free.argtypes = [vp]
        L.llama_init_from_model.restype = vp
        L.llama_init_from_model.argtypes = [vp, ContextParams]
        L.llama_free.argtypes = [vp]
        L.llama_model_get_vocab.restype = vp
        L.llama_model_get_vocab.argtypes = [vp]
        L.llama_vocab_n_tokens.restype = ctypes.c_int32
        L.llama_vocab_n_tokens.argtypes = [vp]
        L.llama_decode.restype = ctypes.c_int32
        L.llama_decode.argtypes = [vp, Batch]
        L.llama_get_logits_ith.restype = ctypes.POINTER(ctypes.c_float)
        L.llama_get_logits_ith.argtypes = [vp, ctypes.c_int32]
        for name in ["ggml_fp16_to_fp32_row", "ggml_bf16_to_fp32_row", "dequantize_row_q8_0",
                     "dequantize_row_q4_0", "dequantize_row_q4_K", "dequantize_row_q6_K"]:
            fn = getattr(self.base, name)
            fn.restype = None
            fn.argtypes = [vp, vp, ctypes.c_int64]
        self.check_layouts()

    def check_layouts(self):
        m = bytes(self.L.llama_model_default_params().raw)
        want = bytes(16) + struct.pack("<iiii", -1, 1, -1, 1)
        if m[:len(want)] != want:
            sys.exit("llama_model_params of this libllama is not the expected layout: " + m.hex())
        # n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max,
        # n_outputs_max_per_seq, n_threads, n_threads_batch, ctx_type,
        # rope_scaling_type, pooling_type, attention_type, flash_attn_type
        # at 0..52; type_k and type_v (GGML_TYPE_F16) at 104 and 108.
        c = bytes(self.L.llama_context_default_params().raw)
        head = struct.unpack_from("<7I2i5i", c, 0)
        if head[:4] != (512, 2048, 512, 1) or head[9:] != (0, -1, -1, -1, -1) or \
                struct.unpack_from("<ii", c, 104) != (1, 1):
            sys.exit("llama_context_params of this libllama is not the expected layout: " + c.hex())

    def ggml_dequantise(self, t, raw):
        n = raw.size // gen.BLOCK[t][1] * gen.BLOCK[t][0]
        src = np.ascontiguousarray(raw)
        if t == "f32":
            return src.view(np.float32).copy()
        y = np.empty(n, dtype=np.float32)
        fn = {"f16": self.base.ggml_fp16_to_fp32_row, "bf16": self.base.ggml_bf16_to_fp32_row}.get(t) \
            or getattr(self.base, "dequantize_row_" + t)
        fn(src.ctypes.data, y.ctypes.data, n)
        return y

    def logits(self, path, n_ctx, prompt, feed):
        """llama.cpp's logits for every prompt position, then for each token
        of feed given one at a time after it."""
        mp = self.L.llama_model_default_params()
        model = self.L.llama_model_load_from_file(path.encode(), mp)
        if not model:
            raise RuntimeError("llama.cpp could not load " + path)
        cp = self.L.llama_context_default_params()
        struct.pack_into("<III", cp.raw, 0, n_ctx, max(512, len(prompt)), max(512, len(prompt)))
        struct.pack_into("<ii", cp.raw, 28, self.threads, self.threads)
        struct.pack_into("<i", cp.raw, 52, 0)  # flash attention off
        struct.pack_into("<ii", cp.raw, 104, GGML_TYPE_F32, GGML_TYPE_F32)  # F32 KV cache
        ctx = self.L.llama_init_from_model(model, cp)
        if not ctx:
            self.L.llama_model_free(model)
            raise RuntimeError("llama.cpp could not make a context for " + path)
        n_vocab = self.L.llama_vocab_n_tokens(self.L.llama_model_get_vocab(model))
        try:
            prefill = self._decode(ctx, prompt, 0, n_vocab)
            decode = np.concatenate([self._decode(ctx, [t], len(prompt) + k, n_vocab)
                                     for k, t in enumerate(feed)]) if feed else np.zeros((0, n_vocab))
        finally:
            self.L.llama_free(ctx)
            self.L.llama_model_free(model)
        return prefill, decode

    def _decode(self, ctx, tokens, pos0, n_vocab):
        n = len(tokens)
        tok = (ctypes.c_int32 * n)(*tokens)
        pos = (ctypes.c_int32 * n)(*range(pos0, pos0 + n))
        nseq = (ctypes.c_int32 * n)(*([1] * n))
        zero = ctypes.c_int32(0)
        seq = (ctypes.POINTER(ctypes.c_int32) * n)(*([ctypes.pointer(zero)] * n))
        want = (ctypes.c_int8 * n)(*([1] * n))
        batch = self.Batch(n, tok, None, pos, nseq, seq, want)
        rc = self.L.llama_decode(ctx, batch)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        out = np.empty((n, n_vocab), dtype=np.float32)
        for i in range(n):
            p = self.L.llama_get_logits_ith(ctx, i)
            if not p:
                raise RuntimeError(f"no logits for token {i}")
            out[i] = np.ctypeslib.as_array(p, shape=(n_vocab,))
        return out


def compare(got, want):
    d = got.astype(np.float64) - want.astype(np.float64)
    return {"max_abs": float(np.abs(d).max()),
            "rel_l2": float(np.linalg.norm(d) / np.linalg.norm(want)),
            "argmax": float(np.mean(got.argmax(-1) == want.argmax(-1)))}


def check_model(llama, folder, e):
    path = os.path.join(folder, e["path"])
    r = gen.GGUFReader(path)
    bad = []
    for name, t, ne, _ in r.infos:
        raw = r.raw(name)
        mine = gen.dequantise(t, raw)
        theirs = llama.ggml_dequantise(t, raw)
        if mine.view(np.uint32).tobytes() != theirs.view(np.uint32).tobytes():
            bad.append(name)
    ref = e["reference"]
    load = lambda part: np.load(os.path.join(folder, ref[part]))  # noqa: E731
    prompt, greedy = [int(x) for x in load("tokens")], [int(x) for x in load("greedy")]
    prefill, decode = llama.logits(path, e["hparams"]["n_ctx"], prompt, greedy)
    out = {"name": e["name"], "ftype": e["ftype"], "tensors": len(r.infos), "dequant_mismatches": bad,
           "prefill": compare(prefill, load("prefill")), "decode": compare(decode, load("decode"))}
    # llama.cpp's own greedy choice at each step (the steps are fed the
    # reference's tokens, so one disagreement does not carry on).
    mine = [int(prefill[-1].argmax())] + [int(x) for x in decode[:-1].argmax(-1)]
    out["greedy_agreement"] = float(np.mean(np.array(mine) == np.array(greedy)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(REPO_ROOT, "testdata", "llm"),
                    help="the folder holding manifest.json")
    ap.add_argument("--libdir", default=LIBDIR, help="folder of libllama and libggml*")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-rel", type=float, help="largest rel L2 allowed (default by type)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    if not os.path.isdir(args.libdir):
        sys.exit(f"{args.libdir} is missing; install it with\n  npm install --ignore-scripts "
                 "--prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1")
    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    llama = Llama(args.libdir, args.threads)
    results, failed = [], False
    if not args.json:
        print(f"{'model':<20} {'dequant':>8} {'prefill max|d|':>14} {'rel L2':>9} {'argmax':>7}"
              f" {'decode max|d|':>14} {'rel L2':>9} {'argmax':>7} {'greedy':>7}")
    for e in manifest["models"]:
        if e["format"] != "gguf":
            continue
        r = check_model(llama, args.dir, e)
        limit = args.max_rel or (2e-3 if e["ftype"] in ("f32", "f16", "bf16") else 5e-2)
        r["ok"] = not r["dequant_mismatches"] and max(r["prefill"]["rel_l2"], r["decode"]["rel_l2"]) <= limit
        failed |= not r["ok"]
        results.append(r)
        if not args.json:
            p, d = r["prefill"], r["decode"]
            dq = "exact" if not r["dequant_mismatches"] else f"{len(r['dequant_mismatches'])} differ"
            print(f"{r['name']:<20} {dq:>8} {p['max_abs']:>14.3g} {p['rel_l2']:>9.2e} {p['argmax']:>7.3f}"
                  f" {d['max_abs']:>14.3g} {d['rel_l2']:>9.2e} {d['argmax']:>7.3f} {r['greedy_agreement']:>7.3f}"
                  + ("" if r["ok"] else "  FAIL"), flush=True)
    if args.json:
        print(json.dumps(results, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
