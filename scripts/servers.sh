#!/usr/bin/env bash
# Start and stop real Redis, Redis Cluster and ZooKeeper servers on loopback for the
# integration tests. Everything lives under one directory DIR.
#
# Usage:
#   scripts/servers.sh start DIR         start all servers (old state under DIR is wiped)
#   scripts/servers.sh stop DIR          stop exactly the processes recorded under DIR/pids
#   scripts/servers.sh restart-zk DIR N  start ZooKeeper node N (1..3) again, same config/data
#   scripts/servers.sh status DIR        show the recorded processes and whether they run
#
# What "start" runs (all bound to 127.0.0.1):
#   redis standalone  port 16379                      dir DIR/redis/16379
#   redis cluster     ports 17001..17006 (bus +10000) dir DIR/cluster/P, 3 masters + 3 replicas
#   zookeeper node N  (N = 1..3) client port 12180+N, quorum port 12887+N, election port 13887+N,
#                     config DIR/zk/N/zoo.cfg, data DIR/zk/N/data (myid = N)
#
# Files under DIR:
# Every port above moves up by RMQ_PORT_OFFSET (0..900, default 0) when it is set.
#
#   DIR/port-offset         the RMQ_PORT_OFFSET the servers were started with
#   DIR/env                 shell lines to source: RMQ_REDIS_ADDR, RMQ_CLUSTER_ADDRS,
#                           RMQ_ZK_SERVERS, RMQ_SERVERS_DIR (= DIR) and RMQ_SERVERS_SCRIPT
#                           (absolute path of this script, for restart-zk from tests)
#   DIR/pids/redis-P.pid    PID of the redis-server on port P (16379, 17001..17006)
#   DIR/pids/zk-N.pid       PID of the java process of ZooKeeper node N (client port 12180+N).
#                           Tests may SIGSTOP/SIGCONT/SIGKILL it; after a SIGKILL they run
#                           "scripts/servers.sh restart-zk DIR N", which rewrites this file.
#   DIR/pids/NAME.start     start time (field 22 of /proc/PID/stat) of that PID, so that stop
#                           never signals a recycled PID
#   DIR/logs/*.log          server logs (redis-P.log, zk-N.log, cluster-create.log)
#
# stop sends SIGCONT (the process may be frozen), SIGTERM, waits up to 5 s, then SIGKILL, and
# only to PIDs recorded under DIR/pids whose start time and command line still match.
# Not safe to run two commands on the same DIR at the same time.

set -uo pipefail
set +m # background jobs stay in our process group, so "exec setsid" keeps the PID

SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/$(basename "${BASH_SOURCE[0]}")
readonly SCRIPT
# RMQ_PORT_OFFSET (default 0) shifts every port, so several server sets can run side by
# side (for example one per working copy); the other commands read the offset start recorded.
PORT_OFFSET=${RMQ_PORT_OFFSET:-0}
[[ $PORT_OFFSET =~ ^[0-9]+$ && $PORT_OFFSET -le 900 ]] || {
	printf '[servers] ERROR: RMQ_PORT_OFFSET must be 0..900, got %s\n' "$PORT_OFFSET" >&2
	exit 2
}
if [[ ${1:-} != start && -f ${2:-/nonexistent}/port-offset ]]; then
	PORT_OFFSET=$(cat "$2/port-offset")
fi
readonly PORT_OFFSET
readonly REDIS_PORT=$((16379 + PORT_OFFSET))
readonly CLUSTER_PORTS=($((17001 + PORT_OFFSET)) $((17002 + PORT_OFFSET)) $((17003 + PORT_OFFSET))
	$((17004 + PORT_OFFSET)) $((17005 + PORT_OFFSET)) $((17006 + PORT_OFFSET)))
readonly ZK_NODES=(1 2 3)
readonly CLUSTER_WAIT=30 # seconds
readonly ZK_WAIT=40      # seconds
readonly STOP_GRACE=5    # seconds between SIGTERM and SIGKILL

say() { printf '[servers] %s\n' "$*" >&2; }
die() {
	say "ERROR: $*"
	exit 1
}

now_ms() { date +%s%3N; }

