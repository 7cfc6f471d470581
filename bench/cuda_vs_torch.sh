#!/bin/sh
# Run on a GPU machine with PyTorch: times PyTorch (eager fp32, eager under
# bf16 autocast, fp32 CUDA graph, torch.compile "reduce-overhead" in fp32
# and under bf16 autocast; TORCH_ARGS=--no-compile skips it) and berth (`berth bench --device cuda`)
# on the same exported models, at batch 1 unless --batch says otherwise.
# berth runs once per precision in PRECISIONS (default "fp32 tf32 bf16";
# each is a BERTH_CUDA_PRECISION value: tf32 uses the TF32 tensor cores,
# bf16 and f16 run the GEMMs on 16-bit weights and activations with fp32
# accumulation), and its outputs in each precision are checked against
# PyTorch's fp32 outputs on the same input.
#   bench/cuda_vs_torch.sh BERTH_BINARY OUTDIR [MODELS] [--batch N]
set -u
berth=$1 out=$2 models=${3:-bert_base,gpt2_small,resnet50}
batch=1
if [ "${4:-}" = "--batch" ]; then batch=${5:?--batch needs a number}; fi
precisions=${PRECISIONS:-fp32 tf32 bf16}
iters=${ITERS:-200}
mkdir -p "$out"
# shellcheck disable=SC2086
python3 "$(dirname "$0")/cuda_vs_torch.py" "$out/models" --only "$models" --batch "$batch" ${TORCH_ARGS:-} | tee "$out/torch.jsonl"
for m in $(echo "$models" | tr , ' '); do
	f="$out/models/$m.onnx"
	[ -f "$f" ] || continue
	for p in $precisions; do
		BERTH_CUDA_PRECISION=$p "$berth" bench "$f" --device cuda --iters "$iters" --warmup 20 --json > "$out/berth_${p}_$m.json" 2> "$out/berth_${p}_$m.err"
		echo "$m batch $batch berth-$p: $(tr -d '\n ' < "$out/berth_${p}_$m.json" | head -c 400) $(head -c 300 "$out/berth_${p}_$m.err")"
		if [ -f "$out/models/$m.io" ]; then # parity with PyTorch's fp32 outputs on the same input
			rm -rf "$out/run_${p}_$m"
			# shellcheck disable=SC2046
			BERTH_CUDA_PRECISION=$p "$berth" run "$f" --device cuda --output-dir "$out/run_${p}_$m" $(sed 's/\([^ ]*\)/--input \1/g' "$out/models/$m.io") > /dev/null 2> "$out/run_${p}_$m.err" &&
				printf '%s ' "$p" && python3 "$(dirname "$0")/cuda_vs_torch.py" --compare "$out/models" "$m" "$out/run_${p}_$m" || head -c 300 "$out/run_${p}_$m.err"
			rm -rf "$out/run_${p}_$m"
		fi
	done
done
