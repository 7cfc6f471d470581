# tools.sh — what bench/compare_ort.sh, bench/parity_ort.sh and
# bench/compare_llama.sh share, sourced by each before it reads its flags.
#
# ensure_ort NAME installs the pinned ONNX Runtime (the npm package
# onnxruntime-node, ORT_VERSION) into $ort_dir unless it is there already,
# and sets ort_pkg to its package.json;
# ensure_berth NAME builds berth into $work/berth unless $berth names a
# binary. NAME starts their messages; both use the caller's die, as
# posint does.

ORT_VERSION=1.30.0

# posint FLAG VALUE MIN dies (the caller's die) unless VALUE is an
# integer of at least MIN.
posint() {
	[[ $2 =~ ^[0-9]+$ ]] && (($2 >= $3)) || die "$1 wants an integer ≥ $3, not '$2'"
}

# usage prints the script's header comment and exits with $1 (0).
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit "${1:-0}"
}

ensure_ort() {
	local name=$1 tmp
	ort_pkg="$ort_dir/node_modules/onnxruntime-node/package.json"
	have_ort() {
		[[ -f $ort_pkg ]] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$ort_pkg" "$ORT_VERSION"
	}
	have_ort && return 0
	command -v npm >/dev/null || die "npm is missing; it installs onnxruntime-node"
	echo "$name: installing onnxruntime-node@$ORT_VERSION into $ort_dir" >&2
	mkdir -p "$(dirname "$ort_dir")"
	tmp=$(mktemp -d "$(dirname "$ort_dir")/install.XXXXXX")
	# --ignore-scripts: the package's install script downloads CUDA pieces;
	# the CPU library ships inside the package.
	if ! (cd "$tmp" && npm install --ignore-scripts --no-audit --no-fund --no-save --loglevel=error \
		"onnxruntime-node@$ORT_VERSION" >&2); then
		rm -rf "$tmp"
		die "npm install onnxruntime-node@$ORT_VERSION failed"
	fi
	rm -rf "$ort_dir"
	mv "$tmp" "$ort_dir"
	have_ort || die "onnxruntime-node@$ORT_VERSION did not install into $ort_dir"
}

ensure_berth() {
	local name=$1
	if [[ -z $berth ]]; then
		command -v go >/dev/null || die "go is missing; build berth or pass --berth BINARY"
		echo "$name: building berth" >&2
		(cd "$repo" && CGO_ENABLED=0 go build -o "$work/berth" ./cmd/berth) || die "go build ./cmd/berth failed"
		berth="$work/berth"
	fi
	[[ -x $berth ]] || die "berth binary $berth is not executable"
}
