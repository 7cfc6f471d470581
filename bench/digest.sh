#!/usr/bin/env bash
# Prints a SHA-256 digest of every output berth gives on the repository's
# model fixtures, the open corpus and the language-model fixtures, one line
# a run, so that two builds can be compared for bit-identical outputs:
#
#     bench/digest.sh BERTH_BIN > before.txt   # ...change, rebuild...
#     bench/digest.sh BERTH_BIN > after.txt && diff before.txt after.txt
#
# Models under ~/.cache/berth (corpus, open-corpus) are included where they
# exist; scripts/gen_corpus.py and scripts/gen_open_corpus.py make them.
# Extra flags for every run go in BERTH_FLAGS (for example --threads 1).
set -euo pipefail
bin=${1:?usage: bench/digest.sh BERTH_BIN}
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${BERTH_CACHE:-$HOME/.cache/berth}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# digest NAME MODEL [berth run flags...]: runs the model, prints each output's hash.
digest() {
	local name=$1 model=$2
	shift 2
	local out=$work/out
	rm -rf "$out"
	if ! "$bin" run "$model" "$@" ${BERTH_FLAGS:-} --output-dir "$out" >/dev/null 2>"$work/err"; then
		echo "$name ERROR $(head -c 200 "$work/err" | tr '\n' ' ')"
		return
	fi
	for f in "$out"/*; do
		echo "$name $(basename "$f") $(sha256sum <"$f" | cut -c1-16)"
	done
}

# inputs DIR PATTERN: --input flags for the files of DIR matching PATTERN, in order.
inputs() {
	local f files=("$1"/$2)
	if [ ${#files[@]} -eq 1 ] && [ -e "${files[0]}" ]; then
		printf -- '--input\n%s\n' "${files[0]}"
		return
	fi
	for f in "${files[@]}"; do
		[ -e "$f" ] || continue
		local n=${f##*/}
		case $n in
		input_[0-9]*.npy | input_[0-9]*.pb) printf -- '--input\n%s\n' "$f" ;;
		*) printf -- '--input\n%s=%s\n' "${n%.*}" "$f" ;;
		esac
	done
}

for d in "$root"/testdata/models/*/ "$root"/testdata/open/*/set_*/; do
	model=$d/model.onnx
	[ -f "$model" ] || model=$d/../model.onnx
	[ -f "$model" ] || continue
	mapfile -t args < <(inputs "$d" 'input_*')
	digest "${d#"$root"/}" "$model" "${args[@]}"
done

for pairs in "$cache/open-corpus/pairs.txt" "$cache/open-corpus/npm_pairs.txt"; do
	[ -f "$pairs" ] || continue
	while read -r model set; do
		[ -f "$model" ] || continue
		mapfile -t args < <(inputs "$set" '*.npy')
		digest "${set#"$cache"/}" "$model" "${args[@]}"
	done <"$pairs"
done

for m in "$root"/testdata/llm/*.gguf; do
	tokens=$(/usr/bin/python3 -c 'import numpy,sys; print(",".join(str(int(t)) for t in numpy.load(sys.argv[1]).ravel()))' "${m%.gguf}.tokens.npy")
	out=$work/logits.npy
	if "$bin" generate "$m" --tokens "$tokens" -n 8 --seed 1 --logits-out "$out" ${BERTH_FLAGS:-} >"$work/text" 2>"$work/err"; then
		echo "${m#"$root"/} logits $(sha256sum <"$out" | cut -c1-16) text $(sha256sum <"$work/text" | cut -c1-16)"
	else
		echo "${m#"$root"/} ERROR $(head -c 200 "$work/err" | tr '\n' ' ')"
	fi
done
