#!/usr/bin/python3
"""Generate testdata/sample/distributions.json: the distributions that
package sample draws tokens from, computed independently with numpy.

Regenerate them, from the repository root, with:

    /usr/bin/python3 scripts/gen_sample_fixtures.py

Each case is a row of logits (seeded random values with two decimals,
some of them -Inf), the recent tokens the repetition penalty looks at and
a set of options (the field names of sample.Options). The script runs the
filter chain that package sample documents, written here from its
definitions rather than from the Go code:

    penalty      each distinct token of the last RepeatLastN recent tokens
                 (0: 64, -1: all) once: l > 0 -> l / p, else l * p, in
                 float32
    greedy       Temperature <= 0: a one-hot at the argmax (lowest id of
                 equal logits)
    candidates   the tokens whose logit is not -Inf, ordered by decreasing
                 logit and then increasing id
    top-k        the first TopK candidates
    top-p        the softmax of the candidates (temperature 1); the
                 shortest prefix whose probabilities sum to >= TopP
    min-p        the candidates with probability >= MinP * the largest
    temperature  the softmax of logit / Temperature over what is left

and writes the kept ids (in id order) and their probabilities, computed
in float64 and written as the shortest decimals of their float32
roundings (which keeps the file small; the Go test's tolerance allows for
float32 rounding anyway). No case may
sit on a boundary where rounding could flip a decision (a cumulative sum
within 1e-6 of TopP, a probability ratio within 1e-6 of MinP, equal
logits either side of the top-k or top-p cut, where llama.cpp's order is
unspecified): the script checks and tries other logits.

Where llama.cpp's libraries are installed (see scripts/llamacpp.py), the
script also runs each case without a repetition penalty through
llama.cpp's own samplers (top-k, top-p, min-p and temp, applied in that
order to a llama_token_data_array) and checks that they keep the same
tokens with the same probabilities, to 1e-5: the definitions above are
llama.cpp's. The penalty is left out of that check: the penalties sampler
of the installed build (3.22.1), driven through llama_sampler_accept,
forgets a token once another is accepted twice ([1, 2, 2] penalises only
2) and was killed for memory with a window shorter than the tokens
accepted, so it is no reference.
"""

import ctypes
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamacpp  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "sample",
                   "distributions.json")
MARGIN = 1e-6


class Boundary(Exception):
    pass


def softmax(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max())
    return e / e.sum()


def distribution(logits, recent, o):
    """The kept token ids (ascending) and their probabilities."""
    l = np.array(logits, dtype=np.float32)
    p = np.float32(o.get("RepeatPenalty", 0))
    if p != 0 and p != 1:
        n = o.get("RepeatLastN", 0)
        n = 64 if n == 0 else n
        window = recent if n == -1 else recent[max(0, len(recent) - n):]
        for t in set(window):
            l[t] = l[t] / p if l[t] > 0 else l[t] * p
    if o.get("Temperature", 0) <= 0:
        return [int(np.argmax(l))], [1.0]

    ids = np.nonzero(l > -np.inf)[0]
    order = np.lexsort((ids, -l[ids].astype(np.float64)))  # logit down, id up
    ids = ids[order]

    k = o.get("TopK", 0)
    if 0 < k < len(ids):
        if l[ids[k - 1]] == l[ids[k]]:
            raise Boundary("equal logits across the top-k cut")
        ids = ids[:k]

    top_p = o.get("TopP", 0)
    if 0 < top_p < 1 and len(ids) > 1:
        cum = np.cumsum(softmax(l[ids]))
        if np.any(np.abs(cum - np.float32(top_p)) < MARGIN):
            raise Boundary("a cumulative probability at top-p")
        m = int(np.argmax(cum >= np.float32(top_p))) + 1 if cum[-1] >= top_p else len(ids)
        if m < len(ids) and l[ids[m - 1]] == l[ids[m]]:
            raise Boundary("equal logits across the top-p cut")
        ids = ids[:m]

    min_p = o.get("MinP", 0)
    if min_p > 0 and len(ids) > 1:
        q = softmax(l[ids])
        ratio = q / q.max()
        if np.any(np.abs(ratio - np.float32(min_p)) < MARGIN):
            raise Boundary("a probability ratio at min-p")
        ids = ids[ratio >= np.float32(min_p)]

    t = np.float64(np.float32(o["Temperature"]))
    probs = softmax(l[ids].astype(np.float64) / t)
    order = np.argsort(ids)
    return [int(i) for i in ids[order]], [float(x) for x in probs[order]]


class TokenData(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("logit", ctypes.c_float), ("p", ctypes.c_float)]


class TokenDataArray(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(TokenData)), ("size", ctypes.c_size_t),
                ("selected", ctypes.c_int64), ("sorted", ctypes.c_bool)]


