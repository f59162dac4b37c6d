#!/usr/bin/env bash
# The one command that runs every check and test of the project.
#
#   scripts/test.sh                    install missing servers and chromium, start real Redis,
#                                      Redis Cluster and a ZooKeeper ensemble (scripts/servers.sh)
#                                      while the test binaries build in the background,
#                                      then gofmt -l, go vet ./..., go test -race ./..., and go vet
#                                      and go test -race in each extra module (EXTRA_MODULES below);
#                                      the vets and the extra modules' builds run at nice 19 beside
#                                      the core tests
#   scripts/test.sh -run TestFoo ./... same, but the arguments replace ./... for go test of the
#                                      core module, and the extra modules are left out
#   scripts/test.sh --short [ARGS]     no servers: gofmt, go vet, go test -short -race ./..., and
#                                      the extra modules with -short (what needs servers skips)
#
# With servers, RMQ_REQUIRE_SERVERS=1 is exported (and CI is passed through unchanged), so a
# test whose server is missing fails instead of skipping. The servers live in a temporary
# directory that is stopped and removed on exit; set RMQ_KEEP_SERVERS_DIR=1 to keep its logs.
# Exits with go test's status (or 1 if an earlier step fails).

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

say() { printf '==> %s\n' "$*" >&2; }
die() {
	printf '==> ERROR: %s\n' "$*" >&2
	exit 1
}

# Modules of their own inside the repository, tested after the core with the same servers:
# they carry the dependencies the core must not (client_golang, chromedp; the benchmark
# suite's peers, asynq and adjust/rmq, which has no tests but is vetted and built).
EXTRA_MODULES=(rmqprom rmqweb/browsertest bench)

# Test artifacts (the dashboard's screenshots) are kept here.
export RMQ_ARTIFACTS_DIR="${RMQ_ARTIFACTS_DIR:-$ROOT/artifacts}"

SHORT=0
if [[ ${1:-} == --short ]]; then
	SHORT=1
	shift
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
	export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || die "go not found (expected in PATH or /usr/local/go/bin)"

# --- phase timing ------------------------------------------------------------------------

now_ms() { date +%s%3N; }
T_START=$(now_ms)
PHASE_NAMES=()
PHASE_MS=()

# timed NAME CMD...: run CMD, record its wall time under NAME, return its status.
timed() {
	local name=$1 t0 rc=0
	shift
	t0=$(now_ms)
	"$@" || rc=$?
	PHASE_NAMES+=("$name")
	PHASE_MS+=($(($(now_ms) - t0)))
	return "$rc"
}

print_times() {
	local i ms
	printf '==> wall time per phase\n' >&2
	for i in "${!PHASE_NAMES[@]}"; do
		ms=${PHASE_MS[$i]}
		printf '    %-24s %4d.%01d s\n' "${PHASE_NAMES[$i]}" $((ms / 1000)) $((ms % 1000 / 100)) >&2
	done
	ms=$(($(now_ms) - T_START))
	printf '    %-24s %4d.%01d s\n' total $((ms / 1000)) $((ms % 1000 / 100)) >&2
}

# --- dependencies ------------------------------------------------------------------------

