#!/usr/bin/env bash
# compare_ort.sh — berth and ONNX Runtime on the CPU, side by side.
#
#   bench/compare_ort.sh [--threads N] [--models "resnet50 bert_base ..."]
#       [--rounds R] [--iters N | --seconds S] [--warmup W] [--corpus DIR]
#       [--out FILE] [--berth BINARY] [--ort-dir DIR] [--dims S=N,...] [--keep]
#
# For each model it times ONNX Runtime (the npm package onnxruntime-node,
# pinned in bench/tools.sh, CPU execution provider, through bench/ort_runner.js) and
# berth (`berth bench`) on the same .npy inputs with the same thread count,
# and prints one markdown table: median latency, peak RSS and the agreement
# of the two runtimes' outputs.
#
# How it measures:
#   - Inputs: bench/make_inputs.py writes one input per graph input with a
#     fixed seed (floats N(0,1); token ids uniform in [0, vocab), vocab read
#     from the embedding the ids index). Both runtimes read the same files.
#   - Rounds: R rounds (default 5). Each round starts a fresh ORT process and
#     a fresh berth process, ORT first in odd rounds and berth first in even
#     ones; each process loads the model, runs W untimed warm-up runs
#     (default 3) and then N timed runs. `berth bench` additionally runs its
#     own settling batches (at least 10 untimed runs, until a batch of runs
#     allocates nothing) before timing.
#   - Median: the median over rounds of each round's median (berth bench
#     reports per-process statistics, not every run, so both sides are
#     reduced the same way).
#   - N: --iters N for every model, or else chosen per model so that one
#     side's timed runs take about S seconds (--seconds, default 10) over all
#     rounds: N = ceil(S / R / max(ORT run, berth run)), from a calibration
#     run, clamped to [3, 500]. Both runtimes get the same N.
#   - Peak RSS: GNU time's %M (whole-process peak resident set, KiB) for each
#     process, the maximum over rounds, in MiB. It counts everything the
#     process maps and touches: the runtime itself (Node.js and V8 for ORT,
#     the Go runtime for berth), weights, arenas.
#   - Agreement: one extra run of each writes its outputs (ort_runner.js
#     --output-dir, berth run --output-dir); bench/npy_compare.py prints
#     ‖berth − ORT‖₂ / ‖ORT‖₂ per output.
#   - Placement: before every round bench/corelat (built with Go, skipped
#     without it) times a cache line's round trip between the first two
#     CPUs. A virtual machine's CPUs may share a last-level cache or not,
#     and the host may move them while the guest runs; the per-round
#     numbers say which rounds ran in which placement.
#
# Models with open dimensions (scripts/gen_corpus.py --only resnet50_open,
# bert_base_open,gpt2_small_open) run at the sizes --dims gives their
# symbols (seq=64,height=193,width=257): the inputs have those shapes, and
# both runtimes take them as they come, berth with nothing bound (it plans
# the shapes of its first run and reuses the plan).
#
# The default models are the issue's five architectures. SGEMM alone, one
# 1024³ MatMul by constant weights as both runtimes run it (each packs
# the weights once), is the extra model sgemm_1024, which
# scripts/gen_corpus.py exports only by name, best into a folder of its
# own: --corpus /tmp/ops --models sgemm_1024 --threads 1.
#
# ONNX Runtime is installed once with `npm install --ignore-scripts` (the
# install script would fetch CUDA pieces) into ~/.cache/berth/ort/VERSION,
# never into the repository. Its session options: intraOpNumThreads =
# interOpNumThreads = --threads, sequential execution, graph optimisation
# 'all'; everything else (CPU memory arena, memory patterns, thread
# spinning) stays at ORT's defaults.
#
# Needs: bash, Go (unless --berth), node ≥ 18 and npm, GNU time at
# /usr/bin/time, and $PYTHON (default /usr/bin/python3) with numpy and onnx.
set -euo pipefail

source "$(dirname "$0")/tools.sh" # ORT_VERSION, usage, posint, need, make_work, ensure_ort, ensure_berth

threads=2
models="resnet50 mobilenet_v2 efficientnet_b0 bert_base gpt2_small"
rounds=5
iters=""
seconds=10
warmup=3
corpus="$HOME/.cache/berth/corpus"
out=""
berth=""
ort_dir="$HOME/.cache/berth/ort/$ORT_VERSION"
keep=""
dims=""
PYTHON=${PYTHON:-/usr/bin/python3}


