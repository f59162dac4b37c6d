#!/usr/bin/env bash
# The core module's race-enabled test binaries, built once and run one package at a time.
#
#   scripts/testbins.sh build DIR      go test -race -c of every package of ./... that has
#                                      tests, into DIR; writes DIR/list (one line per package:
#                                      import path, directory, binary) and DIR/rc (0 if every
#                                      binary was built)
#   scripts/testbins.sh run DIR ARGS   runs each binary of DIR/list in its package directory,
#                                      in the list's order, with ARGS (e.g. -test.timeout=12m),
#                                      as go test -p 1 ./... would: the output of a package is
#                                      printed only when it fails, then "ok" or "FAIL" with its
#                                      time; exits 1 if any package failed
#
# scripts/test.sh uses it for a full run: go test -p 1 links each test binary again, one at a
# time, right before running it, where this builds them all beforehand, beside the install.

set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

now_ms() { date +%s%3N; }

build() {
	local dir=$1 pkg pdir base n
	local -A seen=()
	local -a groups=()
	: >"$dir/list"
	# go test -c -o DIR/ names each binary after the last element of its import path, so
	# packages that share it (rmq and cmd/rmq) go to separate groups, each its own directory.
	while read -r pkg pdir; do
		[[ -n $pkg ]] || continue
		base=${pkg##*/}
		n=${seen[$base]:-0}
		seen[$base]=$((n + 1))
		groups[n]="${groups[n]:-} $pkg"
		mkdir -p "$dir/$n"
		printf '%s %s %s\n' "$pkg" "$pdir" "$dir/$n/$base.test" >>"$dir/list"
	done < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./...)
	[[ -s $dir/list ]] || {
		echo 1 >"$dir/rc"
		return 1
	}

	# One group after another: the first builds every dependency, and the next ones find
	# them in the build cache (two at once would compile the shared ones twice).
	local rc=0
	for n in "${!groups[@]}"; do
		# shellcheck disable=SC2086 # the group is a list of import paths
		go test -race -c -o "$dir/$n/" ${groups[n]} || rc=1
	done
	echo "$rc" >"$dir/rc"
	return "$rc"
}

run() {
	local dir=$1 pkg pdir bin out t0 ms status rc=0
	shift
	while read -r pkg pdir bin; do
		out=$(mktemp "$dir/out.XXXXXX")
		t0=$(now_ms)
		# As go test runs a test binary: in its package's directory, with -test.paniconexit0,
		# and a last-ditch kill a minute after the binary's own timeout would have fired.
		(cd "$pdir" && exec timeout --foreground --kill-after=30s 13m \
			"$bin" -test.paniconexit0 "$@") </dev/null >"$out" 2>&1
		status=$?
		ms=$(($(now_ms) - t0))
		if ((status == 0)); then
			printf 'ok  \t%s\t%d.%03ds\n' "$pkg" $((ms / 1000)) $((ms % 1000))
		else
			cat "$out"
			((status == 124)) && printf '*** Test killed: ran too long.\n'
			printf 'FAIL\t%s\t%d.%03ds\n' "$pkg" $((ms / 1000)) $((ms % 1000))
			rc=1
		fi
		rm -f "$out"
	done <"$dir/list"
	return "$rc"
}

case ${1:-} in
build)
	[[ -n ${2:-} ]] || {
		echo "usage: $0 build DIR" >&2
		exit 2
	}
	build "$2"
	;;
run)
	[[ -n ${2:-} && -s ${2:-}/list ]] || {
		echo "usage: $0 run DIR [ARGS] (DIR/list from a build)" >&2
		exit 2
	}
	dir=$2
	shift 2
	run "$dir" "$@"
	;;
*)
	echo "usage: $0 build DIR | run DIR [ARGS]" >&2
	exit 2
	;;
esac
