#!/usr/bin/env bash
# The core module's race-enabled test binaries, built once and run one package at a time.
#
#   scripts/testbins.sh build DIR      go test -race -c of every package of ./... that has
#                                      tests, into DIR; writes DIR/list (one line per package:
#                                      import path, directory, binary) and DIR/rc (0 if every
#                                      binary was built)
#   scripts/testbins.sh run DIR TIMEOUT [ARGS]
#                                      runs each binary of DIR/list in its package directory,
#                                      in the list's order, with -test.timeout=TIMEOUT (Ns or
#                                      Nm) and ARGS, as go test -p 1 -timeout TIMEOUT ./... would:
#                                      the output of a package is printed only when it fails,
#                                      then "ok" or "FAIL" with its time; exits 1 if any
#                                      package failed. A package whose TestMain checks for
#                                      goroutines left behind runs without the race
#                                      runtime's exit sleep (leak_checked, below)
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

# leak_checked DIR: whether the package in DIR ends its run with testenv.VerifyTestMain, which
# fails it if a test left a goroutine running. The race runtime sleeps a second at each
# process's exit so that goroutines still running can report a race. In such a package, and
# in the worker processes its tests start from the same binary (which run the same TestMain),
# none is left at exit but go-redis's redial sleeper, which the check lets be; so
# GORACE=atexit_sleep_ms=0 drops the sleep there: about 1 s per binary and per worker
# process waited for (every package of the core checks: 18 s, and 2-3 s more in test/crash
# and test/flow).
leak_checked() {
	grep -qs 'testenv\.VerifyTestMain(' "$1"/*_test.go
}

run() {
	local dir=$1 timeout=$2 kill_after pkg pdir bin gorace out t0 ms status rc=0
	shift 2
	# go test's last-ditch kill: a minute after the binary's own timeout would have fired
	case $timeout in
	*m) kill_after=$((${timeout%m} * 60 + 60)) ;;
	*s) kill_after=$((${timeout%s} + 60)) ;;
	esac
	out=$dir/run.out # each package's output, kept for a failure
	while read -r pkg pdir bin; do
		t0=$(now_ms)
		gorace=${GORACE:-}
		if leak_checked "$pdir"; then
			gorace="${gorace:+$gorace }atexit_sleep_ms=0"
		fi
		# As go test runs a test binary: in its package's directory, with -test.paniconexit0,
		# and the last-ditch kill.
		(cd "$pdir" && GORACE=$gorace exec timeout --foreground --kill-after=30s "${kill_after}s" \
			"$bin" -test.paniconexit0 -test.timeout="$timeout" "$@") </dev/null >"$out" 2>&1
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
	[[ -n ${2:-} && -s ${2:-}/list && ${3:-} =~ ^[0-9]+[ms]$ ]] || {
		echo "usage: $0 run DIR TIMEOUT [ARGS] (DIR/list from a build; TIMEOUT as 12m or 90s)" >&2
		exit 2
	}
	run "${@:2}"
	;;
*)
	echo "usage: $0 build DIR | run DIR TIMEOUT [ARGS]" >&2
	exit 2
	;;
esac
