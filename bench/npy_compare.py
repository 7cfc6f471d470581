#!/usr/bin/python3
"""Compare two folders of .npy outputs: relative L2 error per output.

    /usr/bin/python3 bench/npy_compare.py WANT_DIR GOT_DIR

For every WANT_DIR/<name>.npy it prints one line
    <name> rel_l2=<‖got − want‖₂ / ‖want‖₂> max_abs=<max |got − want|>
computed in float64, with the definition of internal/compare.RelL2 (the
absolute ‖got − want‖₂ when want is all zeros). An output missing from
GOT_DIR or of another shape prints rel_l2=missing or rel_l2=shape and makes
the exit status 1. Requires python3-numpy.
"""

import os
import sys

import numpy as np


def rel_l2(got, want):
    got = got.astype(np.float64).ravel()
    want = want.astype(np.float64).ravel()
    num = float(np.sum((got - want) ** 2))
    den = float(np.sum(want ** 2))
    return np.sqrt(num) if den == 0 else np.sqrt(num / den)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: npy_compare.py WANT_DIR GOT_DIR")
    want_dir, got_dir = sys.argv[1:]
    names = sorted(f for f in os.listdir(want_dir) if f.endswith(".npy"))
    if not names:
        sys.exit(f"npy_compare: no .npy files in {want_dir}")
    bad = False
    for f in names:
        name = f[:-4]
        want = np.load(os.path.join(want_dir, f))
        gp = os.path.join(got_dir, f)
        if not os.path.exists(gp):
            print(f"{name} rel_l2=missing")
            bad = True
            continue
        got = np.load(gp)
        if got.shape != want.shape:
            print(f"{name} rel_l2=shape got={list(got.shape)} want={list(want.shape)}")
            bad = True
            continue
        err = rel_l2(got, want)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        print(f"{name} rel_l2={err:.2e} max_abs={float(diff.max()) if diff.size else 0.0:.2e}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
