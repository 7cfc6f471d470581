#!/usr/bin/env python3
"""Time PyTorch on a CUDA GPU against berth on the same models.

Builds the corpus models of scripts/gen_corpus.py (random weights, fixed
seeds), exports each to ONNX at the batch asked for (1 by default), and
times PyTorch in fp32 (TF32 off): eager, eager under
torch.autocast("cuda", dtype=torch.bfloat16), one fp32 CUDA graph
captured from the model and replayed, and torch.compile with mode
"reduce-overhead" in fp32 and under bf16 autocast (--no-compile skips
it: each model compiles for a minute or so). Prints one JSON line per model;
berth's side is `berth bench MODEL --device cuda --json` on the exported
file, run by bench/cuda_vs_torch.sh in the same session.

    python3 bench/cuda_vs_torch.py OUTDIR [--only bert_base,gpt2_small,resnet50] [--batch N]

It also saves each model's inputs and PyTorch's fp32 outputs on the GPU
(OUTDIR/MODEL.io lists `NAME=PATH` for the inputs), so that the script can
check berth's outputs (`berth run --output-dir`) against them:

    python3 bench/cuda_vs_torch.py --compare OUTDIR MODEL RUNDIR
"""

import argparse
import inspect
import json
import os
import statistics
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import gen_corpus  # noqa: E402


def median_ms(fn, iters=200, warmup=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def compare(outdir, name, rundir):
    """Print one JSON line: rel L2 of berth's outputs against PyTorch's."""
    import numpy as np
    rec = {"model": name, "parity": {}}
    with open(os.path.join(outdir, name + ".outs")) as f:
        outs = f.read().split()
    for out in outs:
        want = np.load(os.path.join(outdir, f"{name}.out.{out}.npy")).astype(np.float64)
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in out)
        got = np.load(os.path.join(rundir, safe + ".npy")).astype(np.float64)
        rec["parity"][out] = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
    print(json.dumps(rec), flush=True)


def save_io(outdir, name, inputs, input_names, outputs, output_names):
    import numpy as np
    lines = []
    for n, t in zip(input_names, inputs):
        p = os.path.join(outdir, f"{name}.in.{n}.npy")
        np.save(p, t.cpu().numpy())
        lines.append(f"{n}={p}")
    with open(os.path.join(outdir, name + ".io"), "w") as f:
        f.write(" ".join(lines) + "\n")
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)
    elif isinstance(outputs, dict):
        outputs = tuple(outputs.values())
    for n, t in zip(output_names, outputs):
        np.save(os.path.join(outdir, f"{name}.out.{n}.npy"), t.float().cpu().numpy())
    with open(os.path.join(outdir, name + ".outs"), "w") as f:
        f.write(" ".join(output_names[:len(outputs)]) + "\n")


def batched(t, n):
    """Fresh inputs like t (batch 1) with n rows: the same kind of values."""
    shape = (n,) + tuple(t.shape[1:])
    if t.is_floating_point():
        return torch.randn(shape, dtype=t.dtype)
    return torch.randint(0, 1000, shape, dtype=t.dtype)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--compare":
        compare(*sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--only", default="bert_base,gpt2_small,resnet50")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA graph and torch.compile")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    for name in args.only.split(","):
        rec = {"model": name, "batch": args.batch, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
        try:
            torch.manual_seed(sum(ord(c) for c in name))
            model, inputs, input_names, output_names = gen_corpus.CORPUS[name]()
            model.eval()
            if args.batch != 1:
                inputs = tuple(batched(t, args.batch) for t in inputs)
            path = os.path.join(args.dir, name + ".onnx")
            kw = {}
            if "dynamo" in inspect.signature(torch.onnx.export).parameters:
                kw["dynamo"] = False
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, inputs, path, input_names=input_names, output_names=output_names,
                                  opset_version=gen_corpus.OPSET, do_constant_folding=True, **kw)
            model = model.cuda()
            x = tuple(t.cuda() for t in inputs)
            with torch.no_grad():
                try:
                    save_io(args.dir, name, inputs, input_names, model(*x), output_names)
                except Exception as e:  # parity is extra; timing goes on
                    rec["io_error"] = f"{type(e).__name__}: {e}"
                rec["eager_ms"] = median_ms(lambda: model(*x))

                def autocast():
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        return model(*x)
                rec["eager_bf16_ms"] = median_ms(autocast)
                if args.no_graph:
                    print(json.dumps(rec), flush=True)
                    continue
                static = tuple(t.clone() for t in x)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3):
                        model(*static)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    model(*static)
                rec["graph_ms"] = median_ms(g.replay)
                if args.no_compile:
                    print(json.dumps(rec), flush=True)
                    continue
                # torch.compile with mode "reduce-overhead": Inductor's
                # kernels replayed as CUDA graphs, fp32 and under bf16
                # autocast (each compiled on its first calls, which the
                # warm-up runs take).
                compiled = torch.compile(model, mode="reduce-overhead")
                rec["compile_ms"] = median_ms(lambda: compiled(*x))

                def compiled_bf16():
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        return compiled(*x)
                rec["compile_bf16_ms"] = median_ms(compiled_bf16)
        except Exception as e:  # report and go on with the next model
            rec["error"] = f"{type(e).__name__}: {e}"
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
