#!/usr/bin/env bash
# run.sh — runs the attention, the implicit-GEMM convolution, the
# channels-last layout and pooling kernels, the tiled SGEMM and the
# decoding products of
# backend/cuda on the CPU, block by block (prelude.h), against float64
# references: a check of a kernel's indexing and fragment layouts where
# no GPU is at hand. It says nothing of speed. Needs g++ 12 or later.
#
#   scripts/cuda_emu/run.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$(dirname "$here")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && BERTH_CUDA_DUMP="$work" go test -count=1 -run '^TestDumpKernelSources$' ./backend/cuda >/dev/null)
cp "$here"/*.h "$here"/*_main.cpp "$work"/
status=0
for k in attend iconv nhwc gemv cached gemm; do
	g++ -std=c++20 -O1 -pthread -w -I"$work" -o "$work/$k" "$work/${k}_main.cpp"
	echo "== $k"
	"$work/$k" || status=1
done
exit $status