# --- process helpers -------------------------------------------------------------------

# proc_state PID: prints the one-letter state, or nothing if the process is gone.
proc_state() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) } # the command name may contain spaces and parentheses
	printf '%s' "${stat%% *}"
}

# proc_starttime PID: field 22 of /proc/PID/stat (clock ticks after boot).
proc_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	# After the command name, field 3 (state) is the first word; starttime is field 22.
	local -a f
	read -r -a f <<<"$stat"
	printf '%s' "${f[19]:-}"
}

# alive PID: running, sleeping or stopped; a zombie (Z) or dead (X) process counts as gone.
alive() {
	local s
	s=$(proc_state "$1")
	[[ -n $s && $s != Z && $s != X ]]
}

# ours PIDFILE: true when the PID recorded in PIDFILE is alive and still the process we
# started: same start time (when recorded) and a command line of redis-server or java.
ours() {
	local pidfile=$1 pid want have cmd
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ && $pid -gt 1 ]] || return 1
	alive "$pid" || return 1
	if [[ -f ${pidfile%.pid}.start ]]; then
		want=$(cat "${pidfile%.pid}.start" 2>/dev/null)
		have=$(proc_starttime "$pid")
		[[ -n $want && $want == "$have" ]] || return 1
	fi
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	case $(basename "$pidfile") in
	redis-*) [[ $cmd =~ ^([^[:space:]]*/)?redis-server[[:space:]] ]] ;;
	zk-*) [[ $cmd =~ ^([^[:space:]]*/)?java[[:space:]] && $cmd == *QuorumPeerMain* ]] ;;
	*) return 1 ;;
	esac
}

# launch NAME CWD LOG CMD...: start CMD in its own session with all output to LOG, and
# record its PID and start time in $PIDS/NAME.pid / NAME.start.
launch() {
	local name=$1 cwd=$2 log=$3
	shift 3
	(cd "$cwd" && exec setsid "$@" </dev/null >>"$log" 2>&1) &
	local pid=$!
	# The start time is set at fork and survives exec, so it can be read right away.
	proc_starttime "$pid" >"$PIDS/$name.start.tmp"
	mv "$PIDS/$name.start.tmp" "$PIDS/$name.start"
	echo "$pid" >"$PIDS/$name.pid.tmp"
	mv "$PIDS/$name.pid.tmp" "$PIDS/$name.pid"
	# Return once the child has exec'd the server (its command line is no longer bash or
	# setsid), so that checks on the command line never see the short-lived stages.
	local prog cmd i
	prog=$(basename "$1")
	for ((i = 0; i < 200; i++)); do
		cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || break
		[[ $cmd =~ ^([^[:space:]]*/)?$prog[[:space:]] ]] && break
		sleep 0.01
	done
}

# --- ports -----------------------------------------------------------------------------

# port_busy PORT: true if something listens on PORT (any address).
port_busy() {
	local port=$1
	if command -v ss >/dev/null 2>&1; then
		[[ -n $(ss -Hltn "sport = :$port" 2>/dev/null) ]]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
	fi
}

