#!/usr/bin/env bash
# cuda_llm.sh — decoding on the GPU: berth generate --device cuda against
# PyTorch's torch.compile on the same F16 weights, on one machine, in one
# call.
#
#   bench/cuda_llm.sh [--dir DIR] [--types f16,q8_0,q4_0] [--size 1b|110m]
#       [--steps N] [--runs K] [--no-torch] [--berth BINARY] [--out FILE]
#       [--keep]
#
# For each type it makes the model of scripts/gen_llm_models.py --size SIZE
# in DIR (default ~/.cache/berth/llm-SIZE) where it is missing, without its
# float64 reference (--no-reference: the same bytes, in seconds), then
# runs, K times (default 2), one process each:
#
#   berth generate MODEL --device cuda --tokens 1,2,3,4,5,6,7,8 -n N
#       --temp 0 --ignore-eos --json
#
# (N default 256) and reads its decode_tok_s. With f16 among the types and
# unless --no-torch, it runs bench/llm_torch.py on the F16 file between
# berth's runs (a static cache of keys and values, torch.compile with mode
# "reduce-overhead", one CUDA graph a step). It prints one markdown table:
# per type berth's tokens/s of each run, the weight bytes a step reads
# (the file's tensors but the token embedding, of which a step reads one
# row) and the share of an H200's 4.8 TB/s they take at berth's median.
#
# The GPU's speed moves from one call to the next by several per cent:
# compare rows of one call.
#
# Needs: bash, Go (unless --berth), $PYTHON (default python3) with numpy
# and, for the PyTorch column, torch with CUDA.
set -euo pipefail

source "$(dirname "$0")/tools.sh" # usage, posint, die, make_work, ensure_berth, revision

PYTHON=${PYTHON:-python3}
dir=""
types="f16,q8_0,q4_0"
size="1b"
steps=256
runs=2
torch=1
berth=""
out=""
keep=""

while (($# > 0)); do
	case $1 in
	-h | --help) usage 0 ;;
	--no-torch)
		torch=""
		shift
		;;
	--keep)
		keep=1
		shift
		;;
	--dir | --types | --size | --steps | --runs | --berth | --out)
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--dir) dir=$2 ;;
		--types) types=$2 ;;
		--size) size=$2 ;;
		--steps) posint "$1" "$2" 1 && steps=$2 ;;
		--runs) posint "$1" "$2" 1 && runs=$2 ;;
		--berth) berth=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	*) echo "cuda_llm: unknown argument '$1'" >&2 && usage 2 ;;
	esac
done
[[ $size == 1b || $size == 110m ]] || die "--size is 1b or 110m, not '$size'"
dir=${dir:-$HOME/.cache/berth/llm-$size}

make_work cuda_llm cuda-llm.XXXXXX
ensure_berth cuda_llm
mkdir -p "$dir"

# model TYPE prints the path of the model of TYPE, making it first where
# it is missing (in a folder of its own, then moved into $dir).
model() {
	local t=$1 f="$dir/llama-$size-$1.gguf"
	if [[ ! -f $f ]]; then
		echo "cuda_llm: writing $f" >&2
		rm -rf "$work/gen"
		"$PYTHON" "$repo/scripts/gen_llm_models.py" --size "$size" --out "$work/gen" --types "$t" --no-reference >&2 ||
			die "scripts/gen_llm_models.py failed for $t"
		mv "$work/gen/llama-$size-$t.gguf" "$f"
	fi
	echo "$f"
}

# step_bytes FILE prints the bytes of the file's tensors but the token
# embedding's (token_embd.weight), read by the generator's own GGUF reader.
step_bytes() {
	"$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[1])
from gen_llm_models import GGUFReader
r = GGUFReader(sys.argv[2])
print(sum(int(r.raw(i[0]).size) for i in r.infos if i[0] != "token_embd.weight"))' "$repo/scripts" "$1"
}

# decode FILE prints berth's decode tokens/s on FILE.
decode() {
	"$berth" generate "$1" --device cuda --tokens 1,2,3,4,5,6,7,8 -n "$steps" --temp 0 --ignore-eos --json >"$work/out.json" 2>"$work/err" ||
		die "berth generate failed on $1: $(tail -3 "$work/err" | tr '\n' ' ')"
	"$PYTHON" -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["decode_tok_s"], 1))' "$work/out.json"
}

rows=()
torch_line=""
IFS=, read -ra list <<<"$types"
for t in "${list[@]}"; do
	f=$(model "$t")
	bytes=$(step_bytes "$f")
	tps=()
	for ((i = 1; i <= runs; i++)); do
		tps+=("$(decode "$f")")
		if [[ $t == f16 && -n $torch && $i == 1 ]]; then
			torch_line=$("$PYTHON" "$here/llm_torch.py" "$f" --steps "$steps" 2>&1 | tail -1) || torch_line="PyTorch failed: $torch_line"
		fi
	done
	med=$(printf '%s\n' "${tps[@]}" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
	share=$(awk -v b="$bytes" -v t="$med" 'BEGIN {printf "%.1f", 100 * b * t / 4.8e12}')
	rows+=("| $t | ${tps[*]} | $med | $((bytes / 1000000)) MB | $share % |")
done

report() {
	echo "### berth generate --device cuda (llama-$size)"
	echo
	echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo unknown)"
	echo "- berth at $(revision); $steps tokens a run after an 8-token prompt, greedy"
	echo
	echo "| type | tok/s, each run | median | bytes a step reads | share of 4.8 TB/s |"
	echo "|---|---|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	if [[ -n $torch_line ]]; then
		echo
		echo "PyTorch, same F16 file, between berth's runs: $torch_line"
	fi
}

report >"$work/report.md"
cat "$work/report.md"
if [[ -n $out ]]; then cp "$work/report.md" "$out"; fi
