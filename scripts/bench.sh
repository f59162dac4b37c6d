#!/usr/bin/env bash
# Benchmark RMQ against hibiken/asynq and adjust/rmq on a private redis-server.
#
# Usage:
#   scripts/bench.sh [--rounds N] [--n MESSAGES] [--scenarios a,b,...] [--systems a,b,...]
#                    [--port P] [--cluster] [--cluster-port BASE] [--aof] [--out FILE]
#                    [-- EXTRA rmqbench FLAGS...]
#
#   --rounds N      interleaved rounds (default 3; at least 3 for published figures)
#   --n MESSAGES    messages per scenario (default 100000)
#   --scenarios     comma list (default: all) of
#                     produce      Send / SendBatch against the peers and raw ZADD yardsticks
#                     consume      drain a backlog of n through the full two-phase path
#                     punctuality  lateness of FixedTime messages
#                     memory       Redis memory per queued message
#                     idle         commands per idle slot, one worker with 1,024 slots
#                     merge        RangeMerge: many sends, one listener call per content
#                     scaling      consume with slots = threads = 1, 4, 16, 64
#                     isolation    a drain beside a topic whose listener blocks or fails
#                     cluster      Send, SendBatch, consume on a private 6-node Redis Cluster
#                                  against the single node (starts the cluster itself)
#                     manyslots    one client on 100 topics x 256 idle slots: start-up,
#                                  idle commands, memory, lateness
#                     backlog      consume behind backlogs of 100k, 1M and 10M (~2 GB of Redis
#                                  memory; sizes: -- -backlog-sizes 100000,300000)
#   --systems       comma list of rmq,asynq,adjust,bare (default: all)
#   --port P        port of the private redis-server (default 16400)
#   --cluster       start the private Redis Cluster even if the cluster scenario is not
#                   selected (it starts whenever it is, including by default)
#   --cluster-port BASE  first port of the cluster: BASE..BASE+5, bus ports +10000 (default
#                   16410; all twelve must be free)
#   --aof           run redis with "appendonly yes, appendfsync everysec"
#                   (default: no persistence: --save "" --appendonly no; the cluster never
#                   persists)
#   --out FILE      also write the markdown report to FILE (e.g. bench/RESULTS.md)
#   everything after "--" goes to the Go program unchanged (see: go run ./cmd/rmqbench -h)
#
# What it does: installs redis-server/redis-tools with apt-get if they are missing, starts
# one redis-server on 127.0.0.1:P in a temporary directory (and, for the cluster scenario,
# six cluster nodes in directories of their own under it), builds and runs
# bench/cmd/rmqbench against them, and stops exactly the redis-server PIDs it started (also
# on Ctrl-C or error). The markdown report goes to stdout; progress goes to stderr. With
# no arguments it runs every scenario, 3 rounds: about 23–30 minutes on a 2-core VM.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
readonly ROOT

ROUNDS=3
N=100000
SCENARIOS=""
SYSTEMS=""
PORT=16400
CLUSTER=0
CLUSTER_PORT=16410
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
	--cluster) CLUSTER=1; shift ;;
	--cluster-port) CLUSTER_PORT=${2:?--cluster-port needs a value}; shift 2 ;;
	--aof) AOF=1; shift ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h | --help) sed -n '2,43p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# shellcheck source=scripts/bench-cluster.sh
source "$ROOT/scripts/bench-cluster.sh"
if [[ -z $SCENARIOS || ,$SCENARIOS, == *,cluster,* ]]; then
	CLUSTER=1
fi

cleanup() {
	cluster_stop
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
if ((CLUSTER)); then
	cluster_start "$WORK" "$CLUSTER_PORT"
fi

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
[[ -n $CLUSTER_ADDRS ]] && ARGS+=(-cluster "$CLUSTER_ADDRS")
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