check_ports_free() {
	local busy=() p
	for p in "$@"; do
		if port_busy "$p"; then busy+=("$p"); fi
	done
	if ((${#busy[@]})); then
		say "ERROR: port(s) already in use: ${busy[*]}"
		if command -v ss >/dev/null 2>&1; then
			for p in "${busy[@]}"; do ss -Hltnp "sport = :$p" >&2 || true; done
		fi
		say "refusing to start; free the port(s) (this script never kills what it did not start)"
		return 1
	fi
}

zk_client_port() { echo $((12180 + PORT_OFFSET + $1)); }
zk_quorum_port() { echo $((12887 + PORT_OFFSET + $1)); }
zk_election_port() { echo $((13887 + PORT_OFFSET + $1)); }

all_ports() {
	local p n
	echo "$REDIS_PORT"
	for p in "${CLUSTER_PORTS[@]}"; do echo "$p" $((p + 10000)); done
	for n in "${ZK_NODES[@]}"; do
		echo "$(zk_client_port "$n")" "$(zk_quorum_port "$n")" "$(zk_election_port "$n")"
	done
}

# --- dependencies ----------------------------------------------------------------------

JAVA_DIR=/usr/share/java

zk_classpath() {
	# zookeeper.jar's manifest Class-Path pulls in netty, jetty, commons-*, metrics, snappy.
	local cp="$JAVA_DIR/zookeeper.jar:$JAVA_DIR/zookeeper-jute.jar:$JAVA_DIR/slf4j-api.jar"
	if [[ -f $JAVA_DIR/slf4j-simple.jar ]]; then
		cp+=":$JAVA_DIR/slf4j-simple.jar"
	elif [[ -f $JAVA_DIR/slf4j-nop.jar ]]; then
		cp+=":$JAVA_DIR/slf4j-nop.jar"
	fi
	printf '%s' "$cp"
}

check_deps() {
	local missing=()
	command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
	command -v redis-cli >/dev/null 2>&1 || missing+=(redis-cli)
	command -v java >/dev/null 2>&1 || missing+=(java)
	local j
	for j in zookeeper.jar zookeeper-jute.jar slf4j-api.jar; do
		[[ -f $JAVA_DIR/$j ]] || missing+=("$JAVA_DIR/$j")
	done
	if ((${#missing[@]})); then
		die "missing: ${missing[*]} (apt-get install -y redis-server redis-tools zookeeper; scripts/test.sh does this)"
	fi
}

# --- redis -----------------------------------------------------------------------------

redis_start() { # NAME PORT DIR extra-args...
	local name=$1 port=$2 dir=$3
	shift 3
	mkdir -p "$dir"
	launch "$name" "$dir" "$LOGS/$name.log" \
		redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" \
		--save "" --appendonly no --daemonize no "$@"
}

redis_wait_ping() { # PORT SECONDS
	local port=$1 deadline=$(($(now_ms) + $2 * 1000))
	until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; do
		if (($(now_ms) > deadline)); then
			say "redis on port $port does not answer PING after $2 s; log:"
			tail -n 20 "$LOGS/redis-$port.log" >&2
			return 1
		fi
		if ! ours "$PIDS/redis-$port.pid"; then
			say "redis on port $port exited; log:"
			tail -n 20 "$LOGS/redis-$port.log" >&2
			return 1
		fi
		sleep 0.05
	done
}

# cluster_ready: every node reports cluster_state:ok and knows all 6 nodes, 3 masters
# serve slots, and every replica's link to its master is up.
cluster_ready() {
	local p info repl masters=0 replicas=0
	for p in "${CLUSTER_PORTS[@]}"; do
		info=$(redis-cli -p "$p" cluster info 2>/dev/null) || return 1
		[[ $info == *cluster_state:ok* && $info == *cluster_known_nodes:6* ]] || return 1
		repl=$(redis-cli -p "$p" info replication 2>/dev/null) || return 1
		if [[ $repl == *role:master* ]]; then
			masters=$((masters + 1))
		elif [[ $repl == *role:slave* && $repl == *master_link_status:up* ]]; then
			replicas=$((replicas + 1))
		else
			return 1
		fi
	done
	((masters == 3 && replicas == 3))
}

start_redis_group() {
	local t0 p addrs=()
	t0=$(now_ms)
	redis_start "redis-$REDIS_PORT" "$REDIS_PORT" "$DIR/redis/$REDIS_PORT" || return 1
	for p in "${CLUSTER_PORTS[@]}"; do
		redis_start "redis-$p" "$p" "$DIR/cluster/$p" \
			--cluster-enabled yes --cluster-config-file "nodes-$p.conf" \
			--cluster-announce-ip 127.0.0.1 --repl-diskless-sync-delay 0 \
			--enable-debug-command local || return 1
		addrs+=("127.0.0.1:$p")
	done
	redis_wait_ping "$REDIS_PORT" 10 || return 1
	for p in "${CLUSTER_PORTS[@]}"; do redis_wait_ping "$p" 10 || return 1; done

	if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
		</dev/null >"$LOGS/cluster-create.log" 2>&1; then
		say "redis-cli --cluster create failed:"
		tail -n 30 "$LOGS/cluster-create.log" >&2
		return 1
	fi

	local deadline=$(($(now_ms) + CLUSTER_WAIT * 1000))
	until cluster_ready; do
		if (($(now_ms) > deadline)); then
			say "redis cluster not ready after ${CLUSTER_WAIT} s:"
			for p in "${CLUSTER_PORTS[@]}"; do
				printf '  %s: %s %s\n' "$p" \
					"$(redis-cli -p "$p" cluster info 2>&1 | tr -d '\r' | grep -E '^cluster_(state|known_nodes)' | tr '\n' ' ')" \
					"$(redis-cli -p "$p" info replication 2>&1 | tr -d '\r' | grep -E '^(role|master_link_status)' | tr '\n' ' ')" >&2
			done
			return 1
		fi
		sleep 0.1
	done
	# All nodes must also agree on the slot map (no "Nodes don't agree" from --cluster check).
	until redis-cli --cluster check "127.0.0.1:${CLUSTER_PORTS[0]}" 2>&1 | grep -q 'All nodes agree about slots configuration'; do
		if (($(now_ms) > deadline)); then
			say "redis cluster nodes do not agree about the slot configuration:"
			redis-cli --cluster check "127.0.0.1:${CLUSTER_PORTS[0]}" >&2 2>&1
			return 1
		fi
		sleep 0.1
	done
	say "redis standalone :$REDIS_PORT and cluster :${CLUSTER_PORTS[0]}-${CLUSTER_PORTS[5]} ready in $(($(now_ms) - t0)) ms"
}

# --- zookeeper -------------------------------------------------------------------------

zk_write_config() { # N
	local n=$1 m dir="$DIR/zk/$1"
	mkdir -p "$dir/data"
	echo "$n" >"$dir/data/myid"
	{
		echo "tickTime=1000"
		echo "initLimit=10"
		echo "syncLimit=5"
		echo "dataDir=$dir/data"
		echo "clientPort=$(zk_client_port "$n")"
		echo "clientPortAddress=127.0.0.1"
		echo "maxClientCnxns=0"
		echo "admin.enableServer=false"
		echo "4lw.commands.whitelist=ruok,srvr,mntr,stat"
		echo "forceSync=no"
		for m in "${ZK_NODES[@]}"; do
			echo "server.$m=127.0.0.1:$(zk_quorum_port "$m"):$(zk_election_port "$m")"
		done
	} >"$dir/zoo.cfg"
}

zk_launch() { # N
	local n=$1 dir="$DIR/zk/$1"
	launch "zk-$n" "$dir" "$LOGS/zk-$n.log" \
		java -Xmx128m -Xms32m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-Djava.net.preferIPv4Stack=true -Dzookeeper.preAllocSize=4096 \
		-Dorg.slf4j.simpleLogger.showDateTime=true \
		-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \
		-cp "$(zk_classpath)" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg"
}

# zk_cmd PORT CMD: send a four-letter word with bash /dev/tcp, print the answer.
zk_cmd() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1; printf %s "$2" >&3; cat <&3' \
		_ "$1" "$2" 2>/dev/null
}

zk_mode() { # N -> leader|follower|standalone|""
	zk_cmd "$(zk_client_port "$1")" srvr | sed -n 's/^Mode: *//p' | tr -d '\r'
}

zk_fail_logs() {
	local n
	for n in "$@"; do
		say "--- tail of $LOGS/zk-$n.log"
		tail -n 15 "$LOGS/zk-$n.log" >&2
	done
}

start_zk_group() {
	local t0 n
	t0=$(now_ms)
	for n in "${ZK_NODES[@]}"; do zk_write_config "$n" || return 1; done
	for n in "${ZK_NODES[@]}"; do zk_launch "$n" || return 1; done
	local deadline=$((t0 + ZK_WAIT * 1000)) modes leaders
	while :; do
		modes=() leaders=0
		local ok=1
		for n in "${ZK_NODES[@]}"; do
			if ! ours "$PIDS/zk-$n.pid"; then
				say "zookeeper node $n exited"
				zk_fail_logs "$n"
				return 1
			fi
			local m
			m=$(zk_mode "$n")
			modes+=("$n=${m:-?}")
			case $m in
			leader) leaders=$((leaders + 1)) ;;
			follower) ;;
			*) ok=0 ;;
			esac
		done
		if ((ok && leaders == 1)); then break; fi
		if (($(now_ms) > deadline)); then
			say "zookeeper ensemble not ready after ${ZK_WAIT} s: ${modes[*]}"
			zk_fail_logs "${ZK_NODES[@]}"
			return 1
		fi
		sleep 0.2
	done
	say "zookeeper ensemble :$(zk_client_port 1)-$(zk_client_port 3) ready in $(($(now_ms) - t0)) ms (${modes[*]})"
}

# --- commands --------------------------------------------------------------------------

set_dir() {
	[[ -n ${1:-} ]] || die "missing DIR argument"
	mkdir -p "$1" || die "cannot create $1"
	DIR=$(cd "$1" && pwd -P) || die "cannot enter $1"
	[[ $DIR != / ]] || die "refusing to use / as DIR"
	PIDS=$DIR/pids
	LOGS=$DIR/logs
}

cmd_stop() {
	local t0 f pid name
	t0=$(now_ms)
	shopt -s nullglob
	local -a files=("$PIDS"/*.pid)
	((${#files[@]})) || return 0 # nothing recorded: nothing to do
	local -a pids=() names=()
	for f in "${files[@]}"; do
		name=$(basename "$f" .pid)
		pid=$(cat "$f" 2>/dev/null)
		if ours "$f"; then
			kill -CONT "$pid" 2>/dev/null
			kill -TERM "$pid" 2>/dev/null
			pids+=("$pid")
			names+=("$name")
		elif [[ -n $pid ]] && alive "$pid"; then
			say "not signalling pid $pid of $name: it is no longer the process we started"
		fi
	done
	local deadline=$(($(now_ms) + STOP_GRACE * 1000)) i left
	while :; do
		left=0
		for i in "${!pids[@]}"; do
			if ours "$PIDS/${names[$i]}.pid"; then left=$((left + 1)); fi
		done
		((left == 0)) && break
		if (($(now_ms) > deadline)); then
			for i in "${!pids[@]}"; do
				if ours "$PIDS/${names[$i]}.pid"; then
					say "${names[$i]} (pid ${pids[$i]}) ignored SIGTERM for ${STOP_GRACE} s: SIGKILL"
					kill -KILL "${pids[$i]}" 2>/dev/null
				fi
			done
			local kdeadline=$(($(now_ms) + 3000))
			while (($(now_ms) < kdeadline)); do
				left=0
				for i in "${!pids[@]}"; do
					if ours "$PIDS/${names[$i]}.pid"; then left=$((left + 1)); fi
				done
				((left == 0)) && break
				sleep 0.05
			done
			break
		fi
		sleep 0.05
	done
	rm -f "$PIDS"/*.pid "$PIDS"/*.start
	if ((left)); then
		say "WARNING: $left process(es) still alive after SIGKILL"
		return 1
	fi
	say "stopped ${#pids[@]} process(es) in $(($(now_ms) - t0)) ms"
}

cmd_start() {
	check_deps
	local t0
	t0=$(now_ms)
	if [[ -d $PIDS ]]; then cmd_stop || die "could not stop the old servers under $DIR"; fi
	rm -rf "$DIR/redis" "$DIR/cluster" "$DIR/zk" "$DIR/logs" "$DIR/pids" "$DIR/env"
	# shellcheck disable=SC2046
	check_ports_free $(all_ports) || exit 1
	mkdir -p "$PIDS" "$LOGS"
	echo "$PORT_OFFSET" >"$DIR/port-offset"

	start_redis_group &
	local rpid=$!
	start_zk_group &
	local zpid=$!
	# Interrupted (Ctrl-C, or the caller's cleanup): stop the starters and what they started.
	# shellcheck disable=SC2064
	trap "trap - INT TERM; kill -TERM $rpid $zpid 2>/dev/null; wait; cmd_stop; exit 130" INT TERM
	local rrc=0 zrc=0
	wait "$rpid" || rrc=$?
	wait "$zpid" || zrc=$?
	if ((rrc || zrc)); then
		say "start failed (redis=$rrc zookeeper=$zrc); logs in $LOGS; stopping what was started"
		cmd_stop || true
		exit 1
	fi
	trap - INT TERM

	local cluster zks p n
	cluster=$(for p in "${CLUSTER_PORTS[@]}"; do printf '127.0.0.1:%s,' "$p"; done)
	zks=$(for n in "${ZK_NODES[@]}"; do printf '127.0.0.1:%s,' "$(zk_client_port "$n")"; done)
	{
		echo "export RMQ_REDIS_ADDR=127.0.0.1:$REDIS_PORT"
		echo "export RMQ_CLUSTER_ADDRS=${cluster%,}"
		echo "export RMQ_ZK_SERVERS=${zks%,}"
		printf 'export RMQ_SERVERS_DIR=%q\n' "$DIR"
	} >"$DIR/env.tmp"
	printf 'export RMQ_SERVERS_SCRIPT=%q\n' "$SCRIPT" >>"$DIR/env.tmp"
	mv "$DIR/env.tmp" "$DIR/env"
	say "all servers ready in $(($(now_ms) - t0)) ms; source $DIR/env"
}

cmd_restart_zk() {
	local n=${1:-}
	[[ $n =~ ^[1-3]$ ]] || die "restart-zk: N must be 1, 2 or 3 (got '${n}')"
	[[ -f $DIR/zk/$n/zoo.cfg ]] || die "restart-zk: $DIR/zk/$n/zoo.cfg not found (was start run?)"
	check_deps
	if ours "$PIDS/zk-$n.pid"; then
		die "zookeeper node $n is still running (pid $(cat "$PIDS/zk-$n.pid")); kill it first"
	fi
	check_ports_free "$(zk_client_port "$n")" "$(zk_election_port "$n")" || exit 1
	mkdir -p "$PIDS" "$LOGS"
	local t0
	t0=$(now_ms)
	echo "===== restart $(date '+%F %T') =====" >>"$LOGS/zk-$n.log"
	zk_launch "$n"
	local deadline=$((t0 + ZK_WAIT * 1000)) m
	while :; do
		if ! ours "$PIDS/zk-$n.pid"; then
			say "zookeeper node $n exited after restart"
			zk_fail_logs "$n"
			exit 1
		fi
		m=$(zk_mode "$n")
		[[ $m == leader || $m == follower ]] && break
		if (($(now_ms) > deadline)); then
			say "zookeeper node $n not serving ${ZK_WAIT} s after restart (mode '${m}')"
			zk_fail_logs "$n"
			exit 1
		fi
		sleep 0.1
	done
	say "zookeeper node $n restarted as $m (pid $(cat "$PIDS/zk-$n.pid")) in $(($(now_ms) - t0)) ms"
}

cmd_status() {
	local f name
	shopt -s nullglob
	for f in "$PIDS"/*.pid; do
		name=$(basename "$f" .pid)
		if ours "$f"; then
			printf '%-12s pid %-8s running (state %s)\n' "$name" "$(cat "$f")" "$(proc_state "$(cat "$f")")"
		else
			printf '%-12s pid %-8s not running\n' "$name" "$(cat "$f")"
		fi
	done
	local n
	for n in "${ZK_NODES[@]}"; do
		printf 'zk-%s mode: %s\n' "$n" "$(zk_mode "$n")"
	done
}

usage() {
	sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

main() {
	local cmd=${1:-}
	case $cmd in
	start)
		[[ $# -eq 2 ]] || usage
		set_dir "$2"
		cmd_start
		;;
	stop)
		[[ $# -eq 2 ]] || usage
		[[ -d $2 ]] || {
			say "$2 does not exist: nothing to stop"
			exit 0
		}
		set_dir "$2"
		cmd_stop
		;;
	restart-zk)
		[[ $# -eq 3 ]] || usage
		set_dir "$2"
		cmd_restart_zk "$3"
		;;
	status)
		[[ $# -eq 2 ]] || usage
		set_dir "$2"
		cmd_status
		;;
	*) usage ;;
	esac
}

main "$@"
