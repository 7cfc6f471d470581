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

With --berth BINARY it also runs `BINARY generate MODEL --tokens PROMPT
-n 0 --logits-out F.npy`, berth's prompt logits as a user gets them, and
compares them with the reference and with llama.cpp's.

Run from the repository root:

    npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
    /usr/bin/python3 scripts/check_llm_models.py [--dir testdata/llm] [--json]

It exits non-zero when a dequantisation differs or llama.cpp's logits are
further from the reference than --max-rel (default: 2e-3 for F32/F16/BF16
files, 5e-2 for quantised ones).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_llm_models as gen  # noqa: E402
from llamacpp import LIBDIR, Llama, missing  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ggml_dequantise(llama, t, raw):
    """A tensor's float32 values as ggml's own row functions give them."""
    n = raw.size // gen.BLOCK[t][1] * gen.BLOCK[t][0]
    src = np.ascontiguousarray(raw)
    if t == "f32":
        return src.view(np.float32).copy()
    y = np.empty(n, dtype=np.float32)
    fn = {"f16": llama.base.ggml_fp16_to_fp32_row, "bf16": llama.base.ggml_bf16_to_fp32_row}.get(t) \
        or getattr(llama.base, "dequantize_row_" + t)
    fn(src.ctypes.data, y.ctypes.data, n)
    return y


def llama_logits(llama, path, n_ctx, prompt, feed):
    """llama.cpp's logits for every prompt position, then for each token of
    feed given one at a time after it."""
    model = llama.load_model(path)
    ctx = None
    try:
        ctx = llama.new_context(model, n_ctx, len(prompt))
        n_vocab = llama.n_vocab(model)

        def decode(tokens, pos0):
            llama.decode(ctx, tokens, pos0)
            out = np.empty((len(tokens), n_vocab), dtype=np.float32)
            for i in range(len(tokens)):
                out[i] = np.ctypeslib.as_array(llama.logits_row(ctx, i), shape=(n_vocab,))
            return out

        prefill = decode(prompt, 0)
        decoded = np.concatenate([decode([t], len(prompt) + k) for k, t in enumerate(feed)]) \
            if feed else np.zeros((0, n_vocab))
    finally:
        llama.free(ctx, model)
    return prefill, decoded


def compare(got, want):
    d = got.astype(np.float64) - want.astype(np.float64)
    return {"max_abs": float(np.abs(d).max()),
            "rel_l2": float(np.linalg.norm(d) / np.linalg.norm(want)),
            "argmax": float(np.mean(got.argmax(-1) == want.argmax(-1)))}


def check_model(llama, folder, e, berth=None, threads=2):
    path = os.path.join(folder, e["path"])
    r = gen.GGUFReader(path)
    bad = []
    for name, t, ne, _ in r.infos:
        raw = r.raw(name)
        mine = gen.dequantise(t, raw)
        theirs = ggml_dequantise(llama, t, raw)
        if mine.view(np.uint32).tobytes() != theirs.view(np.uint32).tobytes():
            bad.append(name)
    ref = e["reference"]
    load = lambda part: np.load(os.path.join(folder, ref[part]))  # noqa: E731
    prompt, greedy = [int(x) for x in load("tokens")], [int(x) for x in load("greedy")]
    prefill, decode = llama_logits(llama, path, e["hparams"]["n_ctx"], prompt, greedy)
    out = {"name": e["name"], "ftype": e["ftype"], "tensors": len(r.infos), "dequant_mismatches": bad,
           "prefill": compare(prefill, load("prefill")), "decode": compare(decode, load("decode"))}
    # llama.cpp's own greedy choice at each step (the steps are fed the
    # reference's tokens, so one disagreement does not carry on).
    mine = [int(prefill[-1].argmax())] + [int(x) for x in decode[:-1].argmax(-1)]
    out["greedy_agreement"] = float(np.mean(np.array(mine) == np.array(greedy)))
    if berth:
        # berth's prompt logits through its command line, as a user runs
        # it: the same file, the reference's prompt ids.
        with tempfile.TemporaryDirectory() as tmp:
            npy = os.path.join(tmp, "logits.npy")
            subprocess.run([berth, "generate", path, "--tokens", ",".join(map(str, prompt)), "-n", "0",
                            "--logits-out", npy, "--threads", str(threads)], check=True, stdout=subprocess.DEVNULL)
            mine = np.load(npy)
        out["berth_vs_reference"] = compare(mine, load("prefill"))
        out["berth_vs_llama"] = compare(mine, prefill)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=os.path.join(REPO_ROOT, "testdata", "llm"),
                    help="the folder holding manifest.json")
    ap.add_argument("--libdir", default=LIBDIR, help="folder of libllama and libggml*")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-rel", type=float, help="largest rel L2 allowed (default by type)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--berth", help="a berth binary: compare its prompt logits (berth generate --logits-out) too")
    args = ap.parse_args()
    if missing(args.libdir):
        sys.exit(missing(args.libdir))
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
        r = check_model(llama, args.dir, e, args.berth, args.threads)
        limit = args.max_rel or (2e-3 if e["ftype"] in ("f32", "f16", "bf16") else 5e-2)
        r["ok"] = not r["dequant_mismatches"] and max(r["prefill"]["rel_l2"], r["decode"]["rel_l2"]) <= limit
        if args.berth:
            r["ok"] = r["ok"] and r["berth_vs_reference"]["rel_l2"] <= limit
        failed |= not r["ok"]
        results.append(r)
        if not args.json:
            p, d = r["prefill"], r["decode"]
            dq = "exact" if not r["dequant_mismatches"] else f"{len(r['dequant_mismatches'])} differ"
            print(f"{r['name']:<20} {dq:>8} {p['max_abs']:>14.3g} {p['rel_l2']:>9.2e} {p['argmax']:>7.3f}"
                  f" {d['max_abs']:>14.3g} {d['rel_l2']:>9.2e} {d['argmax']:>7.3f} {r['greedy_agreement']:>7.3f}"
                  + (f"  berth: rel L2 {r['berth_vs_reference']['rel_l2']:.2e} to the reference (argmax"
                     f" {r['berth_vs_reference']['argmax']:.3f}), {r['berth_vs_llama']['rel_l2']:.2e} to llama.cpp"
                     f" (argmax {r['berth_vs_llama']['argmax']:.3f})" if args.berth else "")
                  + ("" if r["ok"] else "  FAIL"), flush=True)
    if args.json:
        print(json.dumps(results, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
