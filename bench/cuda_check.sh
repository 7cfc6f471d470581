#!/usr/bin/env bash
# cuda_check.sh — one call on the GPU machine: what a change to the CUDA
# backend must show, from binaries built elsewhere (there is no Go there).
#
#   bench/cuda_check.sh BINDIR [SECTION...]
#
# BINDIR holds berth, root.test, cuda.test, llm.test and driver.test
# (CGO_ENABLED=0 go build ./cmd/berth; go test -c of ., ./backend/cuda,
# ./llm and ./backend/cuda/driver). The
# sections, all by default, each under its own time limit:
#
#   tests    the CUDA tests of the three test binaries
#   parity   bench/parity_device.sh over testdata/open (every set), whole table
#   decode   BenchmarkCUDADecode on the 1.1B F16 and Q4_0 files, then
#            bench/cuda_llm.sh (berth generate against torch.compile)
#   shapes   BenchmarkCUDAOpenShapes on ResNet-50 with open batch, height
#            and width within 1×320×320 (seen, parts, new, pairs), then
#            cuda.test's BenchmarkCompileAtShapes (a new shape's compile,
#            session and first runs, part by part)
#   torch    bench/cuda_vs_torch.sh at batch 1 (fp32) with its torch.compile
#            columns: issue 31's first table
#   conv     the implicit-GEMM convolution (BERTH_CUDA_CONV=implicit):
#            its tests, ResNet-50 at batch 32 bf16 with and without it,
#            its outputs against PyTorch's
#   nhwc     channels-last activations and the convolutions' fused
#            epilogues: their tests, ResNet-50 at batch 32 bf16 against
#            PyTorch, with and without them
#   gemv     BenchmarkGemvShapes: the decoding products' kernel at other
#            shapes (warps, rows a warp, loads in flight)
#   attsplit one query's attention split over blocks (BERTH_CUDA_ATTSPLIT):
#            its tests, BenchmarkCachedAttention split and not at five
#            positions, then BenchmarkCUDADecode on the 1.1B Q4_0 file
#            from positions 8 and 700, with and without it, alternating
#   prep     x prepared once a product (BERTH_CUDA_GEMV=prep=1:
#            quantised, or normalised for float rows): the tests with
#            it, then BenchmarkCUDADecode on the 1.1B Q8_0, Q4_0 and F16
#            files without it, with it, and with it at 4 warps of 4 rows,
#            alternating
#   earlyatt the rotations with their cache writes and the attention
#            launched early (BERTH_CUDA_EARLYATT): the tests that run
#            them, then BenchmarkCUDADecode on the 1.1B Q4_0 and F16
#            files from positions 8 and 700, with and without, alternating
#   rope     a step's rotations and cache writes in its query, key and
#            value products (BERTH_CUDA_ROPE): the tests that run them,
#            then BenchmarkCUDADecode on the 1.1B Q4_0 and F16 files with
#            and without, alternating
#   async    the prepared quantised products' chunks copied straight into
#            shared memory (BERTH_CUDA_GEMV=async=1, cp.async): the
#            tests with it, then BenchmarkCUDADecode on the 1.1B Q4_0
#            and Q8_0 files without it and with it at depths 2, 3 and
#            4, alternating; the F16 file with the plain products'
#            loads (ploads) at 4, 6 and 8; the attention writing its
#            output quantised for the product after it
#            (BERTH_CUDA_ATTQ): its tests, then Q4_0 and Q8_0 from
#            positions 8 and 700 with and without (NCU_SPECS="depth=2 async=1,depth=3" with
#            gemvncu after it: the products' registers and times)
#   gemvncu  ncu's registers, blocks a multiprocessor and waves of the
#            Q4_0 step's products under each BERTH_CUDA_GEMV of $NCU_SPECS
#            (prep=0, prep=1, and prep=1 at 4 warps of 4 rows unless set)
#   pairs    bench/parity_device.sh over the pairs listed in $PAIRS, a
#            file of lines "MODEL SETDIR" (models carried to the machine:
#            the npm corpus's Silero VAD and OCR files, say)
#
# The 1.1B files are made in $MODELS (default /tmp/m) and the ResNet-50
# export in $CORPUS (default /tmp/c) where missing. Everything prints to
# stdout: redirect it to a file under $OUT. All five take longer than one
# call may (10 minutes): "tests parity shapes" fit one call, "decode" and
# "torch" one each.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
bin=$(cd "${1:?usage: bench/cuda_check.sh BINDIR [SECTION...]}" && pwd)
shift
sections=${*:-tests parity decode shapes torch}
models=${MODELS:-/tmp/m}
corpus=${CORPUS:-/tmp/c}
cd "$repo" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

