#!/bin/sh
# Run on a GPU machine with PyTorch: times PyTorch (eager and CUDA graph)
# and berth (`berth bench --device cuda`) on the same exported models.
#   bench/cuda_vs_torch.sh BERTH_BINARY OUTDIR [MODELS]
set -u
berth=$1 out=$2 models=${3:-bert_base,gpt2_small,resnet50}
mkdir -p "$out"
python3 "$(dirname "$0")/cuda_vs_torch.py" "$out/models" --only "$models" | tee "$out/torch.jsonl"
for m in $(echo "$models" | tr , ' '); do
	f="$out/models/$m.onnx"
	[ -f "$f" ] || continue
	"$berth" bench "$f" --device cuda --iters 200 --warmup 20 --json > "$out/berth_$m.json" 2> "$out/berth_$m.err"
	echo "$m berth: $(tr -d '\n ' < "$out/berth_$m.json" | head -c 400) $(head -c 300 "$out/berth_$m.err")"
done
