#!/bin/sh
# Run on a GPU machine with PyTorch: times PyTorch (eager and CUDA graph)
# and berth (`berth bench --device cuda`) on the same exported models, in
# float32; berth also with BERTH_CUDA_PRECISION=tf32 (TF32 tensor-core
# GEMMs; PyTorch's side stays float32), unless NO_TF32 is set.
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
	if [ -f "$out/models/$m.io" ]; then # parity with PyTorch's outputs on the same input
		rm -rf "$out/run_$m"
		# shellcheck disable=SC2046
		"$berth" run "$f" --device cuda --output-dir "$out/run_$m" $(sed 's/\([^ ]*\)/--input \1/g' "$out/models/$m.io") > /dev/null 2> "$out/run_$m.err" &&
			python3 "$(dirname "$0")/cuda_vs_torch.py" --compare "$out/models" "$m" "$out/run_$m" || head -c 300 "$out/run_$m.err"
	fi
	[ -n "${NO_TF32:-}" ] && continue
	BERTH_CUDA_PRECISION=tf32 "$berth" bench "$f" --device cuda --iters 200 --warmup 20 --json > "$out/berth_tf32_$m.json" 2> "$out/berth_tf32_$m.err"
	echo "$m berth-tf32: $(tr -d '\n ' < "$out/berth_tf32_$m.json" | head -c 400) $(head -c 300 "$out/berth_tf32_$m.err")"
done