# have_models makes the 1.1B files in $models where they are missing,
# a process a type at once, each in a folder of its own (each makes its
# weights itself: three at once take the time of one).
have_models() {
	local t
	for t in f16 q8_0 q4_0; do
		[ -f "$models/llama-1b-$t.gguf" ] ||
			(timeout 300 python3 scripts/gen_llm_models.py --size 1b --out "$models/gen-$t" --types "$t" --no-reference >/dev/null 2>&1 &&
				mv "$models/gen-$t/llama-1b-$t.gguf" "$models/") &
	done
	wait
}

# decode_step TYPE [NAME=VALUE...] prints BenchmarkCUDADecode over 300
# steps of the 1.1B file of TYPE, under the environment given: ns a
# step, then its last metrics (tok/s, launches).
decode_step() {
	local f=$1
	shift
	env "$@" BERTH_CUDA_PROFILE="$models/llama-1b-$f.gguf" timeout 60 "$bin/root.test" -test.run '^$' -test.bench CUDADecode \
		-test.benchtime 300x 2>&1 | grep ^Benchmark | awk '{print $3, $NF, $(NF-1), $(NF-2), $(NF-3)}'
}

# cuda_tests PATTERN runs the tests of cuda.test that PATTERN matches.
cuda_tests() {
	(cd backend/cuda && timeout 200 "$bin/cuda.test" -test.run "$1" 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head)
}

# model_tests [NAME=VALUE...] runs the CUDA tests of llm.test and
# root.test under the environment given.
model_tests() {
	(cd llm && env "$@" timeout 100 "$bin/llm.test" -test.run CUDA 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head | sed 's/^/llm /')
	env "$@" timeout 200 "$bin/root.test" -test.run CUDA 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head | sed 's/^/root /'
}

