#!/usr/bin/env bash
# Benchmark RMQ against hibiken/asynq and adjust/rmq on a private redis-server.
#
# Usage:
#   scripts/bench.sh [--rounds N] [--n MESSAGES] [--scenarios a,b,...] [--systems a,b,...]
#                    [--port P] [--aof] [--out FILE] [-- EXTRA rmqbench FLAGS...]
#
#   --rounds N      interleaved rounds (default 3; at least 3 for published figures)
#   --n MESSAGES    messages per scenario (default 100000)
#   --scenarios     comma list of produce,consume,punctuality,memory,idle,merge,scaling
#                   (default: all)
#   --systems       comma list of rmq,asynq,adjust,bare (default: all)
#   --port P        port of the private redis-server (default 16400)
#   --aof           run redis with "appendonly yes, appendfsync everysec"
#                   (default: no persistence: --save "" --appendonly no)
#   --out FILE      also write the markdown report to FILE (e.g. bench/RESULTS.md)
#   everything after "--" goes to the Go program unchanged (see: go run ./cmd/rmqbench -h)
#
# What it does: installs redis-server/redis-tools with apt-get if they are missing, starts
# one redis-server on 127.0.0.1:P in a temporary directory, builds and runs
# bench/cmd/rmqbench against it, and stops exactly the redis-server PID it started (also on
# Ctrl-C or error). The markdown report goes to stdout; progress goes to stderr.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly ROOT

ROUNDS=3
N=100000
SCENARIOS=""
SYSTEMS=""
PORT=16400
AOF=0
OUT=""
EXTRA=()

say() { printf '[bench] %s\n' "$*" >&2; }
die() {
	say "ERROR: $*"
	exit 1
}

while (($# > 0)); do
	case $1 in
	--rounds) ROUNDS=${2:?--rounds needs a value}; shift 2 ;;
	--n) N=${2:?--n needs a value}; shift 2 ;;
	--scenarios) SCENARIOS=${2:?--scenarios needs a value}; shift 2 ;;
	--systems) SYSTEMS=${2:?--systems needs a value}; shift 2 ;;
	--port) PORT=${2:?--port needs a value}; shift 2 ;;
	--aof) AOF=1; shift ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

# --- redis-server --------------------------------------------------------------------

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
	say "installing redis-server and redis-tools with apt-get"
	apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >&2 ||
		die "apt-get install redis-server redis-tools failed"
fi

if redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1; then
	die "something already answers on 127.0.0.1:$PORT; pick another --port"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rmqbench.XXXXXX")
REDIS_PID=""

# proc_state PID: the one-letter state of PID, or nothing once it is gone. A zombie
# that PID 1 has not reaped yet still answers kill -0, so look at /proc instead.
proc_state() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	printf '%s' "${stat%% *}"
}

alive() {
	local s
	s=$(proc_state "$1")
	[[ -n $s && $s != Z && $s != X ]]
}

stop_redis() {
	[[ -n $REDIS_PID ]] || return 0
	local pid=$REDIS_PID
	REDIS_PID=""
	if alive "$pid"; then
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			say "redis-server $pid did not stop in 5 s; SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	say "stopped redis-server (pid $pid)"
}

cleanup() {
	stop_redis
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PERSIST=(--save "" --appendonly no)
if ((AOF)); then
	PERSIST=(--save "" --appendonly yes --appendfsync everysec)
fi

redis-server --port "$PORT" --bind 127.0.0.1 --dir "$WORK" --daemonize no \
	--logfile "$WORK/redis.log" "${PERSIST[@]}" &
REDIS_PID=$!

for _ in $(seq 1 100); do
	redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 && break
	alive "$REDIS_PID" || die "redis-server exited: $(tail -5 "$WORK/redis.log" 2>/dev/null)"
	sleep 0.05
done
redis-cli -h 127.0.0.1 -p "$PORT" ping >/dev/null 2>&1 || die "redis-server did not answer on port $PORT"
say "redis-server $(redis-server --version | awk '{print $3}') pid $REDIS_PID on 127.0.0.1:$PORT (aof=$AOF)"

# --- the benchmark ---------------------------------------------------------------------

COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$ROOT" status --porcelain --untracked-files=no -- . ':!bench' ':!scripts/bench.sh' 2>/dev/null) ]]; then
	COMMIT="$COMMIT+dirty"
fi

BIN="$WORK/rmqbench"
say "building bench/cmd/rmqbench"
(cd "$ROOT/bench" && GOFLAGS=-mod=mod go build -o "$BIN" ./cmd/rmqbench) || die "build failed"

ARGS=(-redis "127.0.0.1:$PORT" -rounds "$ROUNDS" -n "$N" -commit "$COMMIT")
[[ -n $SCENARIOS ]] && ARGS+=(-scenarios "$SCENARIOS")
[[ -n $SYSTEMS ]] && ARGS+=(-systems "$SYSTEMS")
ARGS+=("${EXTRA[@]}")

say "running: rmqbench ${ARGS[*]}"
START=$(date +%s)
if [[ -n $OUT ]]; then
	"$BIN" "${ARGS[@]}" | tee "$WORK/report.md"
	cp "$WORK/report.md" "$OUT"
	say "report written to $OUT"
else
	"$BIN" "${ARGS[@]}"
fi
say "done in $(($(date +%s) - START)) s"