install_missing() {
	local pkgs=()
	if ((!SHORT)); then
		command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
		command -v redis-cli >/dev/null 2>&1 || pkgs+=(redis-tools)
		[[ -f /usr/share/java/zookeeper.jar && -f /usr/share/java/zookeeper-jute.jar &&
			-f /usr/share/java/slf4j-api.jar ]] || pkgs+=(zookeeper)
		command -v java >/dev/null 2>&1 || pkgs+=(default-jre-headless)
		# the dashboard's browser test (rmqweb/browsertest) drives a headless Chromium
		command -v chromium >/dev/null 2>&1 || pkgs+=(chromium)
	fi
	# -race needs cgo, hence a C compiler.
	if ! command -v "$(go env CC 2>/dev/null || echo gcc)" >/dev/null 2>&1; then
		pkgs+=(gcc libc6-dev)
	fi
	((${#pkgs[@]})) || return 0

	local sudo=()
	if [[ $(id -u) != 0 ]]; then
		command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: ${pkgs[*]}"
		sudo=(sudo)
	fi
	say "installing: ${pkgs[*]}"
	# (errexit is off inside functions run by timed, hence the explicit checks)
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
		update -q || die "apt-get update failed"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
		install -y -q --no-install-recommends "${pkgs[@]}" || die "apt-get install failed"
}

# --- servers -----------------------------------------------------------------------------

SERVERS_DIR=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n ${BUILD_PID:-} ]]; then
		kill -- "-$BUILD_PID" 2>/dev/null || true # its process group (setsid)
	fi
	if [[ -n ${PREP_PID:-} ]]; then
		kill -- "-$PREP_PID" 2>/dev/null || true # its process group (setsid)
	fi
	[[ -n ${PREP_DIR:-} ]] && rm -rf "$PREP_DIR"
	[[ -n ${BIN_DIR:-} ]] && rm -rf "$BIN_DIR"
	if [[ -n $SERVERS_DIR ]]; then
		timed "servers stop" bash "$ROOT/scripts/servers.sh" stop "$SERVERS_DIR" || true
		if [[ ${RMQ_KEEP_SERVERS_DIR:-0} == 1 ]]; then
			say "kept $SERVERS_DIR (server logs in $SERVERS_DIR/logs)"
		else
			rm -rf "$SERVERS_DIR"
		fi
	fi
	print_times
	if ((rc == 0)); then say "PASS"; else say "FAIL (exit status $rc)"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start_servers() {
	SERVERS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rmq-test.XXXXXX") || die "mktemp failed"
	bash "$ROOT/scripts/servers.sh" start "$SERVERS_DIR"
}

# --- checks ------------------------------------------------------------------------------

check_gofmt() {
	local out
	out=$(gofmt -l .) || return 1
	if [[ -n $out ]]; then
		printf '==> gofmt: these files need formatting (run gofmt -w):\n%s\n' "$out" >&2
		return 1
	fi
}

# early_build: on a run with servers, the core's test binaries are built in the
# background while the servers are installed and started (apt-get waits on the
# network and dpkg, the build mostly on the CPU; on a fresh machine it also
# fetches the modules), then waited for before the tests. At nice 10, so that
# the servers' start-up comes first when both want the CPU. It needs a C
# compiler (-race); without one, the build waits until the install is done.
#
# On a full run (./...) it writes the binaries themselves (go test -c, in
# scripts/testbins.sh), which the serial run then executes one package at a time:
# go test -p 1 would link each binary again, one at a time, before running it.
# With other arguments it only fills the build cache (go test -run '^$').
# Either way its output is dropped: a failed prebuild falls back to go test,
# which reports any build failure itself.
BUILD_PID=
BIN_DIR=
make_bin_dir() {
	BIN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rmq-bin.XXXXXX") || die "mktemp failed"
}
early_build() {
	command -v "$(go env CC 2>/dev/null || echo gcc)" >/dev/null 2>&1 || return 0
	if ((FULL)); then
		make_bin_dir
		say "go test -race -c ./... (builds the test binaries, beside the install)"
		setsid nice -n 10 bash "$ROOT/scripts/testbins.sh" build "$BIN_DIR" >/dev/null 2>&1 &
	else
		say "go test -race -count=1 $* -run '^\$' (builds the test binaries, beside the install)"
		# -run '^$' last, so that it wins over a -run among the arguments
		setsid nice -n 10 go test -race -count=1 "$@" -run '^$' >/dev/null 2>&1 &
	fi
	BUILD_PID=$!
}

args=("$@")
((${#args[@]})) || args=(./...)
FULL=0
if ((${#args[@]} == 1)) && [[ ${args[0]} == ./... ]]; then FULL=1; fi
if ((!SHORT)); then early_build "${args[@]}"; fi

timed install install_missing

if ((SHORT)); then
	unset RMQ_REQUIRE_SERVERS
else
	timed "servers start" start_servers
	# shellcheck source=/dev/null
	source "$SERVERS_DIR/env"
	export RMQ_REQUIRE_SERVERS=1 # CI, if set, is passed through as the environment gave it
	say "servers: redis $RMQ_REDIS_ADDR, cluster $RMQ_CLUSTER_ADDRS, zookeeper $RMQ_ZK_SERVERS"
fi

say "gofmt -l ."
timed gofmt check_gofmt

PREP_PID=
PREP_DIR=

if ! ((FULL && !SHORT)); then
	say "go vet ./..."
	timed "go vet" go vet ./...
fi

# A full run with servers does the work that needs no server at the lowest CPU
# priority beside the core tests, which spend much of their time waiting on
# timers and processes: go vet of the core module, and go vet and the test
# build of each extra module (their tests then run after the core's). nice 19
# leaves the tests the CPU whenever they want it. It starts once the core's
# test binaries are built, so as not to build the same packages twice at once.
start_prep() {
	PREP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rmq-prep.XXXXXX") || die "mktemp failed"
	say "go vet ./... and the extra modules' vet and test build, at nice 19 beside the tests"
	setsid nice -n 19 bash -c '
		dir=$1; shift
		go vet ./... >"$dir/vet-core.log" 2>&1
		echo $? >"$dir/vet-core.rc"
		for mod in "$@"; do
			name=${mod//\//_}
			(cd "$mod" && go vet ./...) >"$dir/vet-$name.log" 2>&1
			echo $? >"$dir/vet-$name.rc"
			(cd "$mod" && go test -race -count=1 -run "^\$" ./...) >/dev/null 2>&1 || true
		done' prep "$PREP_DIR" "${EXTRA_MODULES[@]}" &
	PREP_PID=$!
}

# prep_vet NAME: the outcome of the background go vet of NAME (core or a module
# directory), with its output when it failed.
prep_vet() {
	local name=${1//\//_} rc
	rc=$(cat "$PREP_DIR/vet-$name.rc" 2>/dev/null || echo missing)
	if [[ $rc != 0 ]]; then
		say "go vet ($1) failed (status $rc):"
		cat "$PREP_DIR/vet-$name.log" >&2 2>/dev/null || true
		return 1
	fi
}

if ((SHORT)); then
	say "go test -short -race -count=1 ${args[*]}"
	test_cmd=(go test -short -race -count=1 "${args[@]}")
else
	# -p 1: packages one at a time, since some tests kill and freeze the shared
	# servers (the ZooKeeper leader) and others must not run across that. Two
	# packages at a time, even paired so that they share no server, made tests
	# that time or count what they wait for fail on two cores (a lease that
	# lapsed, a rate limit and a failover's throughput missed, a moved channel
	# followed late): five of six clean-clone runs failed, each in another test.
	test_timeout=12m # per package
	test_cmd=(go test -race -count=1 -p 1 -timeout "$test_timeout" "${args[@]}")
	# -p 1 also builds one package at a time: build every test binary first, as
	# many at once as there are cores (running none of their tests), so that the
	# serial run finds them built (a full run) or in the build cache.
	# Its output is dropped: the run below reports any build failure itself.
	if [[ -n $BUILD_PID ]]; then
		timed "test build (waited for)" wait "$BUILD_PID" || true
		BUILD_PID=
	elif ((FULL)); then
		make_bin_dir
		say "go test -race -c ./... (builds the test binaries)"
		timed "test build" bash "$ROOT/scripts/testbins.sh" build "$BIN_DIR" >/dev/null 2>&1 || true
	else
		say "go test -race -count=1 ${args[*]} -run '^\$' (builds the test binaries in parallel)"
		timed "test build" go test -race -count=1 "${args[@]}" -run '^$' >/dev/null 2>&1 || true
	fi
	if [[ -n $BIN_DIR && $(cat "$BIN_DIR/rc" 2>/dev/null) == 0 ]]; then
		say "${test_cmd[*]}, as the binaries built above (scripts/testbins.sh run)"
		test_cmd=(bash "$ROOT/scripts/testbins.sh" run "$BIN_DIR" "$test_timeout")
	else
		say "${test_cmd[*]}"
	fi
	if ((FULL)); then start_prep; fi
fi
rc=0
timed "go test" "${test_cmd[@]}" || rc=$?

if [[ -n $PREP_PID ]]; then
	timed "vet (waited for)" wait "$PREP_PID" || true
	PREP_PID=
	if ! prep_vet core; then ((rc)) || rc=1; fi
fi

# module_check DIR: go vet (unless done beside the core tests) and go test -race in
# the module at DIR, with the servers' environment.
module_check() {
	local dir=$1 short=()
	if ((SHORT)); then short=(-short); fi
	if [[ -n $PREP_DIR ]]; then
		prep_vet "$dir" || return 1
	else
		say "($dir) go vet ./..."
		(cd "$ROOT/$dir" && go vet ./...) || return 1
	fi
	say "($dir) go test ${short[*]} -race -count=1 ./..."
	(cd "$ROOT/$dir" && go test "${short[@]}" -race -count=1 -timeout 5m ./...)
}

if ((FULL)); then
	for mod in "${EXTRA_MODULES[@]}"; do
		if ! timed "$mod" module_check "$mod"; then
			((rc)) || rc=1
		fi
	done
fi
exit "$rc"