for s in $sections; do
	echo "=== $s"
	case $s in
	tests)
		(cd backend/cuda && timeout 300 "$bin/cuda.test" 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head -20)
		(cd llm && timeout 150 "$bin/llm.test" -test.run CUDA 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head -20)
		timeout 200 "$bin/root.test" -test.run CUDA 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)|rel L2' | head -30
		;;
	parity)
		pairs=()
		for d in testdata/open/*/set_*; do pairs+=("$(dirname "$d")/model.onnx=$d"); done
		timeout 120 bench/parity_device.sh --berth "$bin/berth" "${pairs[@]}" 2>&1 | tail -40
		;;
	decode)
		have_models
		for f in f16 q4_0; do
			BERTH_CUDA_PROFILE="$models/llama-1b-$f.gguf" timeout 100 "$bin/root.test" -test.run '^$' -test.bench CUDADecode \
				-test.benchtime 300x -test.v 2>&1 | grep -E 'a step|^Benchmark' | sed "s/^/$f /"
		done
		timeout 300 bench/cuda_llm.sh --dir "$models" --berth "$bin/berth" 2>&1 | tail -12
		;;
	shapes)
		[ -f "$corpus/resnet50_open.onnx" ] ||
			timeout 120 python3 scripts/gen_corpus.py "$corpus" --only resnet50_open >/dev/null 2>&1
		# PROFDIR, where set, takes a CPU profile of the benchmark
		# (go tool pprof -top root.test PROFDIR/shapes.prof).
		BERTH_CUDA_OPEN="$corpus/resnet50_open.onnx" BERTH_CUDA_OPEN_BOUND=batch=1,height=320,width=320 \
			timeout 150 "$bin/root.test" -test.run '^$' -test.bench CUDAOpenShapes -test.benchtime 20x \
			${PROFDIR:+-test.cpuprofile "$PROFDIR/shapes.prof"} 2>&1 | grep -E '^Benchmark|FAIL|panic'
		(cd backend/cuda && timeout 100 "$bin/cuda.test" -test.run '^$' -test.bench CompileAtShapes -test.benchtime 50x 2>&1 |
			grep -E '^Benchmark|FAIL|panic')
		;;
	torch)
		PRECISIONS=fp32 timeout 500 bench/cuda_vs_torch.sh "$bin/berth" /tmp/cvt 2>&1 | grep -v '^$' | tail -20
		;;
	conv)
		# The implicit-GEMM convolution (iconv) against im2col and cuBLAS:
		# its GPU tests, then ResNet-50 at batch 32 in bf16 with and
		# without BERTH_CUDA_CONV=implicit, alternating, and its outputs
		# against PyTorch's.
		(cd backend/cuda && timeout 120 "$bin/cuda.test" -test.run 'ImplicitConv|Attend|FusedMatches' 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)|rel L2' | head -20)
		PRECISIONS=bf16 ITERS=20 TORCH_ARGS=--no-compile timeout 200 bench/cuda_vs_torch.sh "$bin/berth" /tmp/cvt32 resnet50 --batch 32 2>&1 | grep -E 'berth-bf16|parity' | cut -c1-200
		for r in 1 2; do
			for v in im2col implicit; do
				echo "$v $(BERTH_CUDA_CONV=$v BERTH_CUDA_PRECISION=bf16 "$bin/berth" bench /tmp/cvt32/models/resnet50.onnx --device cuda --iters 100 --warmup 20 --json | grep median_ms)"
			done
		done
		BERTH_CUDA_CONV=implicit BERTH_CUDA_PRECISION=bf16 "$bin/berth" run /tmp/cvt32/models/resnet50.onnx --device cuda --output-dir /tmp/cvt32/run_implicit \
			$(sed 's/\([^ ]*\)/--input \1/g' /tmp/cvt32/models/resnet50.io) >/dev/null &&
			python3 bench/cuda_vs_torch.py --compare /tmp/cvt32/models resnet50 /tmp/cvt32/run_implicit
		;;
	nhwc)
		# Channels-last activations between cuDNN's convolutions and
		# their fused epilogues: the tests that run them, ResNet-50 at
		# batch 32 bf16 against PyTorch's outputs, and its time with and
		# without each (BERTH_CUDA_NHWC=0, BERTH_CUDA_CONVACT=0),
		# alternating.
		(cd backend/cuda && timeout 120 "$bin/cuda.test" -test.run 'DNN|NHWC|FusedMatches|ZeroAllocs|HalfPrecision' -test.v 2>&1 |
			grep -E '^(--- FAIL|FAIL|PASS|ok|panic)|resnet|bottleneck' | head -30)
		(cd backend/cuda/driver && timeout 60 "$bin/driver.test" -test.run 'DNNConv' -test.v 2>&1 | grep -E '^(--- |FAIL|PASS|ok|panic)|NHWC' | head -20)
		PRECISIONS=bf16 ITERS=50 TORCH_ARGS=--no-compile timeout 200 bench/cuda_vs_torch.sh "$bin/berth" /tmp/cvt32 resnet50 --batch 32 2>&1 | grep -E 'berth-bf16|parity' | cut -c1-240
		for r in 1 2; do
			for v in "1 1" "1 0" "0 0"; do
				set -- $v
				echo "nhwc=$1 convact=$2 $(BERTH_CUDA_NHWC=$1 BERTH_CUDA_CONVACT=$2 BERTH_CUDA_PRECISION=bf16 "$bin/berth" bench /tmp/cvt32/models/resnet50.onnx \
					--device cuda --iters 100 --warmup 20 --json | grep median_ms)"
			done
		done
		;;
	gemv)
		# The decoding products' kernel compiled with other shapes
		# (warps, rows a warp, loads in flight): which one gemv should be.
		(cd backend/cuda && timeout 400 "$bin/cuda.test" -test.run '^$' -test.bench GemvShapes -test.benchtime 200x 2>&1 |
			grep -E '^Benchmark|FAIL|panic' | sed 's/BenchmarkGemvShapes\///' | awk '{print $1, $(NF-1), $NF, $(NF-3)}')
		;;
	attsplit)
		(cd backend/cuda && timeout 120 "$bin/cuda.test" -test.run 'CachedAttention|SplitAttention|AttentionSplits|ZeroAllocs' 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head)
		(cd llm && timeout 100 "$bin/llm.test" -test.run CUDA 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head | sed 's/^/llm /')
		(cd backend/cuda && timeout 120 "$bin/cuda.test" -test.run '^$' -test.bench CachedAttention 2>&1 | grep -E '^Benchmark' | awk '{print $1, $3, $4, $5, $6}')
		have_models
		for from in 8 700; do
			for on in 1 0 1 0; do
				echo "q4_0 from=$from attsplit=$on $(decode_step q4_0 BERTH_CUDA_ATTSPLIT=$on BERTH_CUDA_PROFILE_FROM=$from)"
			done
		done
		;;
	prep)
		(cd backend/cuda && BERTH_CUDA_GEMV=prep=1 timeout 300 "$bin/cuda.test" 2>&1 | grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head -20 | sed 's/^/prep=1 /')
		model_tests BERTH_CUDA_GEMV=prep=1 | sed 's/^/prep=1 /'
		have_models
		for f in q8_0 q4_0 f16; do
			for p in prep=0 prep=1 prep=1,warps=4,qrows=4 prep=0 prep=1 prep=1,warps=4,qrows=4; do
				echo "$f $p $(decode_step $f BERTH_CUDA_GEMV=$p)"
			done
		done
		;;
	gemvncu)
		# Registers, blocks a multiprocessor and waves of a Q4_0 step's
		# products (ncu, clocks as they are), at the default shape and
		# under prep, to see which launches take more than one wave.
		have_models
		for spec in ${NCU_SPECS:-prep=0 prep=1 prep=1,warps=4,qrows=4}; do
			echo "-- $spec"
			BERTH_CUDA_GEMV=$spec BERTH_CUDA_PROFILE="$models/llama-1b-q4_0.gguf" timeout 100 ncu --clock-control none --csv \
				--metrics launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__waves_per_multiprocessor,gpu__time_duration.sum \
				-k regex:gemv -c 10 "$bin/root.test" -test.run '^$' -test.bench CUDADecode -test.benchtime 1x 2>/dev/null |
				python3 -c '
import csv, sys, collections
rows = [r for r in csv.reader(sys.stdin) if len(r) > 10]
ix = {h: i for i, h in enumerate(rows[0])}
k = collections.OrderedDict()
for r in rows[1:]:
    d = k.setdefault(r[ix["ID"]], {"name": r[ix["Kernel Name"]], "grid": r[ix["Grid Size"]]})
    d[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
for d in k.values():
    print(d["name"], d["grid"], "registers", d.get("launch__registers_per_thread"), "blocks/SM (registers, shared)",
          d.get("launch__occupancy_limit_registers"), d.get("launch__occupancy_limit_shared_mem"),
          "waves", d.get("launch__waves_per_multiprocessor"), "ns", d.get("gpu__time_duration.sum"))'
		done
		;;
	async)
		(cd backend/cuda && BERTH_CUDA_GEMV=async=1,depth=3 timeout 150 "$bin/cuda.test" -test.run 'Products|FoldNorm|FoldRope|PackedMatMul|ZeroAllocs|FoldDecoder|Gemv' 2>&1 |
			grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head | sed 's/^/async=1 /')
		model_tests BERTH_CUDA_GEMV=async=1,depth=3 | sed 's/^/async=1 /'
		(cd backend/cuda && BERTH_CUDA_GEMV=ploads=8 timeout 100 "$bin/cuda.test" -test.run 'Products|FoldRope|ZeroAllocs|Gemv' 2>&1 |
			grep -E '^(--- FAIL|FAIL|PASS|ok|panic)' | head | sed 's/^/ploads=8 /')
		have_models
		for f in q4_0 q8_0; do
			for r in 1 2; do
				for spec in async=0,depth=2 async=1,depth=2 async=1,depth=3 async=1,depth=4; do
					echo "$f $spec $(decode_step $f BERTH_CUDA_GEMV=$spec)"
				done
			done
		done
		for r in 1 2; do
			for spec in ploads=4 ploads=6 ploads=8; do
				echo "f16 $spec $(decode_step f16 BERTH_CUDA_GEMV=$spec)"
			done
		done
		# The attention's output quantised by the attention (BERTH_CUDA_ATTQ).
		cuda_tests 'QuantisedByAttention|QuantiseInAttention|CachedAttention|SplitAttention' | sed 's/^/attq /'
		for f in q4_0 q8_0; do
			for from in 8 700; do
				for on in 1 0 1 0; do
					echo "$f from=$from attq=$on $(decode_step $f BERTH_CUDA_ATTQ=$on BERTH_CUDA_PROFILE_FROM=$from)"
				done
			done
		done
		;;
	earlyatt)
		cuda_tests 'CachedAttention|SplitAttention|FoldCacheWrites|FoldDecoderSteps|ZeroAllocs|Products|FoldNorm'
		model_tests
		have_models
		for f in q4_0 f16; do
			for from in 8 700; do
				for on in 1 0 1 0; do
					echo "$f from=$from earlyatt=$on $(decode_step $f BERTH_CUDA_EARLYATT=$on BERTH_CUDA_PROFILE_FROM=$from)"
				done
			done
		done
		;;
	rope)
		cuda_tests 'FoldRope|FoldDecoderSteps|FoldCacheWrites|CachedAttention|ZeroAllocs|Products|FoldNorm'
		model_tests
		have_models
		for f in q4_0 f16; do
			for on in 1 0 1 0; do
				echo "$f rope=$on $(decode_step $f BERTH_CUDA_ROPE=$on)"
			done
		done
		;;
	pairs)
		list=()
		while read -r model set; do
			[ -n "$model" ] && list+=("$model=$set")
		done < "${PAIRS:?pairs needs PAIRS, a file of lines MODEL SETDIR}"
		timeout 300 bench/parity_device.sh --berth "$bin/berth" "${list[@]}" 2>&1 | tail -40
		;;
	*)
		echo "unknown section $s (tests, parity, decode, shapes, torch, conv, nhwc, gemv, attsplit, prep, async, earlyatt, rope, gemvncu, pairs)"
		;;
	esac
done
