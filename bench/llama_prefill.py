#!/usr/bin/python3
"""llama.cpp's prefill and decode speed on a GGUF file, for bench/compare_llama.sh.

    llama_prefill.py ids     MODEL --n P --out IDS.npy
    llama_prefill.py prefill MODEL --tokens IDS.npy [--threads 2] [--reps 3] [--warmup 1] [--no-repack]
    llama_prefill.py decode  MODEL --tokens IDS.npy [--threads 2] [--steps 128] [--warmup 4] [--no-repack]
    llama_prefill.py generate MODEL --tokens IDS.npy [--threads 2] [--steps 128] [--warmup 1] [--no-repack]
    llama_prefill.py table   DIR

ids writes P token ids drawn with a fixed seed below the model's vocabulary
size, as an int64 .npy (what `berth bench --input tokens=IDS.npy` reads).

prefill loads the model as llama.cpp does by default (mapped, and the
matrix weights copied into the layout of a faster kernel where ggml has
one for this CPU: AMX tiles on a CPU with AMX; --no-repack keeps them in
the mapped file, as llama-bench's --no-repack does),
makes a context of P positions with P tokens per batch, an F32 KV cache
and flash attention off, and decodes the prompt in one llama_decode call
asking for the logits of the last token only: --warmup times untimed,
then --reps timed, emptying the KV cache (llama_memory_clear) before each.

decode decodes the prompt once (untimed), then --warmup tokens one at a
time (untimed) and --steps tokens one at a time (timed), each token at
the next position, as generation does.

generate is what bench/compare_llama.sh pairs with `berth generate`:
--warmup untimed prefills, one timed prefill, then --steps tokens one at
a time after it, in one process.

Both print one JSON object: the times in ms, tokens/s of their median,
and the process's peak resident set (VmHWM of /proc/self/status, MiB),
so that each measurement runs in a process of its own.

table reads the results bench/compare_llama.sh left in DIR and prints
the markdown table of one model.

It needs nothing but Python 3 and the libraries scripts/llamacpp.py loads
(no numpy: the process holds llama.cpp and the interpreter only).
"""

import argparse
import array
import ast
import json
import os
import random
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the repository
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
from llamacpp import LIBDIR, Llama, missing  # noqa: E402