while (($# > 0)); do
	case $1 in
	-h | --help) usage 0 ;;
	--keep)
		keep=1
		shift
		;;
	--threads | --models | --rounds | --iters | --seconds | --warmup | --corpus | --out | --berth | --ort-dir | --dims)
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--threads) posint "$1" "$2" 1 && threads=$2 ;;
		--models) models=$2 ;;
		--rounds) posint "$1" "$2" 1 && rounds=$2 ;;
		--iters) posint "$1" "$2" 1 && iters=$2 ;;
		--seconds) posint "$1" "$2" 1 && seconds=$2 ;;
		--warmup) posint "$1" "$2" 0 && warmup=$2 ;;
		--corpus) corpus=$2 ;;
		--out) out=$2 ;;
		--berth) berth=$2 ;;
		--ort-dir) ort_dir=$2 ;;
		--dims) dims=$2 ;;
		esac
		shift 2
		;;
	*) echo "compare_ort: unknown argument '$1'" >&2 && usage 2 ;;
	esac
done
models=$(echo "$models" | tr ',' ' ')
[[ -n ${models// /} ]] || die "--models is empty"

make_work compare_ort berth-vs-ort.XXXXXX

# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------

need time node onnx

ensure_ort compare_ort
ensure_berth compare_ort

# bench/corelat: the round trip of a cache line between the first two CPUs,
# measured before every round (the placement of a virtual machine's CPUs
# can change while it runs, and with it the speed of two-thread code).
corelat=""
if command -v go >/dev/null && (cd "$repo" && CGO_ENABLED=0 go build -o "$work/corelat" ./bench/corelat) 2>/dev/null; then
	corelat="$work/corelat"
fi
# roundtrip prints corelat's median round trip in ns, or "?".
roundtrip() {
	if [[ -n $corelat ]]; then "$corelat" -ns -n 5000 -reps 3 2>/dev/null || echo "?"; else echo "?"; fi
}

# ---------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------

describe() {
	local cpu flags f have rev
	cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
	flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
	have=""
	for f in avx2 fma avx512f avx512bw avx512_vnni avx512_bf16; do
		if [[ " $flags " == *" $f "* ]]; then have+="$f "; fi
	done
	rev=$(revision)
	cpu+=" (family $(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -1), model $(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -1))"
	local hv
	hv=$(lscpu 2>/dev/null | sed -n 's/^Hypervisor vendor: *//p')
	echo "- CPU: ${cpu:-unknown}, $(nproc) logical CPUs online ($(lscpu 2>/dev/null | sed -n 's/^Thread(s) per core: *//p') thread(s) per core)${hv:+, a $hv guest}"
	echo "- SIMD flags: ${have:-none of avx2/fma/avx512*}" | sed 's/ *$//'
	echo "- Memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
	echo "- Kernel: $(uname -sr)"
	echo "- Go: $(go version 2>/dev/null | awk '{print $3}' || echo unknown); berth at $rev"
	echo "- ONNX Runtime: onnxruntime-node $(node -p 'require(process.argv[1]).version' "$ort_pkg") (CPU EP) on Node.js $(node --version)"
	local node_rss berth_rss
	node_rss=$(/usr/bin/time -f %M node -e 'require(process.argv[1])' "$ort_dir/node_modules/onnxruntime-node" 2>&1 >/dev/null | tail -1)
	berth_rss=$(/usr/bin/time -f %M "$berth" run 2>&1 >/dev/null | tail -1)
	echo "- Process floor (peak RSS): Node.js with onnxruntime-node loaded, no session: $((node_rss / 1024)) MiB; berth running its embedded demo model: $((berth_rss / 1024)) MiB"
	echo "- Load average (1, 5, 15 min): $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end (anything above 0 is other work sharing the CPUs)"
	echo "- Settings: $threads threads each, batch 1${dims:+, open dimensions $dims}, $rounds rounds, warm-up $warmup, $([[ -n $iters ]] && echo "$iters timed runs per process" || echo "timed runs per process chosen for ~${seconds} s per side per model")"
}

# ---------------------------------------------------------------------------
# One model
# ---------------------------------------------------------------------------

# field FILE KEY prints a number from a JSON file.
field() {
	"$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# timed LABEL RSSFILE CMD... runs CMD under GNU time, its stdout to
# $dir/LABEL.json and stderr to $dir/LABEL.err; RSSFILE gets "KiB seconds".
timed() {
	local label=$1 rss=$2
	shift 2
	/usr/bin/time -f '%M %e' -o "$rss" "$@" >"$dir/$label.json" 2>"$dir/$label.err"
}

# firsterr FILE prints the first line of an error log, for the table.
firsterr() {
	grep -v '^Command exited' "$1" | head -1 | cut -c1-160 | tr '|' '/'
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
rows=()
notes=()
for m in $models; do
	dir="$work/$m"
	mkdir -p "$dir"
	f="$corpus/$m.onnx"
	if [[ ! -f $f ]]; then
		echo "compare_ort: $f is missing; exporting it with scripts/gen_corpus.py" >&2
		"$PYTHON" "$repo/scripts/gen_corpus.py" "$corpus" --only "$m" >&2 ||
			die "cannot export $m (scripts/gen_corpus.py knows only its own corpus; put $m.onnx in $corpus)"
	fi
	echo "compare_ort: $m" >&2

	dimargs=()
	for d in ${dims//,/ }; do dimargs+=(--dim "$d"); done
	"$PYTHON" "$here/make_inputs.py" "$f" "$dir/in" "${dimargs[@]}" >"$dir/inputs.txt" || die "$m: cannot write inputs"
	inargs=()
	while IFS= read -r spec; do inargs+=(--input "$spec"); done <"$dir/inputs.txt"

	ort_cmd=(node "$here/ort_runner.js" "$f" --ort "$ort_dir" --threads "$threads" "${inargs[@]}")
	berth_cmd=("$berth" bench "$f" --threads "$threads" "${inargs[@]}" --json)

	# Agreement and calibration: one warm ORT run and berth's first run,
	# each writing its outputs.
	ort_ok=1 berth_ok=1 agree=""
	if ! timed ort_check "$dir/rss_ort_check" "${ort_cmd[@]}" --warmup 1 --iters 1 --output-dir "$dir/out_ort"; then
		ort_ok=""
		notes+=("$m: ONNX Runtime failed: $(firsterr "$dir/ort_check.err")")
	fi
	if ! /usr/bin/time -f '%M %e' -o "$dir/rss_berth_check" "$berth" run "$f" --threads "$threads" "${inargs[@]}" \
		--output-dir "$dir/out_berth" >"$dir/berth_check.txt" 2>"$dir/berth_check.err"; then
		berth_ok=""
		notes+=("$m: berth failed: $(firsterr "$dir/berth_check.err")")
	fi
	if [[ -n $ort_ok && -n $berth_ok ]]; then
		agree=$("$PYTHON" "$here/npy_compare.py" "$dir/out_ort" "$dir/out_berth" | awk '{sub(/rel_l2=/, "", $2); printf "%s%s %s", sep, $1, $2; sep=", "}') || true
	fi

	n=$iters
	if [[ -z $n ]]; then
		t=0
		if [[ -n $ort_ok ]]; then t=$(field "$dir/ort_check.json" median_ms); fi
		if [[ -n $berth_ok ]]; then
			tb=$(sed -n 's/.* in \([0-9.]*\) ms$/\1/p' "$dir/berth_check.txt" | head -1)
			t=$(awk -v a="$t" -v b="${tb:-0}" 'BEGIN {print (a > b ? a : b)}')
		fi
		n=$(awk -v s="$seconds" -v r="$rounds" -v t="$t" 'BEGIN {
			n = (t > 0) ? s * 1000 / r / t : 500; n = (n == int(n)) ? n : int(n) + 1
			print (n < 3 ? 3 : (n > 500 ? 500 : n)) }')
	fi

	for ((r = 1; r <= rounds; r++)); do
		if ((r % 2 == 1)); then order="ort berth"; else order="berth ort"; fi
		roundtrip >>"$dir/roundtrip"
		for side in $order; do
			if [[ $side == ort && -n $ort_ok ]]; then
				if ! timed "ort_$r" "$dir/rss_ort_$r" "${ort_cmd[@]}" --warmup "$warmup" --iters "$n"; then
					ort_ok=""
					notes+=("$m: ONNX Runtime failed in round $r: $(firsterr "$dir/ort_$r.err")")
				fi
			elif [[ $side == berth && -n $berth_ok ]]; then
				if ! timed "berth_$r" "$dir/rss_berth_$r" "${berth_cmd[@]}" --warmup "$warmup" --iters "$n"; then
					berth_ok=""
					notes+=("$m: berth bench failed in round $r: $(firsterr "$dir/berth_$r.err")")
				fi
			fi
		done
	done

	# One table row: model | ORT ms | berth ms | ORT/berth | ORT MiB | berth MiB | berth/ORT | rel L2 | N.
	rows+=("$("$PYTHON" - "$dir" "$m" "$rounds" "$n" "${ort_ok:-0}" "${berth_ok:-0}" "${agree:-n/a}" <<'EOF'
import json, os, statistics, sys

d, model, rounds, n, ort_ok, berth_ok, agree = sys.argv[1:]
rounds = int(rounds)

def side(name, ok):
    if ok == "0":
        return None, None, [], None
    meds, mins, rss = [], [], []
    for r in range(1, rounds + 1):
        res = json.load(open(os.path.join(d, f"{name}_{r}.json")))
        meds.append(res["median_ms"])
        mins.append(res["min_ms"])
        rss.append(int(open(os.path.join(d, f"rss_{name}_{r}")).read().split()[-2]) / 1024)
    return statistics.median(meds), max(rss), meds, min(mins)

om, orss, omeds, omin = side("ort", ort_ok)
bm, brss, bmeds, bmin = side("berth", berth_ok)
rt = os.path.join(d, "roundtrip")
trip_ns = open(rt).read().split() if os.path.exists(rt) else []
json.dump({"model": model, "iters": int(n), "rounds": rounds, "roundtrip_ns": trip_ns,
           "ort_round_medians_ms": omeds, "berth_round_medians_ms": bmeds,
           "ort_median_ms": om, "berth_median_ms": bm, "ort_min_ms": omin, "berth_min_ms": bmin,
           "ort_peak_rss_mib": orss, "berth_peak_rss_mib": brss, "rel_l2": agree},
          open(os.path.join(d, "summary.json"), "w"))

def f(x, fmt):
    return "—" if x is None else format(x, fmt)

def ratio(a, b, fmt):
    return "—" if a is None or b is None else format(a / b, fmt)

def meds(xs):
    return "[" + ", ".join(format(x, ".2f") for x in xs) + "]" if xs else "—"

trips = "; cross-CPU round trip before each round [" + ", ".join(trip_ns) + "] ns" if trip_ns else ""

with open(os.path.join(d, "detail.txt"), "w") as out:
    print(f"- {model}: ORT {meds(omeds)}, fastest run {f(omin, '.2f')}; "
          f"berth {meds(bmeds)}, fastest run {f(bmin, '.2f')}{trips}", file=out)

print(f"| {model} | {f(om, '.2f')} | {f(bm, '.2f')} | {ratio(om, bm, '.3f')} | {f(orss, '.0f')} | {f(brss, '.0f')} "
      f"| {ratio(brss, orss, '.2f')} | {agree} | {n} × {rounds} |")
EOF
)")
	cat "$dir/summary.json" >&2
	echo >&2
done

report() {
	echo "### berth vs ONNX Runtime (CPU)"
	echo
	describe
	echo
	echo "| model | ORT median ms | berth median ms | ORT/berth (≥ 1: berth faster) | ORT peak RSS MiB | berth peak RSS MiB | RSS berth/ORT | rel L2 berth vs ORT | timed runs × rounds |"
	echo "|---|---:|---:|---:|---:|---:|---:|---|---:|"
	local row
	for row in "${rows[@]}"; do echo "$row"; done
	echo
	echo "Per-round medians and the fastest single run, in ms (each round: one fresh process per runtime), and the round trip of a cache line between the first two CPUs (bench/corelat) before each round:"
	echo
	local m
	for m in $models; do
		if [[ -f $work/$m/detail.txt ]]; then cat "$work/$m/detail.txt"; fi
	done
	if ((${#notes[@]} > 0)); then
		echo
		for row in "${notes[@]}"; do echo "- $row"; done
	fi
}

report >"$work/report.md"
cat "$work/report.md"
if [[ -n $out ]]; then cp "$work/report.md" "$out"; fi
