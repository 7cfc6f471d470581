# tools.sh — what bench/compare_ort.sh, bench/parity_ort.sh and
# bench/compare_llama.sh share, sourced by each before it reads its flags.
#
# ensure_ort NAME installs the pinned ONNX Runtime (the npm package
# onnxruntime-node, ORT_VERSION) into $ort_dir unless it is there already,
# and sets ort_pkg to its package.json;
# ensure_berth NAME builds berth into $work/berth unless $berth names a
# binary. NAME starts their messages; both die (below) on failure, as
# posint and need do.

ORT_VERSION=1.30.0

# die prints its words to stderr after the script's name (its file name
# without .sh) and exits with $die_status (1 unless the script sets it).
die() {
	echo "$(basename "$0" .sh): $*" >&2
	exit "${die_status:-1}"
}

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

# need TOOL... dies unless each tool is there: time (GNU time at
# /usr/bin/time), node, or onnx ($PYTHON with numpy and onnx).
need() {
	local tool
	for tool; do
		case $tool in
		time) [[ -x /usr/bin/time ]] || die "GNU time is missing at /usr/bin/time (Debian: apt-get install time)" ;;
		node) command -v node >/dev/null || die "node is missing (Debian: apt-get install nodejs npm)" ;;
		onnx)
			"$PYTHON" -c 'import numpy, onnx' 2>/dev/null ||
				die "$PYTHON lacks numpy or onnx (Debian: apt-get install python3-numpy python3-onnx; or set PYTHON)"
			;;
		esac
	done
}

# make_work NAME TEMPLATE sets repo (the checkout), here (its bench) and
# work, a new temporary directory named after TEMPLATE that is removed on
# exit unless $keep is set (then NAME says where it is).
make_work() {
	work_owner=$1
	repo=$(cd "$(dirname "$0")/.." && pwd)
	here="$repo/bench"
	work=$(mktemp -d -t "$2")
	trap cleanup_work EXIT
}

cleanup_work() {
	if [[ -n $keep ]]; then
		echo "$work_owner: work files kept in $work" >&2
	else
		rm -rf "$work"
	fi
}

# revision prints the checkout's commit, with "+ uncommitted changes"
# where the tree differs from it ("unknown" outside git).
revision() {
	local rev
	rev=$(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)
	if [[ -n $(cd "$repo" && git --no-optional-locks status --porcelain 2>/dev/null | head -1) ]]; then rev+=" + uncommitted changes"; fi
	echo "$rev"
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
