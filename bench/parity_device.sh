#!/usr/bin/env bash
# parity_device.sh — does berth give on a GPU what it gives on the CPU?
#
#   bench/parity_device.sh [--berth BINARY] [--device D] [--tol X]
#       [--python PY] [--out FILE] MODEL=SETDIR...
#
# Each (model, input set) pair is run twice through the command line, as a
# user runs it, with nothing else given:
#
#     berth run MODEL --input ... --output-dir DIR --device cpu
#     berth run MODEL --input ... --output-dir DIR --device D   (cuda)
#
# SETDIR holds the inputs as .npy files: input_0.npy, input_1.npy, … bind
# the graph inputs in order; any other NAME.npy binds the input NAME
# (output_K.npy files, a fixture's expected outputs, are left out). One
# markdown table comes out with ‖device − cpu‖₂ / ‖cpu‖₂ per output
# (bench/npy_compare.py, float64) and a verdict: a pair passes when every
# output has the CPU's shape and a rel L2 ≤ --tol (default 1e-4). The exit
# status is 0 when every pair passed. Needs python3 with numpy.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
source "$here/tools.sh"
# label names a model by its file, or by its folder where the file is
# model.onnx (the fixtures' layout).
label() {
	local b
	b=$(basename "$1")
	if [[ $b == model.onnx ]]; then b="$(basename "$(dirname "$1")")/$b"; fi
	echo "$b"
}

die_status=2

berth="" device=cuda tol=1e-4 out="" PYTHON=${PYTHON:-python3}
pairs=()
while (($#)); do
	case $1 in
	--berth) berth=$2 && shift ;;
	--device) device=$2 && shift ;;
	--tol) tol=$2 && shift ;;
	--python) PYTHON=$2 && shift ;;
	--out) out=$2 && shift ;;
	-h | --help) usage 0 ;;
	*=*) pairs+=("$1") ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
((${#pairs[@]})) || usage 2
"$PYTHON" -c 'import numpy' 2>/dev/null || PYTHON=/usr/bin/python3
"$PYTHON" -c 'import numpy' 2>/dev/null || die "$PYTHON has no numpy (set --python)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ensure_berth parity_device

# inputs MODEL SETDIR prints the --input arguments for the .npy files of
# SETDIR, one per line. A file NAME.npy binds the graph input whose name,
# sanitised as berth names output files, is NAME (onnx__Flatten_0.npy binds
# onnx::Flatten_0).
inputs() {
	local f name real
	declare -A graph=()
	while IFS= read -r real; do
		[[ -n $real ]] && graph[$(sed 's/[^A-Za-z0-9._-]/_/g' <<<"$real")]=$real
	done < <("$berth" info "$1" --json 2>/dev/null |
		"$PYTHON" -c 'import json,sys; [print(i["Name"]) for i in json.load(sys.stdin)["Inputs"]]' 2>/dev/null)
	for f in $(ls "$2"/input_*.npy 2>/dev/null | sort -V); do
		echo "$f"
	done
	for f in "$2"/*.npy; do
		name=$(basename "$f" .npy)
		[[ $name == input_* || $name == output_* || ! -e $f ]] && continue
		echo "${graph[$name]:-$name}=$f"
	done
}

# row MODEL SETDIR N prints one table row and returns 0 when the pair passed.
row() {
	local model=$1 set=$2 dir="$work/$3" args=() spec d rc verdict=pass cells=""
	mkdir -p "$dir"
	while IFS= read -r spec; do
		args+=(--input "$spec")
	done < <(inputs "$model" "$set")
	for d in cpu "$device"; do
		rc=0
		"$berth" run "$model" "${args[@]}" --device "$d" --output-dir "$dir/$d" >"$dir/$d.txt" 2>"$dir/$d.err" || rc=$?
		if ((rc != 0)); then
			echo "| $(label "$model") | $(basename "$set") | — | FAIL | $d: $(head -1 "$dir/$d.err" | cut -c1-300 | tr '|' '/') |"
			return 1
		fi
	done
	"$PYTHON" "$here/npy_compare.py" "$dir/cpu" "$dir/$device" >"$dir/compare.txt" 2>&1 || verdict=FAIL
	while read -r name rel _; do
		rel=${rel#rel_l2=}
		cells+="$name $rel; "
		if [[ $verdict == pass ]] && ! awk -v r="$rel" -v t="$tol" 'BEGIN { exit !(r + 0 == r && r <= t) }'; then
			verdict=FAIL
		fi
	done <"$dir/compare.txt"
	echo "| $(label "$model") | $(basename "$set") | ${cells%; } | $verdict | |"
	[[ $verdict == pass ]]
}

table="$work/table.md"
passed=0 n=0
{
	echo "| model | set | rel L2 $device vs cpu per output | verdict | error |"
	echo "|---|---|---|---|---|"
} >"$table"
for p in "${pairs[@]}"; do
	n=$((n + 1))
	if row "${p%%=*}" "${p#*=}" "$n" >>"$table"; then
		passed=$((passed + 1))
	fi
done
printf '\n%d of %d pairs pass (tolerance %s)\n' "$passed" "$n" "$tol" >>"$table"
cat "$table"
[[ -z $out ]] || cp "$table" "$out"
((passed == n))
