#!/usr/bin/python3
"""Decode speed of a LLaMA GGUF file (F16 or F32) in PyTorch, as a
reference for berth generate --device cuda.

    python3 bench/llm_torch.py MODEL.gguf [--steps 256] [--ctx 1024]

The weights are the file's, as f16 on the GPU; each step feeds one token
at the next position over a static cache of keys and values (gpt-fast's
scheme), compiled with torch.compile(mode="reduce-overhead") so that a
step replays one CUDA graph. The rotary embedding rotates adjacent pairs,
as ggml does with a GGUF LLaMA's permuted Q and K rows. It prints the
decode speed, the weight bytes a step reads and the bound they set at
4.8 TB/s.
"""

import argparse
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def read_gguf(path):
    """The metadata and the f16/f32 tensors of a GGUF file (memory-mapped)."""
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from(fmt, buf, off)[0]
        off += struct.calcsize(fmt)
        return v

    def string():
        nonlocal off
        n = take("<Q")
        s = bytes(buf[off:off + n]).decode()
        off += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [value(et) for _ in range(n)]
        return take(SCALARS[t])

    if bytes(buf[:4]) != b"GGUF":
        sys.exit(f"{path}: not a GGUF file")
    off = 4
    take("<I")
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        k = string()
        meta[k] = value(take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        infos.append((name, dims, take("<I"), take("<Q")))
    align = meta.get("general.alignment", 32)
    base = (off + align - 1) // align * align
    tensors = {}
    for name, dims, typ, o in infos:
        n = int(np.prod(dims))
        if typ == 0:
            a = np.frombuffer(buf, dtype=np.float32, count=n, offset=base + o)
        elif typ == 1:
            a = np.frombuffer(buf, dtype=np.float16, count=n, offset=base + o)
        else:
            sys.exit(f"{name}: ggml type {typ}; this reference takes F16 or F32 files")
        tensors[name] = a.reshape(list(reversed(dims)))
    return meta, tensors


def attention(q, k, v, mask):
    """Grouped-query attention of q [1, H, 1, d] over k, v [1, KV, ctx, d]."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    g = q.shape[1] // k.shape[1]  # PyTorch before 2.0, for --device cpu
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    return s.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class Decoder(torch.nn.Module):
    def __init__(self, meta, t, ctx, dev="cuda"):
        super().__init__()
        dt = torch.float16 if dev == "cuda" else torch.float32
        self.dim = meta["llama.embedding_length"]
        self.layers = meta["llama.block_count"]
        self.heads = meta["llama.attention.head_count"]
        self.kv = meta.get("llama.attention.head_count_kv", self.heads)
        self.hd = self.dim // self.heads
        self.eps = meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5)
        base = meta.get("llama.rope.freq_base", 10000.0)
        w = lambda name: torch.from_numpy(np.array(t[name])).to(dev, dt)
        self.emb = w("token_embd.weight")
        self.out = w("output.weight") if "output.weight" in t else self.emb
        self.out_norm = w("output_norm.weight")
        self.blk = []
        for l in range(self.layers):
            p = f"blk.{l}."
            self.blk.append({k: w(p + k + ".weight") for k in
                             ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]})
        inv = base ** (-torch.arange(0, self.hd, 2, dtype=torch.float64) / self.hd)
        ang = torch.arange(ctx, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos().to(dev, dt), ang.sin().to(dev, dt)
        self.kc = torch.zeros(self.layers, 1, self.kv, ctx, self.hd, device=dev, dtype=dt)
        self.vc = torch.zeros_like(self.kc)
        self.ar = torch.arange(ctx, device=dev)
        self.dev = dev
        self.weight_bytes = sum(v.numel() * v.element_size() for b in self.blk for v in b.values())
        self.weight_bytes += self.out.numel() * 2 + self.dim * 2 * (1 + 2 * self.layers)

    def rms(self, x, w):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * w

    def rope(self, x, cos, sin):
        x = x.view(*x.shape[:-1], self.hd // 2, 2)
        x0, x1 = x[..., 0], x[..., 1]
        return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], -1).flatten(-2)

    def forward(self, tok, pos):
        x = self.emb[tok].view(1, self.dim)
        cos, sin = self.cos[pos].view(1, 1, -1), self.sin[pos].view(1, 1, -1)
        mask = (self.ar <= pos).view(1, 1, 1, -1)
        for l, b in enumerate(self.blk):
            h = self.rms(x, b["attn_norm"])
            q = self.rope((h @ b["attn_q"].T).view(1, self.heads, self.hd), cos, sin)
            k = self.rope((h @ b["attn_k"].T).view(1, self.kv, self.hd), cos, sin)
            v = (h @ b["attn_v"].T).view(1, self.kv, self.hd)
            self.kc[l][:, :, pos] = k.view(1, self.kv, 1, self.hd)
            self.vc[l][:, :, pos] = v.view(1, self.kv, 1, self.hd)
            a = attention(q.view(1, self.heads, 1, self.hd), self.kc[l], self.vc[l], mask)
            x = x + a.reshape(1, self.dim) @ b["attn_output"].T
            h = self.rms(x, b["ffn_norm"])
            x = x + (F.silu(h @ b["ffn_gate"].T) * (h @ b["ffn_up"].T)) @ b["ffn_down"].T
        return self.rms(x, self.out_norm) @ self.out.T


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to check the script (float32, not compiled)")
    args = ap.parse_args()
    meta, t = read_gguf(args.model)
    dev = args.device
    with torch.no_grad():
        m = Decoder(meta, t, args.ctx, dev)
        step = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True) if dev == "cuda" else m.forward
        tok = torch.tensor([1], device=dev)
        t0 = time.perf_counter()
        for p in range(8):  # compile and capture
            tok = step(tok, torch.tensor([p], device=dev)).argmax(-1).view(1)
        sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
        sync()
        warm = time.perf_counter() - t0
        start = 8
        sync()
        t0 = time.perf_counter()
        for p in range(start, start + args.steps):
            tok = step(tok, torch.tensor([p], device=dev)).argmax(-1).view(1)
        sync()
        dt = (time.perf_counter() - t0) / args.steps
    bound = m.weight_bytes / 4.8e12
    print(f"torch {torch.__version__} f16 decode: {1 / dt:.1f} tok/s ({dt * 1e3:.3f} ms/token; compile {warm:.0f} s); "
          f"{m.weight_bytes / 1e9:.2f} GB of weights a token, bound {bound * 1e3:.3f} ms ({1 / bound:.0f} tok/s): {bound / dt:.0%} of it")


if __name__ == "__main__":
    main()
