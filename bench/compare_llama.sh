#!/usr/bin/env bash
# compare_llama.sh — a language model's generation, berth against
# llama.cpp: the same GGUF file, the same prompt, the same machine.
#
#   bench/compare_llama.sh [--tokens P] [--threads N] [--pairs K]
#       [--decode-steps D] [--no-repack] [--out FILE] [--berth BINARY]
#       [--libdir DIR] [--aged-cache] [--keep] MODEL.gguf...
#
# For each model it writes P token ids (default 512) drawn with a fixed seed
# below the model's vocabulary size, and times, in one process per side,
# the prefill of that prompt (the forward pass over all P tokens at once)
# and then D tokens (default 128) one at a time after it, each at the next
# position, as generation does:
#
#   - llama.cpp (its prebuilt CPU libraries from the npm package
#     @node-llama-cpp/linux-x64, through scripts/llamacpp.py and
#     bench/llama_prefill.py generate): one llama_decode of the P tokens as
#     one batch, the logits of the last token only, an F32 KV cache of
#     P+D+1 positions, flash attention off, --threads threads; one untimed
#     prefill (the cache emptied after it), one timed, then the D steps.
#     By default llama.cpp copies the matrix weights it has a faster
#     kernel for into a layout of its own (on a CPU with AMX, its AMX
#     buffer type, which then runs the products on AMX tiles); --no-repack
#     keeps them in the mapped file (llama-bench's --no-repack), for its
#     AVX-512/AVX2 kernels;
#   - berth: `berth generate MODEL --tokens IDS --threads N -n D+1
#     --ctx P+D+1 --temp 0 --ignore-eos --warmup 1 --json`: one untimed
#     prefill, then the timed prefill (its float32 cache of keys and
#     values), the first token from its logits and D steps, each token
#     chosen greedily.
#
# and prints one markdown table per model: prefill and decode tokens/s of
# each (the median over pairs), the ratios berth/llama.cpp (above 1: berth
# faster), and the peak RSS of each process (GNU time's %M: everything
# the process touched, the mapped weights included).
#
# How it measures:
#   - The file's cache: before its pairs each model file is dropped from
#     the page cache (posix_fadvise DONTNEED) and read once, so that both
#     sides map the pages of a file freshly read from disk, as after a
#     download or a boot. Pages a file kept in the cache for long can be
#     much slower to stream: on the kernel here (6.18, ext4) a fresh read
#     caches the file in 2 MiB folios, mapped with huge pages, while an
#     old one may sit in small pages; decoding the 1.1B Q8_0 model from
#     the mapping took 67 ms a step on such a cache and 46 ms on a fresh
#     one. llama.cpp by default streams a copy in its own memory, so an
#     old cache slows berth alone. --aged-cache leaves the cache as it is.
#   - Pairs: K pairs (default 3) of fresh processes, llama.cpp first in odd
#     pairs and berth first in even ones, so that a slow stretch of the
#     machine falls on both sides alike. Each measurement is a process of
#     its own, so that its peak RSS is its own.
#   - Load: before each pair the 1-minute load average, and during each
#     process the share of a CPU that everything else on the machine used
#     (busy time from /proc/stat, steal included, less the process's own
#     user and system time, over its wall time). These machines are
#     small and shared: a pair with a large share is noise, run again.
#
# Generate a model of TinyLlama's shape (1.1B parameters, random weights)
# with
#
#   /usr/bin/python3 scripts/gen_llm_models.py --size 1b --out ~/.cache/berth/llm-1b --types q4_0,q8_0,f16
#
# and install llama.cpp's libraries once, outside the repository, with
#
#   npm install --ignore-scripts --prefix ~/.cache/berth/llama/3.22.1 @node-llama-cpp/linux-x64@3.22.1
#
# Needs: bash, Go (unless --berth), GNU time at /usr/bin/time, and $PYTHON
# (default /usr/bin/python3; nothing beyond the standard library).
set -euo pipefail

source "$(dirname "$0")/tools.sh" # usage, posint, need, make_work, ensure_berth

tokens=512
threads=2
pairs=3
decode_steps=128
out=""
berth=""
libdir=""
keep=""
repack=1
fresh=1
models=()
PYTHON=${PYTHON:-/usr/bin/python3}


while (($# > 0)); do
	case $1 in
	-h | --help) usage 0 ;;
	--keep)
		keep=1
		shift
		;;
	--no-repack)
		repack=""
		shift
		;;
	--aged-cache)
		fresh=""
		shift
		;;
	--tokens | --threads | --pairs | --decode-steps | --out | --berth | --libdir)
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--tokens) posint "$1" "$2" 1 && tokens=$2 ;;
		--threads) posint "$1" "$2" 1 && threads=$2 ;;
		--pairs) posint "$1" "$2" 1 && pairs=$2 ;;
		--decode-steps) posint "$1" "$2" 1 && decode_steps=$2 ;;
		--out) out=$2 ;;
		--berth) berth=$2 ;;
		--libdir) libdir=$2 ;;
		esac
		shift 2
		;;
	-*) echo "compare_llama: unknown argument '$1'" >&2 && usage 2 ;;
	*)
		models+=("$1")
		shift
		;;
	esac