def read_ids(path):
    """The int64 values of a one-dimensional little-endian .npy file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        sys.exit(f"{path} is not a .npy file")
    if data[6] == 1:
        n, start = int.from_bytes(data[8:10], "little"), 10
    else:
        n, start = int.from_bytes(data[8:12], "little"), 12
    header = ast.literal_eval(data[start:start + n].decode("latin1"))
    if header["descr"] != "<i8" or header["fortran_order"] or len(header["shape"]) != 1:
        sys.exit(f"{path}: want int64[n], have {header}")
    a = array.array("q")
    a.frombytes(data[start + n:start + n + 8 * header["shape"][0]])
    if sys.byteorder != "little":
        a.byteswap()
    return list(a)


def write_ids(path, ids):
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % len(ids)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    a = array.array("q", ids)
    if sys.byteorder != "little":
        a.byteswap()
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(a.tobytes())


def peak_rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def ms(t):
    return round(t * 1000, 3)


def cmd_ids(args):
    llama = Llama(args.libdir)
    model = llama.load_model(args.model, vocab_only=True)
    vocab = llama.n_vocab(model)
    llama.free(model=model)
    rng = random.Random(args.seed)
    write_ids(args.out, [rng.randrange(vocab) for _ in range(args.n)])


def cmd_prefill(args):
    ids = read_ids(args.tokens)
    llama = Llama(args.libdir, args.threads)
    t0 = time.perf_counter()
    model = llama.load_model(args.model, repack=not args.no_repack)
    ctx = llama.new_context(model, len(ids), len(ids))
    load = time.perf_counter() - t0
    times = []
    for k in range(args.warmup + args.reps):
        llama.clear(ctx)
        t0 = time.perf_counter()
        llama.decode(ctx, ids, 0, all_logits=False)
        t = time.perf_counter() - t0
        if k >= args.warmup:
            times.append(t)
    llama.free(ctx, model)
    med = statistics.median(times)
    print(json.dumps({"side": "llama.cpp", "mode": "prefill", "tokens": len(ids), "threads": args.threads,
                      "warmup": args.warmup, "times_ms": [ms(t) for t in times], "median_ms": ms(med),
                      "tokens_per_s": len(ids) / med, "repack": not args.no_repack, "load_ms": ms(load), "peak_rss_mb": peak_rss_mib(),
                      "system_info": llama.system_info()}))


def cmd_decode(args):
    ids = read_ids(args.tokens)
    llama = Llama(args.libdir, args.threads)
    model = llama.load_model(args.model, repack=not args.no_repack)
    n = len(ids) + args.warmup + args.steps
    ctx = llama.new_context(model, n, len(ids))
    llama.decode(ctx, ids, 0, all_logits=False)
    times = []
    for k in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        llama.decode(ctx, [ids[k % len(ids)]], len(ids) + k)
        t = time.perf_counter() - t0
        if k >= args.warmup:
            times.append(t)
    llama.free(ctx, model)
    print(json.dumps({"side": "llama.cpp", "mode": "decode", "prompt": len(ids), "steps": args.steps,
                      "threads": args.threads, "total_ms": ms(sum(times)),
                      "median_ms": ms(statistics.median(times)), "tokens_per_s": len(times) / sum(times),
                      "peak_rss_mb": peak_rss_mib()}))


def cmd_generate(args):
    """A prompt's prefill then steps of one token, in one process, as
    `berth generate` does them: --warmup untimed prefills (the cache
    emptied after each), one timed prefill, then --steps tokens one at a
    time, each at the next position."""
    ids = read_ids(args.tokens)
    llama = Llama(args.libdir, args.threads)
    model = llama.load_model(args.model, repack=not args.no_repack)
    ctx = llama.new_context(model, len(ids) + args.steps + 1, len(ids))
    for _ in range(args.warmup):
        llama.decode(ctx, ids, 0, all_logits=False)
        llama.clear(ctx)
    t0 = time.perf_counter()
    llama.decode(ctx, ids, 0, all_logits=False)
    prefill = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in range(args.steps):
        llama.decode(ctx, [ids[k % len(ids)]], len(ids) + k)
    decode = time.perf_counter() - t0
    llama.free(ctx, model)
    print(json.dumps({"side": "llama.cpp", "mode": "generate", "prompt_tokens": len(ids), "steps": args.steps,
                      "threads": args.threads, "warmup": args.warmup, "repack": not args.no_repack,
                      "prefill_ms": ms(prefill), "decode_ms": ms(decode),
                      "prefill_tok_s": len(ids) / prefill, "decode_tok_s": args.steps / decode if args.steps else 0,
                      "peak_rss_mb": peak_rss_mib(), "system_info": llama.system_info()}))


def cmd_table(args):
    """One markdown table block for the model whose results are in DIR:
    the pairs' llama_N.json and berth_N.json (each a generate run: prefill
    then decode), rss_*_N (GNU time) and load_N."""
    d = args.dir
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    P, pairs = meta["tokens"], meta["pairs"]

    def side(name):
        pre, dec, rss, allocs = [], [], [], []
        for i in range(1, pairs + 1):
            p = os.path.join(d, f"{name}_{i}.json")
            if not os.path.exists(p):
                continue
            with open(p) as f:
                r = json.load(f)
            pre.append(r["prefill_tok_s"])
            dec.append(r["decode_tok_s"])
            allocs.append(r.get("allocs_per_token"))
            with open(os.path.join(d, f"rss_{name}_{i}")) as f:
                rss.append(int(f.read().split()[0]) / 1024)
        return pre, dec, rss, allocs

    lpre, ldec, lrss, _ = side("llama")
    bpre, bdec, brss, allocs = side("berth")
    loads = []
    for i in range(1, pairs + 1):
        p = os.path.join(d, f"load_{i}")
        if os.path.exists(p):
            with open(p) as f:
                loads.append(f.read().strip())

    def f(xs, fmt=".1f"):
        return format(statistics.median(xs), fmt) if xs else "—"

    def each(xs, fmt=".1f"):
        return "[" + ", ".join(format(x, fmt) for x in xs) + "]"

    def ratio(b, a):
        return f"{statistics.median(b) / statistics.median(a):.3f}" if b and a else "—"

    repack = "" if meta.get("repack", True) else ", llama.cpp with --no-repack"
    print(f"#### {meta['model']} (P = {P}, D = {meta['steps']}, {meta['threads']} threads, {len(lpre)}/{len(bpre)} pairs{repack})")
    print()
    print("| | llama.cpp | berth | berth/llama.cpp |")
    print("|---|---:|---:|---:|")
    print(f"| prefill tok/s (median of pairs) | {f(lpre)} | {f(bpre)} | {ratio(bpre, lpre)} |")
    print(f"| decode tok/s (median of pairs) | {f(ldec)} | {f(bdec)} | {ratio(bdec, ldec)} |")
    rr = f"{max(brss) / max(lrss):.2f}" if brss and lrss else "—"
    print(f"| peak RSS MiB (largest of pairs) | {max(lrss) if lrss else 0:.0f} | {max(brss) if brss else 0:.0f} | {rr} |")
    print()
    print(f"Per pair: prefill tok/s llama.cpp {each(lpre)}, berth {each(bpre)}, ratio "
          f"{each([b / a for a, b in zip(lpre, bpre)], '.3f')}; decode tok/s llama.cpp {each(ldec)}, berth {each(bdec)}, ratio "
          f"{each([b / a for a, b in zip(ldec, bdec)], '.3f')}; berth allocations per token {allocs}; load before each pair "
          f"(1-min average, others' CPU share during llama.cpp, berth): {'; '.join(loads)}.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ids", help="write P random token ids")
    p.add_argument("model")
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    for name in ("prefill", "decode", "generate"):
        p = sub.add_parser(name)
        p.add_argument("model")
        p.add_argument("--tokens", required=True, help="the prompt, int64 .npy")
        p.add_argument("--threads", type=int, default=2)
        p.add_argument("--no-repack", action="store_true",
                       help="keep the weights in the mapped file (no AMX or interleaved copy)")
        if name == "prefill":
            p.add_argument("--reps", type=int, default=3, help="timed prefills")
            p.add_argument("--warmup", type=int, default=1, help="untimed prefills first")
        elif name == "decode":
            p.add_argument("--steps", type=int, default=128, help="timed tokens")
            p.add_argument("--warmup", type=int, default=4, help="untimed tokens first")
        else:
            p.add_argument("--steps", type=int, default=128, help="timed tokens after the prompt")
            p.add_argument("--warmup", type=int, default=1, help="untimed prefills first")
    for p in sub.choices.values():
        p.add_argument("--libdir", default=LIBDIR, help="folder of libllama and libggml*")
    sub.add_parser("table").add_argument("dir")
    args = ap.parse_args()
    if args.cmd != "table" and missing(args.libdir):
        sys.exit(missing(args.libdir))
    {"ids": cmd_ids, "prefill": cmd_prefill, "decode": cmd_decode, "generate": cmd_generate, "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
