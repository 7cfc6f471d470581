"""llama.cpp's C API through ctypes, for the scripts that hold berth up to it.

The libraries are the prebuilt CPU build of the npm package
@node-llama-cpp/linux-x64 (libllama, libggml, libggml-base and one
libggml-cpu-* per instruction set, of which ggml loads the best this CPU
runs), installed once outside the repository with INSTALL. Nothing here
needs numpy: scripts/check_llm_models.py (logits and dequantisation
against the references) and bench/llama_prefill.py (prefill and decode
speed) both build on this module, and the benchmark's process should hold
no more than llama.cpp itself and the Python interpreter.
"""

import ctypes
import os
import struct
import sys

VERSION = "3.22.1"
LIBDIR = os.path.expanduser(
    f"~/.cache/berth/llama/{VERSION}/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64")
INSTALL = (f"npm install --ignore-scripts --prefix ~/.cache/berth/llama/{VERSION} "
           f"@node-llama-cpp/linux-x64@{VERSION}")

GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1


def missing(libdir):
    """The message for a libdir that is not there, or None."""
    if os.path.isdir(libdir):
        return None
    return f"{libdir} is missing; install llama.cpp's CPU libraries with\n  {INSTALL}"


class Llama:
    """The few functions of llama.cpp's C API that berth's scripts use."""

    def __init__(self, libdir=LIBDIR, threads=2):
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
        # the defaults with the fields the scripts set.
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
        L.llama_get_memory.restype = vp
        L.llama_get_memory.argtypes = [vp]
        L.llama_memory_clear.restype = None
        L.llama_memory_clear.argtypes = [vp, ctypes.c_bool]
        L.llama_synchronize.restype = None
        L.llama_synchronize.argtypes = [vp]
        L.llama_print_system_info.restype = ctypes.c_char_p
        L.llama_print_system_info.argtypes = []
        for name in ["ggml_fp16_to_fp32_row", "ggml_bf16_to_fp32_row", "dequantize_row_q8_0",
                     "dequantize_row_q4_0", "dequantize_row_q4_K", "dequantize_row_q6_K"]:
            fn = getattr(self.base, name)
            fn.restype = None
            fn.argtypes = [vp, vp, ctypes.c_int64]
        self.check_layouts()

    def check_layouts(self):
        # devices, tensor_buft_overrides (NULL), n_gpu_layers = -1,
        # split_mode = LAYER (1), load_mode = AUTO (-1), lazy_mode (1),
        # main_gpu = 0, tensor_split, progress_callback and its user data,
        # kv_overrides (NULL), then the bools vocab_only, check_tensors,
        # use_extra_bufts (true), no_host, no_alloc, load_mtp.
        m = bytes(self.L.llama_model_default_params().raw)
        want = (bytes(16) + struct.pack("<iiii", -1, 1, -1, 1) + bytes(8) + bytes(8 * 4) +
                bytes([0, 0, 1, 0, 0, 0]))
        if m[:len(want)] != want:
            sys.exit("llama_model_params of this libllama is not the expected layout: " + m.hex())
        # n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq, n_outputs_max,
        # n_outputs_max_per_seq, n_threads, n_threads_batch, ctx_type,
        # rope_scaling_type, pooling_type, attention_type, flash_attn_type
        # at 0..52; type_k and type_v (GGML_TYPE_F16) at 104 and 108.
        c = bytes(self.L.llama_context_default_params().raw)
        head = struct.unpack_from("<7I2i5i", c, 0)
        if head[:4] != (512, 2048, 512, 1) or head[9:] != (0, -1, -1, -1, -1) or \
                struct.unpack_from("<ii", c, 104) != (GGML_TYPE_F16, GGML_TYPE_F16):
            sys.exit("llama_context_params of this libllama is not the expected layout: " + c.hex())

    def system_info(self):
        """llama.cpp's one-line summary of the CPU backend it loaded."""
        return self.L.llama_print_system_info().decode(errors="replace").strip()

    def load_model(self, path, vocab_only=False, repack=True):
        """The model of a GGUF file, mapped as llama.cpp maps it by default
        (or only its vocabulary). repack=False keeps every weight in the
        mapped file (use_extra_bufts off, llama-bench's --no-repack):
        otherwise ggml copies the matrix weights it has a faster kernel
        for into a buffer of its own layout (on a CPU with AMX, the AMX
        buffer type; with AVX2/AVX-512, interleaved blocks)."""
        mp = self.L.llama_model_default_params()
        if vocab_only:
            mp.raw[72] = 1  # the first of the bools after kv_overrides
        if not repack:
            mp.raw[74] = 0  # use_extra_bufts
        model = self.L.llama_model_load_from_file(path.encode(), mp)
        if not model:
            raise RuntimeError("llama.cpp could not load " + path)
        return model

    def n_vocab(self, model):
        return self.L.llama_vocab_n_tokens(self.L.llama_model_get_vocab(model))

    def new_context(self, model, n_ctx, n_batch):
        """A context of n_ctx positions taking up to n_batch tokens in one
        ubatch, on self.threads threads, with an F32 KV cache and flash
        attention off."""
        cp = self.L.llama_context_default_params()
        n_batch = max(512, n_batch)
        struct.pack_into("<III", cp.raw, 0, n_ctx, n_batch, n_batch)
        struct.pack_into("<ii", cp.raw, 28, self.threads, self.threads)
        struct.pack_into("<i", cp.raw, 52, 0)  # flash attention off
        struct.pack_into("<ii", cp.raw, 104, GGML_TYPE_F32, GGML_TYPE_F32)  # F32 KV cache
        ctx = self.L.llama_init_from_model(model, cp)
        if not ctx:
            raise RuntimeError("llama.cpp could not make a context")
        return ctx

    def clear(self, ctx):
        """Empties the context's KV cache (its memory), data included."""
        self.L.llama_memory_clear(self.L.llama_get_memory(ctx), True)

    def decode(self, ctx, tokens, pos0, all_logits=True):
        """Decodes tokens at positions pos0, pos0+1, … of sequence 0 in one
        batch, asking for the logits of every token or of the last only."""
        n = len(tokens)
        tok = (ctypes.c_int32 * n)(*tokens)
        pos = (ctypes.c_int32 * n)(*range(pos0, pos0 + n))
        nseq = (ctypes.c_int32 * n)(*([1] * n))
        zero = ctypes.c_int32(0)
        seq = (ctypes.POINTER(ctypes.c_int32) * n)(*([ctypes.pointer(zero)] * n))
        want = (ctypes.c_int8 * n)(*([1] * n if all_logits else [0] * (n - 1) + [1]))
        rc = self.L.llama_decode(ctx, self.Batch(n, tok, None, pos, nseq, seq, want))
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        self.L.llama_synchronize(ctx)

    def logits_row(self, ctx, i):
        """The logits of the i-th token of the last batch (a float pointer)."""
        p = self.L.llama_get_logits_ith(ctx, i)
        if not p:
            raise RuntimeError(f"no logits for token {i}")
        return p

    def free(self, ctx=None, model=None):
        if ctx:
            self.L.llama_free(ctx)
        if model:
            self.L.llama_model_free(model)