done
((${#models[@]} > 0)) || usage 2
for m in "${models[@]}"; do [[ -f $m ]] || die "$m is not a file"; done

make_work compare_llama berth-vs-llama.XXXXXX

need time
helper=("$PYTHON" "$here/llama_prefill.py")
libargs=()
if [[ -n $libdir ]]; then libargs=(--libdir "$libdir"); fi
runargs=("${libargs[@]}")
if [[ -z $repack ]]; then runargs+=(--no-repack); fi
ensure_berth compare_llama
lib=${libdir:-$("$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import llamacpp; print(llamacpp.LIBDIR)' "$repo/scripts")}

# ---------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------

# busy prints the machine's busy jiffies (all but idle and iowait, steal
# included) from /proc/stat.
busy() {
	awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6; exit}' /proc/stat
}

# measure NAME CMD... runs CMD under GNU time, its stdout to $dir/NAME.json,
# stderr to $dir/NAME.err, "KiB seconds user sys" to $dir/rss_NAME, and
# prints the share of a CPU everything else used meanwhile.
measure() {
	local name=$1 b0 b1
	shift
	b0=$(busy)
	if ! /usr/bin/time -f '%M %e %U %S' -o "$dir/rss_$name" "$@" >"$dir/$name.json" 2>"$dir/$name.err"; then
		die "$name failed: $(grep -v '^Command exited' "$dir/$name.err" | tail -3 | tr '\n' ' ')"
	fi
	b1=$(busy)
	awk -v b="$((b1 - b0))" -v hz="$(getconf CLK_TCK)" '{
		other = b / hz - $3 - $4; if (other < 0) other = 0
		printf "%.2f", ($2 > 0) ? other / $2 : 0 }' "$dir/rss_$name"
}

describe() {
	local flags f have rev hv
	flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
	have=""
	for f in avx2 fma avx512f avx512bw avx512_vnni avx512_bf16 amx_int8; do
		if [[ " $flags " == *" $f "* ]]; then have+="$f "; fi
	done
	rev=$(revision)
	hv=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor: *//p')
	echo "- CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) (family $(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1), model $(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(nproc) logical CPUs${hv:+, a $hv guest}"
	echo "- SIMD flags: ${have:-none of avx2/fma/avx512*/amx}" | sed 's/ *$//'
	echo "- llama.cpp: @node-llama-cpp/linux-x64 $(sed -n 's/^ *"version": "\(.*\)".*/\1/p' "$lib/../../package.json" 2>/dev/null | head -1) (llama.cpp's C API through ctypes), weights $([[ -n $repack ]] && echo "repacked as llama.cpp does by default (use_extra_bufts)" || echo "left in the mapped file (--no-repack)"); its CPU backend: $llama_info"
	echo "- berth at $rev; Go $(go version 2>/dev/null | awk '{print $3}' || echo unknown)"
	echo "- Load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
	echo "- Page cache: $([[ -n $fresh ]] && echo "each model file dropped from it and read once before its pairs" || echo "left as it was (--aged-cache)")"
	echo "- Settings: P = $tokens tokens, then D = $decode_steps tokens one at a time, $threads threads each, $pairs pairs; each process one untimed prefill, then one timed prefill and the D steps"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
llama_info=""
tables=()
n=0
for model in "${models[@]}"; do
	n=$((n + 1))
	dir="$work/$n"
	mkdir -p "$dir"
	name=$(basename "$model")
	echo "compare_llama: $name" >&2
	"${helper[@]}" ids "$model" --n "$tokens" --out "$dir/ids.npy" "${libargs[@]}" || die "$name: cannot write the prompt"
	printf '{"model": "%s", "tokens": %d, "steps": %d, "threads": %d, "pairs": %d, "repack": %s}\n' "$name" "$tokens" "$decode_steps" "$threads" "$pairs" \
		"$([[ -n $repack ]] && echo true || echo false)" >"$dir/meta.json"
	if [[ -n $fresh ]]; then
		"$PYTHON" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$model" || die "$name: cannot drop it from the page cache"
		cat "$model" >/dev/null
	fi
	ids=$("$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import llama_prefill as l; print(",".join(map(str, l.read_ids(sys.argv[2]))))' "$here" "$dir/ids.npy")

	llama_cmd=("${helper[@]}" generate "$model" --tokens "$dir/ids.npy" --threads "$threads" --steps "$decode_steps" --warmup 1 "${runargs[@]}")
	# The first token comes from the prompt's logits; the next
	# $decode_steps are the steps timed.
	berth_cmd=("$berth" generate "$model" --tokens "$ids" --threads "$threads" -n "$((decode_steps + 1))" --ctx "$((tokens + decode_steps + 1))"
		--temp 0 --ignore-eos --warmup 1 --json)
	for ((i = 1; i <= pairs; i++)); do
		load=$(cut -d' ' -f1 /proc/loadavg)
		if ((i % 2 == 1)); then
			ol=$(measure "llama_$i" "${llama_cmd[@]}")
			ob=$(measure "berth_$i" "${berth_cmd[@]}")
		else
			ob=$(measure "berth_$i" "${berth_cmd[@]}")
			ol=$(measure "llama_$i" "${llama_cmd[@]}")
		fi
		echo "$load, $ol, $ob" >"$dir/load_$i"
		echo "compare_llama: $name pair $i: load $load; others' CPU share $ol, $ob" >&2
	done
	llama_info=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["system_info"])' "$dir/llama_1.json")
	tables+=("$("${helper[@]}" table "$dir")")
done

report() {
	echo "### berth vs llama.cpp: prefill and decode on the CPU"
	echo
	describe
	echo
	local t
	for t in "${tables[@]}"; do
		echo "$t"
		echo
	done
}

report >"$work/report.md"
cat "$work/report.md"
if [[ -n $out ]]; then cp "$work/report.md" "$out"; fi
