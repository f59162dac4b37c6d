# shellcheck shell=bash
# Sourced by scripts/bench.sh: start and stop the benchmark's own private Redis Cluster,
# six redis-server processes on 127.0.0.1 (3 masters + 3 replicas).
#
#   cluster_start WORK BASE   nodes on ports BASE..BASE+5 (cluster bus BASE+10000..), each in
#                             WORK/cluster/PORT; sets CLUSTER_ADDRS (comma list) and records
#                             every PID it starts in CLUSTER_PIDS
#   cluster_stop              stops exactly the PIDs in CLUSTER_PIDS (SIGCONT, SIGTERM, 5 s
#                             grace, SIGKILL); safe to call twice
#
# Needs say, die and alive from scripts/bench.sh.

CLUSTER_PIDS=()
CLUSTER_ADDRS=""
readonly CLUSTER_NODES=6
readonly CLUSTER_WAIT=30 # seconds for cluster_state:ok and synced replicas

# port_busy PORT: something accepts connections on 127.0.0.1:PORT.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# node_ready PORT: the node says cluster_state:ok and, as a master, has its replica
# online; as a replica, its link to the master is up and the first sync done.
node_ready() {
	local cli=(redis-cli -h 127.0.0.1 -p "$1") repl
	[[ $("${cli[@]}" cluster info 2>/dev/null | tr -d '\r') == *cluster_state:ok* ]] || return 1
	repl=$("${cli[@]}" info replication 2>/dev/null | tr -d '\r')
	case $repl in
	*role:master*) [[ $repl == *connected_slaves:1* && $repl == *slave0:*state=online* ]] ;;
	*role:slave*) [[ $repl == *master_link_status:up* && $repl == *master_sync_in_progress:0* ]] ;;
	*) return 1 ;;
	esac
}

cluster_start() {
	local work=$1 base=$2 port dir i addrs=()
	for ((i = 0; i < CLUSTER_NODES; i++)); do
		port=$((base + i))
		port_busy "$port" && die "port $port is in use; pick another --cluster-port"
		port_busy $((port + 10000)) && die "cluster bus port $((port + 10000)) is in use; pick another --cluster-port"
	done
	for ((i = 0; i < CLUSTER_NODES; i++)); do
		port=$((base + i))
		dir="$work/cluster/$port"
		rm -rf "$dir" && mkdir -p "$dir" # --cluster create refuses a node with an old nodes.conf
		redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize no \
			--logfile "$dir/redis.log" --cluster-enabled yes --cluster-config-file nodes.conf \
			--cluster-node-timeout 2000 --cluster-announce-ip 127.0.0.1 \
			--save "" --appendonly no --repl-diskless-sync-delay 0 &
		CLUSTER_PIDS+=($!)
		addrs+=("127.0.0.1:$port")
	done
	for ((i = 0; i < CLUSTER_NODES; i++)); do
		port=$((base + i))
		for _ in $(seq 1 100); do
			redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
			alive "${CLUSTER_PIDS[i]}" || die "cluster node $port exited: $(tail -5 "$work/cluster/$port/redis.log")"
			sleep 0.05
		done
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes \
		>"$work/cluster/create.log" 2>&1 || die "redis-cli --cluster create failed: $(tail -5 "$work/cluster/create.log")"
	local deadline=$((SECONDS + CLUSTER_WAIT)) ready
	while :; do
		ready=0
		for ((i = 0; i < CLUSTER_NODES; i++)); do
			node_ready $((base + i)) && ready=$((ready + 1))
		done
		((ready == CLUSTER_NODES)) && break
		((SECONDS < deadline)) || die "cluster not ready after ${CLUSTER_WAIT} s ($ready of $CLUSTER_NODES nodes)"
		sleep 0.2
	done
	CLUSTER_ADDRS=$(
		IFS=,
		printf '%s' "${addrs[*]}"
	)
	say "redis cluster pids ${CLUSTER_PIDS[*]} on 127.0.0.1:$base..$((base + CLUSTER_NODES - 1)) (3 masters + 3 replicas)"
}

cluster_stop() {
	local pids=("${CLUSTER_PIDS[@]}") pid
	CLUSTER_PIDS=()
	((${#pids[@]} > 0)) || return 0
	for pid in "${pids[@]}"; do
		kill -CONT "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for _ in $(seq 1 50); do
		local left=0
		for pid in "${pids[@]}"; do
			alive "$pid" && left=1
		done
		((left)) || break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		if alive "$pid"; then
			say "cluster node $pid did not stop in 5 s; SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	say "stopped the redis cluster (pids ${pids[*]})"
}