def llama_distribution(L, logits, recent, o):
    """The kept ids (ascending) and probabilities after llama.cpp's samplers."""
    samplers = []
    if o.get("TopK", 0) > 0:
        samplers.append(L.llama_sampler_init_top_k(o["TopK"]))
    if 0 < o.get("TopP", 0) < 1:
        samplers.append(L.llama_sampler_init_top_p(o["TopP"], 0))
    if o.get("MinP", 0) > 0:
        samplers.append(L.llama_sampler_init_min_p(o["MinP"], 0))
    samplers.append(L.llama_sampler_init_temp(o.get("Temperature", 0)))

    data = (TokenData * len(logits))(*[TokenData(i, float(v), 0) for i, v in enumerate(logits)])
    cur = TokenDataArray(data, len(logits), -1, False)
    for smpl in samplers:
        L.llama_sampler_apply(smpl, ctypes.byref(cur))
        L.llama_sampler_free(smpl)
    kept = [(data[i].id, data[i].logit) for i in range(cur.size) if data[i].logit > -np.inf]
    kept.sort()
    return [i for i, _ in kept], softmax([v for _, v in kept])


def open_llama():
    """llama.cpp's C API, or None where it is not installed."""
    if llamacpp.missing(llamacpp.LIBDIR):
        return None
    L = llamacpp.Llama().L
    vp = ctypes.c_void_p
    for name, args in [("top_k", [ctypes.c_int32]), ("top_p", [ctypes.c_float, ctypes.c_size_t]),
                       ("min_p", [ctypes.c_float, ctypes.c_size_t]), ("temp", [ctypes.c_float])]:
        fn = getattr(L, "llama_sampler_init_" + name)
        fn.restype, fn.argtypes = vp, args
    L.llama_sampler_apply.restype = None
    L.llama_sampler_apply.argtypes = [vp, ctypes.POINTER(TokenDataArray)]
    L.llama_sampler_free.restype, L.llama_sampler_free.argtypes = None, [vp]
    return L


def f32(x):
    """The shortest decimal that reads back as float32 x."""
    return float(np.format_float_positional(np.float32(x), unique=True, trim="-"))


# name, vocab, spread of the logits, -Inf tokens, recent tokens, options
CASES = [
    ("plain", 50, 2.0, 0, 0, {"Temperature": 1}),
    ("hot", 32, 2.0, 0, 0, {"Temperature": 2.5}),
    ("penalty-window", 64, 2.0, 0, 40,
     {"Temperature": 0.75, "RepeatPenalty": 1.5, "RepeatLastN": 16}),
    ("penalty-all", 48, 2.0, 0, 40,
     {"Temperature": 1, "RepeatPenalty": 0.8, "RepeatLastN": -1}),
    ("top-k", 128, 3.0, 0, 0, {"Temperature": 0.9, "TopK": 20}),
    ("top-p", 128, 1.5, 0, 0, {"Temperature": 1.25, "TopP": 0.9}),
    ("top-p-flat", 200, 0.3, 0, 0, {"Temperature": 0.5, "TopP": 0.6}),
    ("min-p", 128, 1.0, 0, 0, {"Temperature": 0.8, "MinP": 0.1}),
    ("neg-inf", 160, 2.0, 40, 0, {"Temperature": 2, "TopK": 50, "MinP": 0.02}),
    ("greedy-penalty", 64, 2.0, 0, 10, {"Temperature": 0, "RepeatPenalty": 4}),
    ("top-p-tiny", 32, 2.0, 0, 0, {"Temperature": 1, "TopP": 0.01}),
    ("all-three", 200, 2.5, 10, 0,
     {"Temperature": 0.6, "TopK": 120, "TopP": 0.8, "MinP": 0.01}),
    ("defaults", 512, 3.0, 0, 100,
     {"Temperature": 0.8, "TopK": 40, "TopP": 0.95, "MinP": 0.05,
      "RepeatPenalty": 1.1, "RepeatLastN": 64}),
]


def main():
    rng = np.random.default_rng(20240611)
    L = open_llama()
    if L is None:
        print("llama.cpp is not installed: the cases are not checked against it")
    out = []
    for name, vocab, spread, n_inf, n_recent, o in CASES:
        for attempt in range(100):
            logits = np.round(rng.normal(0, spread, vocab), 2).astype(np.float32)
            if n_inf:
                logits[rng.choice(vocab, n_inf, replace=False)] = -np.inf
            # recent tokens favour the likely ones, so that the penalty
            # reaches into what the filters keep, and repeat some
            likely = np.argsort(-logits)[:30]
            recent = [int(t) for t in rng.choice(likely, n_recent)]
            try:
                ids, probs = distribution(logits, recent, o)
                break
            except Boundary as e:
                print(f"{name}: attempt {attempt}: {e}, again")
        else:
            raise SystemExit(f"{name}: every attempt sat on a boundary")
        out.append({
            "name": name,
            "options": o,
            "logits": [f32(x) for x in logits if np.isfinite(x)],
            "neg_inf": [int(i) for i in np.nonzero(np.isneginf(logits))[0]],
            "recent": recent,
            "ids": ids,
            "probs": [f32(x) for x in probs],
        })
        line = f"{name}: vocab {vocab}, {len(ids)} kept"
        if L is not None and o.get("RepeatPenalty", 0) in (0, 1):
            lids, lprobs = llama_distribution(L, logits, recent, o)
            if lids != ids or not np.allclose(lprobs, probs, rtol=1e-5, atol=0):
                raise SystemExit(f"{line}; llama.cpp keeps {len(lids)}: {lids}, {lprobs}")
            line += ", as llama.cpp does"
        print(line)
    with open(OUT, "w") as f:
        f.write("{\"source\": \"scripts/gen_sample_fixtures.py\", \"cases\": [\n")
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in out))
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
