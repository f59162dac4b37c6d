package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// header prints what was measured, where, and with which versions.
func (r *report) header(ctx context.Context, e *env, selected []*scenario) error {
	version, persistence, err := redisVersion(ctx, e.admin)
	if err != nil {
		return err
	}
	commit := e.commit
	if commit == "" {
		commit = "unknown (run through scripts/bench.sh)"
	}
	keys := make([]string, len(selected))
	for i, s := range selected {
		keys[i] = s.key
	}
	r.printf("# RMQ benchmark\n\n")
	r.printf("%s — %d round(s), n = %s messages per run, scenarios: %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), e.rounds, thousands(int64(e.n)), strings.Join(keys, ", "))
	t := newTable("", "")
	t.add("Machine", fmt.Sprintf("%d CPUs (nproc), %s, %s RAM, load average at report time %s",
		runtime.NumCPU(), cpuModel(), memTotal(), loadAvg()))
	t.add("Command", "`rmqbench "+strings.Join(os.Args[1:], " ")+"` (scripts/bench.sh)")
	t.add("Go", runtime.Version())
	t.add("redis-server", version+", loopback, one server for every system; "+persistence)
	if e.cluster != nil {
		t.add("Redis Cluster", e.cluster.describe(ctx)+" (cluster scenario only)")
	}
	t.add("RMQ", "github.com/rmq-go/rmq @ "+commit)
	t.add("asynq", "github.com/hibiken/asynq "+depVersion("github.com/hibiken/asynq"))
	t.add("adjust/rmq", "github.com/adjust/rmq/v5 "+depVersion("github.com/adjust/rmq/v5"))
	t.add("go-redis", "github.com/redis/go-redis/v9 "+depVersion("github.com/redis/go-redis/v9")+" (all systems; PoolSize 256)")
	t.write(r.w)
	r.printf("How to read this: every scenario runs each system once per round, interleaved and in a rotating order, " +
		"on an emptied Redis (FLUSHALL + MEMORY PURGE + CONFIG RESETSTAT before each run). The machine is shared and noisy, " +
		"so absolute rates drift between rounds; the **per-round ratios** (RMQ ÷ peer, from runs minutes apart) " +
		"are the figures that count. Cells read `median (min–max)` over the rounds. Client CPU is this process's " +
		"user+sys time (getrusage) and Redis CPU the server's used_cpu_user+used_cpu_sys delta (INFO cpu), " +
		"both in CPU-seconds per 100k messages over the timed section. Payloads are unique 64-byte strings " +
		"unless a table says otherwise.\n\n")
	return nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err == nil {
				return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	return "unknown"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// depVersion returns the version of module path in this binary's build info.
func depVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path
			}
			return d.Version
		}
	}
	return "unknown"
}
